"""The CLI's quiet success, worded parser errors and private files (issue 22, item 9).

- A dry run (and a batch's validation run) stops at its first write on purpose: no "internal fault"
  traceback on stderr, nothing in faults.log, a real fault still logged.
- argparse's usage errors are misuse like any other: with --json, {"error": {...}} on stdout, exit 2.
- The data folder, batches.sqlite and artifacts (a document's text) are created 0700 / 0600 whatever
  the umask.
"""
from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from mcp_nextcloud.fixtures.emulator.server import Emulator
from mcp_nextcloud.server import faultlog
from tests.server.test_cli_conventions import ROOT, WRITE_ARGS, _env, _writes


@pytest.fixture
def private(tmp_path: Path) -> Iterator[tuple[Emulator, dict[str, str]]]:
    """A private emulator and a CLI environment whose every folder is below tmp_path, not yet created."""
    with Emulator() as emu:
        env = {**os.environ, **_env(emu, tmp_path), "PYTHONPATH": str(ROOT)}
        for key in ("MCP_NEXTCLOUD_JOURNAL", "MCP_NEXTCLOUD_INDEX"):
            env.pop(key, None)                                 # the default places, under XDG_DATA_HOME
        env["MCP_NEXTCLOUD_ARTIFACTS"] = str(tmp_path / "cache" / "mcp-nextcloud" / "artifacts")
        env["MCP_NEXTCLOUD_TELEMETRY"] = str(tmp_path / "state" / "calls.sqlite")
        yield emu, env


def _run(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_nextcloud", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, preexec_fn=lambda: os.umask(0o022))


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- a dry run's stop is not a fault ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["deck create-card", "files write", "calendar create", "meet schedule"])
def test_a_dry_run_in_its_own_process_has_an_empty_stderr_and_logs_no_fault(name: str, private: Any,
                                                                           tmp_path: Path) -> None:
    emu, env = private
    done = _run(env, *name.split(), *WRITE_ARGS[name], "--dry-run", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["dryRun"] is True
    assert done.stderr == ""                            # was 7-40 kB of "internal fault ... WriteBlocked"
    assert _writes(emu) == 0
    assert not list(tmp_path.rglob("faults.log*")) or all(f.stat().st_size == 0 for f in tmp_path.rglob("faults.log*"))


def test_a_confirmed_batch_validates_then_writes_without_a_traceback(private: Any, tmp_path: Path) -> None:
    emu, env = private
    batch = tmp_path / "cards.json"
    batch.write_text(json.dumps({"board": "Product Launch", "cards": [
        {"id": "a", "stack": "To do", "title": "Hygiene A"}, {"id": "b", "stack": "To do", "title": "Hygiene B"}]}))
    done = _run(env, "deck", "create-cards", "--input-file", str(batch), "--confirm", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    posts = [p for m, p, _ in emu.requests if m == "POST" and p.endswith("/cards")]
    assert len(posts) == 2


def test_the_fault_log_skips_a_deliberate_stop_and_keeps_real_faults(caplog: pytest.LogCaptureFixture) -> None:
    class Stop(faultlog.CallStopped):
        pass

    def raised(exc: BaseException, cause: BaseException | None = None) -> BaseException:
        try:
            raise exc from cause
        except BaseException as caught:
            return caught

    with caplog.at_level(logging.WARNING, logger=faultlog.LOGGER.name):
        faultlog.record("files_write", raised(RuntimeError("wrapped"), raised(Stop("planned"))))
        assert caplog.records == []
        faultlog.record("files_write", raised(KeyError("bug")))
    assert len(caplog.records) == 1 and "internal fault in files_write" in caplog.records[0].getMessage()


# -- parser errors are misuse ----------------------------------------------------------------------------

@pytest.mark.parametrize("argv, needle", [
    (["files", "search", "--limit", "abc"], "invalid int value: 'abc'"),
    (["files", "search", "--no-such-option"], "unrecognized arguments: --no-such-option"),
    (["files", "search", "--limit"], "expected one argument"),
    (["grep", "--limit", "many", "quota"], "invalid int value"),
    (["no-such-command"], "unknown command 'no-such-command'"),
])
def test_a_parser_error_with_json_is_a_json_error_and_exit_2(argv: list[str], needle: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", *argv, "--json"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert set(error) == {"code", "cause", "action", "retry", "message"}
    assert needle in error["cause"] and "--help" in error["action"]
    assert error["message"] == f"{error['cause']} {error['action']}"    # the retry is said only when it helps
    assert (error["code"], error["retry"]) == ("bad_argument", False)
    assert "usage:" not in done.stdout and done.stderr == ""


def test_a_parser_error_without_json_is_argparse_usage_on_stderr() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "files", "search", "--limit", "abc"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("usage: mcp-nextcloud files search")
    assert "mcp-nextcloud files search: error: argument --limit: invalid int value: 'abc'" in done.stderr


def test_json_after_a_double_dash_is_an_argument_not_the_flag() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "files", "search", "--limit", "x", "--", "--json"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == "" and "usage:" in done.stderr


# -- private files ---------------------------------------------------------------------------------------

def test_the_data_folder_journal_and_artifacts_are_private(private: Any, tmp_path: Path) -> None:
    emu, env = private
    batch = tmp_path / "cards.json"
    batch.write_text(json.dumps({"board": 1, "cards": [{"id": "m", "stack": 1, "title": "Modes"}]}))
    made = _run(env, "deck", "create-cards", "--input-file", str(batch), "--confirm", "--json")
    assert made.returncode == 0, made.stdout + made.stderr
    data = tmp_path / "data" / "mcp-nextcloud"
    assert _mode(data) == 0o700                              # made by the journal, the first to need it
    read = _run(env, "files", "read", "--path", "/Documents/manual.pdf", "--limit", "30000", "--json")
    assert read.returncode == 0, read.stdout + read.stderr
    (artifact,) = json.loads(read.stdout)["artifacts"]
    journal = data / "batches.sqlite"
    assert journal.exists() and _mode(journal) == 0o600
    for side in data.glob("batches.sqlite-*"):
        assert _mode(side) == 0o600, side
    art = Path(artifact["path"])
    assert _mode(art) == 0o600 and _mode(art.parent) == 0o700
    assert _mode(art.parent.parent) == 0o700              # the folders made on the way are private too
    assert not list(art.parent.glob(".*.tmp"))


def test_private_folder_and_write_private_ignore_the_umask(tmp_path: Path) -> None:
    from mcp_nextcloud.indexer.store.filemodes import private_folder, write_private

    old = os.umask(0)
    try:
        folder = private_folder(tmp_path / "a" / "b")
        write_private(folder / "f.txt", b"text")
        write_private(folder / "f.txt", b"again")        # replaced, still private
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a") == 0o700 and _mode(folder) == 0o700
    assert _mode(folder / "f.txt") == 0o600 and (folder / "f.txt").read_bytes() == b"again"
    existing = tmp_path / "mine"
    existing.mkdir(mode=0o755)
    os.chmod(existing, 0o755)
    private_folder(existing)
    assert _mode(existing) == 0o755                         # a folder that exists is the person's choice
