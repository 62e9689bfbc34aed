"""The team server as a subprocess on loopback (`serve --http --public-url ... --nextcloud-url ...`), for the
emulator's tests and the live ones; its per-person index services are stopped with it."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import httpx
from tests.helpers import stop

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_team(nextcloud_url: str, interval: float = 300, public_url: str | None = None,
                 port: int | None = None, env: dict[str, str] | None = None) -> Iterator[dict[str, Any]]:
    """{url, state, proc, log, runtime (its services' sockets)} of a team server signing people in to
    `nextcloud_url` (`env`: more variables for it, e.g. SSL_CERT_FILE)."""
    extra = env or {}
    state = Path(tempfile.mkdtemp(prefix="team", dir="/tmp"))
    runtime = Path(tempfile.mkdtemp(prefix="trt", dir="/tmp"))
    port = port or _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))}
    env.update({**extra, "XDG_RUNTIME_DIR": str(runtime), "MCP_NEXTCLOUD_SERVICE_IDLE_S": "60",
                "PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")})
    log = state / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", "serve", "--http", "--port", str(port),
                                 "--public-url", public_url or url, "--nextcloud-url", nextcloud_url,
                                 "--state", str(state / "s"), "--interval", str(interval)],
                                env=env, cwd=str(ROOT), stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                httpx.get(url + "/.well-known/oauth-authorization-server", timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "the team server did not listen"
                time.sleep(0.1)
        yield {"url": public_url or url, "local": url, "state": state / "s", "proc": proc, "log": log,
               "runtime": runtime / "mcp-nextcloud"}
    finally:
        stop(proc)
        _stop_services(runtime)
        shutil.rmtree(state, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)


def _stop_services(runtime: Path) -> None:
    from tests.service.procs import _pid_of, with_suppress_kill

    folder = runtime / "mcp-nextcloud"
    for sock in folder.glob("*.sock") if folder.is_dir() else []:
        pid = _pid_of(sock)
        if pid:
            with_suppress_kill(pid)


def diagnosis(team: dict[str, Any], answer: dict[str, Any]) -> str:
    """What a failed sign-in-and-grep test prints: the answer's warnings and the tails of the team server's log
    and of its index service's logs (they name no credential)."""
    import json

    parts = [json.dumps({k: answer.get(k) for k in ("warnings", "hint", "sources", "index")}, default=str)[:3000]]
    for jobs in sorted(Path(team["state"]).rglob("*.jobs.db")):
        from mcp_nextcloud.indexer.jobs.store import JobStore

        with contextlib.closing(JobStore(jobs)) as store:
            parts.append(f"--- jobs of {jobs.parent.name}: " + json.dumps(
                [{k: getattr(j, k, None) for k in ("state", "message", "error", "created_at", "started_at",
                                                  "finished_at", "pid", "done", "total")} for j in store.list(10)]))
    logs = [Path(team["log"]), *sorted(Path(team["runtime"]).glob("*.log"))]
    for log in logs:
        if log.is_file():
            parts.append(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-40:]))
    return "\n".join(parts)
