"""The CLI's one failure renderer: the same failure has the same JSON, words and exit code from every command."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from mcp_nextcloud.nextcloud.config import ENV_CONFIG
from mcp_nextcloud.nextcloud.errors import Category, no_credentials
from mcp_nextcloud.indexer.local.desktop_config import RemotePathError
from mcp_nextcloud.indexer.store.roots import FolderOverlap
from mcp_nextcloud.indexer.store.schema import SchemaTooNew
from mcp_nextcloud.reader.document import ReaderCode, ReaderError
from mcp_nextcloud.cli.errors import EXIT_CODES, EXIT_FAILED, EXIT_USAGE, CliError, failure_of, report

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["0", "1"], ids=["in-process", "service"])
def cli_env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    """A machine with no account (no NEXTCLOUD_* variable, an empty HOME, XDG folders and config path), the CLI
    run in its own process (MCP_NEXTCLOUD_SERVICE=0) or through the index service; the service is stopped after."""
    runtime = Path(tempfile.mkdtemp(prefix="fail", dir="/tmp"))   # short: a Unix socket path holds ~100 bytes
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_", "XDG_"))}
    env.update(PYTHONPATH=str(ROOT), HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               XDG_DATA_HOME=str(tmp_path / "data"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_RUNTIME_DIR=str(runtime), MCP_NEXTCLOUD_SERVICE=request.param,
               MCP_NEXTCLOUD_SERVICE_IDLE_S="30", **{ENV_CONFIG: str(tmp_path / "none.json")})
    (tmp_path / "home").mkdir()
    yield env
    if request.param == "1":
        subprocess.run([sys.executable, "-m", "mcp_nextcloud", "service", "stop", "--all"], cwd=ROOT,
                       env={**env, "MCP_NEXTCLOUD_SERVICE": "0"}, capture_output=True, timeout=60)
    shutil.rmtree(runtime, ignore_errors=True)


def _run(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_nextcloud", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def test_missing_credentials_is_the_same_failure_from_a_tool_command_and_from_index_sync(
        tmp_path: Path, cli_env: dict[str, str]) -> None:
    """One failure, one shape: `files grep --json` (a tool command) and `index sync --json` (the indexer's
    command) give the same JSON and the same exit code (misuse: configure an account), nothing on stderr."""
    index = str(tmp_path / "index.db")
    tool = _run(cli_env, "files", "grep", "anything", "--index", index, "--json")
    sync = _run(cli_env, "index", "sync", "--index", index, "--json")
    errors = []
    for done in (tool, sync):
        assert done.returncode == EXIT_USAGE, done.stdout + done.stderr     # misuse: configure an account
        assert done.stderr == ""                                              # --json: one stream
        errors.append(json.loads(done.stdout)["error"])
    assert errors[0] == errors[1]
    error = errors[0]
    expected = no_credentials()
    assert set(error) == {"code", "cause", "action", "retry", "message"}
    assert error["code"] == expected.code.value == "no_credentials" and error["retry"] is expected.retry is False
    assert error["cause"] == expected.cause_in()
    assert error["action"].startswith("Run `mcp-nextcloud login URL`") and "NEXTCLOUD_URL" in error["action"]
    assert error["message"] == f"{error['cause']} {error['action']}"   # a person hears the retry only when it helps
    # Without --json: the same words on stderr, the same exit code, nothing on stdout.
    for argv in (("files", "grep", "anything", "--index", index), ("index", "sync", "--index", index)):
        plain = _run(cli_env, *argv)
        assert plain.returncode == EXIT_USAGE and plain.stdout == "" and error["message"] in plain.stderr


def test_grep_json_on_a_missing_index_prints_the_json_failure(tmp_path: Path, cli_env: dict[str, str]) -> None:
    missing = tmp_path / "typo.db"
    done = _run(cli_env, "grep", "anything", "--index", str(missing), "--json")
    assert done.returncode == EXIT_USAGE and done.stderr == "", done.stdout + done.stderr
    error = json.loads(done.stdout)["error"]
    assert set(error) == {"code", "cause", "action", "retry", "message"} and error["retry"] is False
    assert error["code"] == "no_index" and str(missing) in error["cause"] and "index sync" in error["action"]
    assert not missing.exists()
    # Without --json: one line on stderr, nothing on stdout.
    plain = _run(cli_env, "grep", "anything", "--index", str(missing))
    assert plain.returncode == EXIT_USAGE and plain.stdout == "" and plain.stderr.count("\n") == 1
    assert str(missing) in plain.stderr


@pytest.mark.parametrize("err, code, exit_code, retry", [
    (no_credentials(), "no_credentials", EXIT_USAGE, False),
    (CliError("--limit is 0. Give at least 1.", usage=True), "bad_argument", EXIT_USAGE, False),
    (CliError("the server is busy. Wait a moment.", status="busy", retry=True), "busy", EXIT_FAILED, True),
    (LookupError("no job with id 'x'. List them with 'mcp-nextcloud jobs list'"), "not_found", EXIT_USAGE, False),
    (OSError("disk gone"), "failed", EXIT_FAILED, False),
    # The index's own refusals: their code, not bad_argument; misuse (fix the command or the setup).
    (FolderOverlap("/a/b is inside /a, which this index already holds", "index /a again instead"),
     "folder_overlap", EXIT_USAGE, False),
    (SchemaTooNew("index schema version 9 is newer than this program knows (5)", "upgrade mcp-nextcloud"),
     "schema_too_new", EXIT_USAGE, False),
    (RemotePathError("remote path '/..' contains '.' or '..'", "give a folder path such as /Work"),
     "bad_remote_path", EXIT_USAGE, False),
    # The reader's: its code; a file it refuses is "refused" (exit 1), a cap that stopped it a fault.
    (ReaderError("encrypted PDF", "ask the owner for an unencrypted copy", code=ReaderCode.ENCRYPTED),
     "encrypted", EXIT_FAILED, False),
])
def test_every_failure_maps_to_one_shape(err: BaseException, code: str, exit_code: int, retry: bool,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    failure = failure_of(err)
    assert (failure.code, failure.exit_code, failure.retry) == (code, exit_code, retry)
    assert isinstance(failure.category, Category)       # the one table's, compared by identity
    assert (failure.category is Category.MISUSE) is (exit_code == EXIT_USAGE)
    assert report(err, True) == exit_code
    out, stderr = capsys.readouterr()
    assert json.loads(out) == {"error": failure.fields()} and stderr == ""
    assert report(err, False, "mcp-nextcloud x") == exit_code
    out, stderr = capsys.readouterr()
    assert out == "" and stderr == f"mcp-nextcloud x: {failure.words()}\n"
    assert stderr.endswith("Trying again in a moment may help.\n") is retry


def test_the_exit_codes_are_documented_in_the_root_help() -> None:
    done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "--help"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.returncode == 0 and EXIT_CODES in done.stdout
    for line in ("0    done", "1    failed", "2    misuse"):
        assert line in done.stdout


def test_an_unknown_command_named_to_manifest_or_help_is_a_json_failure(capsys: pytest.CaptureFixture[str]) -> None:
    from mcp_nextcloud.cli import main

    for argv in (["manifest", "--command", "no-such"], ["help", "no-such", "--json"]):
        assert main([*argv, "--json"] if argv[0] == "manifest" else argv) == EXIT_USAGE
        out, stderr = capsys.readouterr()
        error = json.loads(out)["error"]
        assert error["code"] == "unknown_command" and "no-such" in error["cause"] and "--help" in error["action"]
        assert stderr == ""


@pytest.mark.parametrize("switch", ["0", "1"])
def test_an_argument_that_is_not_utf8_is_named_not_the_codec(tmp_path: Path, switch: str) -> None:
    """A name in Latin-1 from an old script: one line naming the argument and the byte, exit 2, nothing run."""

    env = {**os.environ, "MCP_NEXTCLOUD_SERVICE": switch, "XDG_RUNTIME_DIR": str(tmp_path),
           "MCP_NEXTCLOUD_INDEX": str(tmp_path / "i.db")}
    done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "grep", os.fsdecode(b"caf\xe9")],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == ("mcp-nextcloud: argument 2 is not valid UTF-8 (byte 0xE9 at character 3); give it "
                                   "in UTF-8 (a name in another encoding: rename it, or name its folder)")
    assert "codec" not in done.stderr and not (tmp_path / "mcp-nextcloud").exists()
