"""Processes of the index service tests: the CLI as `python -m mcp_nextcloud` from this tree, the service
it starts, its status, socket and log."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def alice_env(emulator: Any, folder: Path, runtime: Path, index: str = "index.db", **extra: str) -> dict[str, str]:
    """The environment of a process of alice on the emulator, every data file under `folder`, the service's
    socket in `runtime` (short: a socket path holds ~100 bytes); `extra`: more variables."""
    acct = emulator.account("alice")
    out = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))}
    out.update({"NEXTCLOUD_URL": acct["url"], "NEXTCLOUD_USER": acct["user"],
                "NEXTCLOUD_APP_PASSWORD": acct["app_password"], "MCP_NEXTCLOUD_INDEX": str(folder / index),
                "XDG_DATA_HOME": str(folder / "data"), "XDG_CACHE_HOME": str(folder / "cache"),
                "XDG_CONFIG_HOME": str(folder / "config"), "XDG_RUNTIME_DIR": str(runtime), **extra})
    return out


def with_suppress_kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _pid_of(sock: Path) -> int | None:
    """The pid of the process listening at a socket (from its log's first line)."""
    log = sock.with_suffix(".log")
    try:
        for line in log.read_text().splitlines():
            if "listening at" in line:
                pid = int(line.split("[", 1)[1].split("]", 1)[0])
        return pid
    except (OSError, ValueError, UnboundLocalError):
        return None


def _cli(env: dict[str, str], *argv: str, cwd: Path = ROOT, stdin: str | None = None,
         **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_nextcloud", *argv], cwd=cwd, env={**env, **extra},
                          capture_output=True, text=True, input=stdin, timeout=180)


def _status(env: dict[str, str], cwd: Path = ROOT, **extra: str) -> dict[str, Any]:
    """The status of the service for env's index and the code that runs from cwd (the service's key has both)."""
    done = _cli(env, "service", "status", "--json", cwd=cwd, **extra)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _sockets(runtime: Path) -> list[Path]:
    folder = runtime / "mcp-nextcloud"
    return sorted(folder.glob("*.sock")) if folder.is_dir() else []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:   # a zombie (our grandchild is not ours to reap) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except OSError:
        return False


def _log_of(env: dict[str, str]) -> str:
    folder = Path(env["XDG_RUNTIME_DIR"]) / "mcp-nextcloud"
    return "".join(p.read_text() for p in folder.glob("*.log"))
