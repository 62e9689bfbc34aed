"""`mcp-nextcloud warm`: grep and inspect answered by a ready process, the same answers, and a safe fallback.

Real processes throughout: the warm process is `python -m server.cli warm`,
the calls are `python -m server.cli grep|inspect` subprocesses.
"""
from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def _cli(*args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], cwd=cwd, env=_env(**env),
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, fixture_docs: Path) -> Path:
    folder = tmp_path_factory.mktemp("warm-notes")
    for name in ("notes.txt", "manual.md"):
        (folder / name).write_bytes((fixture_docs / name).read_bytes())
    db = tmp_path_factory.mktemp("warm-index") / "index.db"
    done = _cli("index", "add", str(folder), "--index", str(db))
    assert done.returncode == 0, done.stderr
    return db


class Warm:
    def __init__(self, index: Path) -> None:
        self.sock = index.with_name(index.name + ".sock")
        self.proc = subprocess.Popen([sys.executable, "-m", "server.cli", "warm", "--index", str(index)], cwd=ROOT,
                                     env=_env(), stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        self.first_line = self.proc.stderr.readline()   # written once it listens (or its error)
        assert self.first_line.startswith("warm: answering"), self.first_line + self.proc.stderr.read()

    def stop(self) -> str:
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=30)
        return self.first_line + err


@pytest.fixture
def warm(index: Path) -> Iterator[Warm]:
    w = Warm(index)
    yield w
    if w.proc.poll() is None:
        w.stop()


def test_the_socket_is_the_users_alone_and_goes_away_with_the_process(warm: Warm) -> None:
    mode = stat.S_IMODE(os.stat(warm.sock).st_mode)
    assert stat.S_ISSOCK(os.stat(warm.sock).st_mode)
    assert mode == 0o600, oct(mode)
    warm.stop()
    assert warm.proc.returncode == 0
    assert not warm.sock.exists()


def test_grep_and_inspect_answered_warm_equal_those_run_alone(warm: Warm, index: Path, fixture_docs: Path,
                                                              tmp_path: Path) -> None:
    # A copy of the index at another path has no warm process: the same call runs on its own.
    for suffix in ("", "-wal"):                   # the write-ahead log holds the latest commits
        if Path(f"{index}{suffix}").exists():
            Path(f"{tmp_path / 'copy.db'}{suffix}").write_bytes(Path(f"{index}{suffix}").read_bytes())
    alone = _cli("grep", "install", "--index", str(tmp_path / "copy.db"))
    served = _cli("grep", "install", "--index", str(index))
    assert served.returncode == alone.returncode == 0
    assert served.stdout.split("\n")[:-2] == alone.stdout.split("\n")[:-2]   # the last line holds the timing
    # inspect: a relative path is the caller's, and the index variable is the caller's.
    rel = _cli("inspect", "manual.pdf", "--find", "install", "--json", cwd=fixture_docs,
               MCP_NEXTCLOUD_INDEX=str(index))
    own = _cli("inspect", "manual.pdf", "--find", "install", "--json", cwd=fixture_docs,
               MCP_NEXTCLOUD_INDEX=str(tmp_path / "copy.db"))
    assert rel.returncode == 0 and rel.stdout == own.stdout
    # Errors keep their exit code and their stderr.
    missing = _cli("inspect", "no-such.pdf", MCP_NEXTCLOUD_INDEX=str(index))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    # MCP_NEXTCLOUD_WARM=0: this call runs on its own although the warm process answers (the log below
    # counts one grep served).
    switched_off = _cli("grep", "install", "--index", str(index), MCP_NEXTCLOUD_WARM="0")
    assert switched_off.stdout.split("\n")[:-2] == alone.stdout.split("\n")[:-2]
    log = warm.stop()
    assert log.count("grep: exit 0") == 1 and log.count("inspect: exit 0") == 1, log
    assert "inspect: exit 2" in log


def test_a_stale_socket_is_no_obstacle(index: Path) -> None:
    """A socket left by a killed warm process: calls run on their own, a new warm process takes its place."""
    sock = index.with_name(index.name + ".sock")
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(sock))
    dead.close()                                  # the file stays, nobody listens
    try:
        done = _cli("grep", "install", "--index", str(index))
        assert done.returncode == 0 and "manual.md" in done.stdout
        w = Warm(index)
        served = _cli("grep", "install", "--index", str(index))
        assert served.stdout.split("\n")[:-2] == done.stdout.split("\n")[:-2]
        assert "grep: exit 0" in w.stop()
    finally:
        sock.unlink(missing_ok=True)


def test_a_second_warm_process_for_the_same_index_is_refused(warm: Warm, index: Path) -> None:
    second = _cli("warm", "--index", str(index))
    assert second.returncode == 2
    assert "already answers" in second.stderr
    assert warm.sock.exists() and warm.proc.poll() is None   # the first keeps serving
