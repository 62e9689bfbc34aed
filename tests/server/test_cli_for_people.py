"""The CLI for a person (issue 38): positional paths and queries, day words and a default window, names beside
ids, readable output, "did you mean", the address tried, and a progress bar for `index sync --wait`.

In-process against the session's emulator, except the progress bar, which needs a process on a pseudo-terminal.
"""
from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from mcp_nextcloud.cli.dates import resolve
from mcp_nextcloud.cli.errors import base_url
from tests.helpers import cli_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli(person_cli: Any) -> Any:
    return person_cli


# -- positional paths and queries ----------------------------------------------------------------------------

def test_a_file_command_takes_its_path_first_or_by_flag(cli: Any) -> None:
    by_place = cli("files", "read", "/Documents/manual.md", "--limit", "40", "--json")
    by_flag = cli("files", "read", "--path", "/Documents/manual.md", "--limit", "40", "--json")
    assert by_place[0] == by_flag[0] == 0
    assert json.loads(by_place[1])["content"] == json.loads(by_flag[1])["content"] != ""
    code, out, _ = cli("files", "history", "/Documents/manual.md", "--json")
    assert code == 0 and json.loads(out)["path"] == "/Documents/manual.md"
    code, _, err = cli("files", "read", "/Documents/manual.md", "--path", "/Documents/other.md")
    assert code == 2 and "give one" in err


def test_a_query_is_taken_first_or_by_flag(cli: Any) -> None:
    first = cli("contacts", "search", "bob", "--json")
    flagged = cli("contacts", "search", "--query", "bob", "--json")
    assert first[0] == flagged[0] == 0 and json.loads(first[1])["items"] == json.loads(flagged[1])["items"] != []


# -- dates -----------------------------------------------------------------------------------------------------

def test_day_words_resolve_to_dates() -> None:
    today = dt.date.today()
    assert resolve("today") == today.isoformat()
    assert resolve("Tomorrow") == (today + dt.timedelta(days=1)).isoformat()
    assert resolve("yesterday 14:00 Europe/Paris") == f"{today - dt.timedelta(days=1)}T14:00 Europe/Paris"
    assert resolve("2026-12-24") == "2026-12-24" and resolve("todayish") == "todayish"


def test_calendar_list_defaults_to_a_week_from_today_and_takes_day_words(cli: Any) -> None:
    today = dt.date.today()
    code, out, _ = cli("calendar", "list", "--json")
    assert code == 0
    answer = json.loads(out)
    assert answer["from"].startswith(today.isoformat())
    assert answer["to"].startswith((today + dt.timedelta(days=7)).isoformat())
    code, out, _ = cli("calendar", "list", "--start", "tomorrow", "--json")
    assert code == 0 and json.loads(out)["from"].startswith((today + dt.timedelta(days=1)).isoformat())


# -- readable output ---------------------------------------------------------------------------------------------

def test_names_stand_beside_ids(cli: Any) -> None:
    code, out, _ = cli("deck", "list")
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split()[:3] == ["card", "board", "stack"]
    assert any("Product Launch (1)" in row and "To do (1)" in row for row in rows)
    code, out, _ = cli("calendar", "list", "--start", "2026-12-01", "--end", "2026-12-08")
    assert code == 0 and "Work (work)" in out
    code, out, _ = cli("deck", "list", "--json")     # scripts keep the ids as they were
    assert json.loads(out)["items"][0]["board"] == 1


@pytest.mark.parametrize("argv", [["whoami"], ["talk", "rooms"], ["tasks", "list"], ["deck", "list"],
                                  ["files", "read", "/Documents/manual.pdf", "--find", "install"],
                                  ["files", "grep", "install", "--limit", "2"], ["mail", "search", "--limit", "2"],
                                  ["calendar", "list", "--start", "2026-12-01"], ["files", "history",
                                                                                 "/Documents/manual.md"]])
def test_the_readable_view_holds_no_json(cli: Any, argv: list[str]) -> None:
    code, out, err = cli(*argv)
    assert code == 0 and out.strip(), err
    for line in out.splitlines():
        assert not re.search(r'[\[{]"|\[\{|": ?[\[{"]', line), line


# -- did you mean ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, guess", [(["grpe", "install"], "'grep'"), (["files", "serch"], "'search'"),
                                         (["files", "read", "--pth", "/x"], "'--path'"),
                                         # the words people use for an action (issue 50)
                                         (["tasks", "add"], "'create'"), (["tasks", "new"], "'create'"),
                                         (["files", "rm", "/x"], "'delete'"), (["token", "rm"], "'remove'"),
                                         (["talk", "send"], "'post'"), (["files", "cat"], "'read'"),
                                         (["deck", "add"], "'create-board' or 'create-card' or 'create-cards'")])
def test_a_typo_gets_the_nearest_word(cli: Any, argv: list[str], guess: str) -> None:
    code, out, err = cli(*argv)
    assert code == 2 and out == ""
    assert f"Did you mean {guess}?" in err and "choose from" not in err


def test_help_names_the_nearest_command(cli: Any) -> None:
    code, out, err = cli("help", "files", "serch")
    assert code == 2 and out == "" and "Did you mean 'files search'" in err


def test_nothing_near_gets_no_guess(cli: Any) -> None:
    code, _, err = cli("zzzzqq")
    assert code == 2 and "Did you mean" not in err and "unknown command 'zzzzqq'" in err and "--help" in err


# -- the address tried ---------------------------------------------------------------------------------------

def test_an_unreachable_server_is_named_without_its_credentials(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket_closed() as port:
        monkeypatch.setenv("NEXTCLOUD_URL", f"http://someone:hunter2@127.0.0.1:{port}/nc/?token=x")
        code, out, err = cli("whoami", "--timeout", "5")
        assert code == 1 and out == ""
        assert f"Tried http://127.0.0.1:{port}/nc." in err
        assert "hunter2" not in err and "someone" not in err and "token" not in err
        code, out, _ = cli("whoami", "--timeout", "5", "--json")
        assert f"Tried http://127.0.0.1:{port}/nc." in json.loads(out)["error"]["cause"]


def test_base_url_drops_credentials() -> None:
    assert base_url("https://u:p@cloud.example.com:8443/nextcloud/?a=b#c") == "https://cloud.example.com:8443/nextcloud"
    assert base_url("https://[::1]/") == "https://[::1]"


class socket_closed:
    """A port on 127.0.0.1 that nothing listens on."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        return None


# -- progress --------------------------------------------------------------------------------------------------

def _on_terminal(argv: list[str], env: dict[str, str], timeout: float = 180) -> tuple[int, str]:
    """Run the CLI with its three streams on a pseudo-terminal 100 columns wide: (exit code, all it drew)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", *argv], cwd=ROOT, env=env,
                            stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    drawn, deadline = b"", time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:     # the process closed the terminal
                    break
                if not chunk:
                    break
                drawn += chunk
            elif proc.poll() is not None:
                break
        return proc.wait(timeout=30), drawn.decode("utf-8", "replace")
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()


@pytest.fixture(params=["0", "1"], ids=["in-process", "service"])
def sync_env(request: pytest.FixtureRequest, world: Any, tmp_path: Path) -> Iterator[dict[str, str]]:
    runtime = Path(tempfile.mkdtemp(prefix="bar", dir="/tmp"))   # short: a Unix socket path holds ~100 bytes
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_", "XDG_"))}
    env.update(cli_env(world, tmp_path, tmp_path / "fresh.db"), PYTHONPATH=str(ROOT), XDG_RUNTIME_DIR=str(runtime),
               MCP_NEXTCLOUD_SERVICE=request.param, MCP_NEXTCLOUD_SERVICE_IDLE_S="30", HOME=str(tmp_path))
    yield env
    if request.param == "1":
        subprocess.run([sys.executable, "-m", "mcp_nextcloud", "service", "stop", "--all"], cwd=ROOT,
                       env={**env, "MCP_NEXTCLOUD_SERVICE": "0"}, capture_output=True, timeout=60)
    shutil.rmtree(runtime, ignore_errors=True)


def test_index_sync_wait_draws_progress_on_a_terminal(sync_env: dict[str, str]) -> None:
    code, drawn = _on_terminal(["index", "sync", "--wait", "150"], sync_env)
    assert code == 0, drawn
    bars = re.findall(r"syncing:.*?(\d+)/(\d+) \[", drawn)
    assert bars, drawn
    done, total = map(int, bars[-1])
    assert done == total >= 10                      # the last bar: every file known, every file done
    assert re.search(r"\d+(\.\d+)?[kM]?B downloaded", drawn), drawn    # and the bytes downloaded
    assert re.search(r"job \w+: succeeded \((\d+)/\1 files\)", drawn), drawn


def test_index_sync_wait_draws_nothing_off_a_terminal(sync_env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "index", "sync", "--wait", "150"], cwd=ROOT,
                          env=sync_env, capture_output=True, text=True, timeout=200)
    assert done.returncode == 0, done.stderr
    assert "syncing" not in done.stderr + done.stdout and "succeeded" in done.stdout
