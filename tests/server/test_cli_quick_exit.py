"""grep and inspect processes end without the interpreter's teardown, and lose nothing by it.

`cli.process_main` (the console script and `python -m mcp_nextcloud`) ends a
QUICK_EXIT command's process with os._exit once its atexit handlers ran and its
output is flushed. These run real processes and check what a caller sees:
every byte of a long answer through a pipe, the exit codes, the atexit
handlers, a reader that goes away early.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "MCP_NEXTCLOUD_SERVICE": "0"}


def _run(*args: str, code: str | None = None) -> subprocess.CompletedProcess[bytes]:
    cmd = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "mcp_nextcloud", *args]
    return subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of 300 notes sharing a word, so that a grep answer is longer than a pipe's buffer."""
    folder = tmp_path_factory.mktemp("notes")
    for i in range(300):
        (folder / f"note{i:03d}.txt").write_text(f"note {i}: the quarterly budget line {i} " * 40, encoding="utf-8")
    db = folder.parent / "quick.db"
    done = _run("index", "add", str(folder), "--index", str(db))
    assert done.returncode == 0, done.stderr
    return db


def test_a_long_answer_arrives_whole_through_a_pipe(index: Path) -> None:
    done = _run("grep", "quarterly", "--index", str(index), "--limit", "100", "--json", "--passages", "3")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) > 65536                      # more than a pipe holds: written while we read
    answer = json.loads(done.stdout)
    assert answer["total"] == 300 and len(answer["items"]) == 100


def test_exit_codes_are_the_commands(index: Path, tmp_path: Path) -> None:
    missing = _run("grep", "zzzunfindable", "--index", str(index))
    in_process = _run("grep", "zzzunfindable", "--index", str(index),
                      code="import sys; from mcp_nextcloud.cli import main; sys.exit(main(sys.argv[1:]))")
    assert missing.returncode == in_process.returncode
    assert missing.stdout.startswith(b"0 file(s) match") and in_process.stdout.startswith(b"0 file(s) match")
    unreadable = _run("inspect", str(tmp_path / "nothing.pdf"))
    assert unreadable.returncode == 2
    assert b"no such file" in unreadable.stderr


def test_atexit_handlers_still_run(index: Path) -> None:
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('handler ran', file=sys.stderr))\n"
            "from mcp_nextcloud.cli import process_main\n"
            "sys.exit(process_main())\n")
    done = _run("grep", "quarterly", "--index", str(index), code=code)
    assert done.returncode == 0
    assert b"handler ran" in done.stderr
    assert b"note" in done.stdout


def test_a_reader_that_goes_away_early_is_not_an_error(index: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", "grep", "quarterly", "--index", str(index),
                             "--limit", "100", "--passages", "3"], cwd=ROOT, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()                                   # `| head -1`
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0
    assert b"Traceback" not in err and b"Exception ignored" not in err


def test_output_that_cannot_be_written_is_a_failure(index: Path) -> None:
    """stdout on a full device: the answer is lost, so the exit status says so (as a normal exit's does)."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this platform")
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "grep", "quarterly", "--index", str(index)],
                              cwd=ROOT, env=ENV, stdout=full, stderr=subprocess.PIPE, timeout=120)
    assert done.returncode != 0, done.stderr
