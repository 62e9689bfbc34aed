"""A long agent session never runs out (issue 53): 200 read calls through `serve`, over stdio and over HTTP,
leave the index service (and serve) with the open files and the memory they had after a warm-up.

Before the fix each files_grep a serve ran through the service kept a reader connection to the index (its
database and WAL descriptors) for the rest of the service's life: the SDK runs a tool in an anyio worker
thread, each call's event loop started a new one, and the reader "of this thread" was never closed.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers import stop
from tests.service.long_session import MIXED_READS, Flat
from tests.service.procs import ROOT, _cli, _status

CALLS, WARM_UP = 200, 24
pytestmark = pytest.mark.timeout(600)


async def _session(client: Any, flat_of: Any) -> Flat:
    """Warm up, take the start figures, run CALLS mixed reads (each must answer), return the figures."""
    for i in range(WARM_UP):
        name, args = MIXED_READS[i % len(MIXED_READS)]
        await client.call_tool(name, args)
    flat = flat_of()
    for i in range(CALLS):
        name, args = MIXED_READS[i % len(MIXED_READS)]
        result = await client.call_tool(name, args)
        assert not result.is_error, (name, result.content[0].text[:300])
    return flat


def _synced(env: dict[str, str]) -> int:
    """The service's pid, after a first sync (the greps then read a real index)."""
    done = _cli(env, "index", "sync", "--wait", "60")
    assert done.returncode == 0, done.stderr
    return int(_status(env)["pid"])


def test_200_reads_through_serve_over_stdio_leave_the_service_flat(env: dict[str, str]) -> None:
    from mcp import Client, StdioServerParameters

    service = _synced(env)
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_nextcloud", "serve", "--interval", "0"],
                                   env=env, cwd=str(ROOT))

    async def go() -> Flat:
        async with Client(params, mode="legacy") as client:
            return await _session(client, lambda: Flat({"service": service}))

    flat = anyio.run(go)
    assert not flat.grown(), flat.grown()
    assert _status(env)["pid"] == service


def _http_serve(env: dict[str, str], tmp_path: Path) -> tuple[subprocess.Popen[str], str, str]:
    from tests.team.serving import _free_port

    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", "serve", "--http", "--port", str(port),
                             "--interval", "0"], env=env, cwd=str(ROOT), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True)
    token_file = Path(env["XDG_CONFIG_HOME"]) / "mcp-nextcloud" / "http-token"
    deadline = time.monotonic() + 90
    while not token_file.exists() or not _listening(port):
        assert proc.poll() is None and time.monotonic() < deadline, "serve --http did not start"
        time.sleep(0.1)
    return proc, f"http://127.0.0.1:{port}/mcp", token_file.read_text().strip()


def _listening(port: int) -> bool:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def test_200_reads_through_serve_over_http_leave_the_service_and_serve_flat(env: dict[str, str],
                                                                           tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    service = _synced(env)
    proc, url, token = _http_serve(env, tmp_path)
    try:
        async def go() -> Flat:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                return await _session(client, lambda: Flat({"service": service, "serve --http": proc.pid}))

        flat = anyio.run(go)
        assert not flat.grown(), flat.grown()
    finally:
        stop(proc)
    assert json.loads(_cli(env, "service", "status", "--json").stdout)["pid"] == service
