"""A long agent session on a real Nextcloud never runs out (issue 53): 200 read calls through `serve` over stdio
with the index service leave the service's open files and memory flat (the issue's measure was 22 -> 227 open
files for 100 files_grep on Nextcloud 34)."""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.service.long_session import Flat
from tests.service.procs import ROOT, _cli, _pid_of

CALLS, WARM_UP = 200, 24
pytestmark = pytest.mark.timeout(900)


@pytest.fixture
def live_env(live_account: Any, tmp_path: Path) -> Any:
    runtime = Path(tempfile.mkdtemp(prefix="lsvc", dir="/tmp"))   # a socket path holds ~100 bytes
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_NEXTCLOUD_")}
    env.update({"MCP_NEXTCLOUD_INDEX": str(tmp_path / "index.db"), "XDG_DATA_HOME": str(tmp_path / "data"),
                "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
                "XDG_RUNTIME_DIR": str(runtime), "MCP_NEXTCLOUD_SERVICE": "1", "MCP_NEXTCLOUD_SERVICE_IDLE_S": "60"})
    yield env
    _cli(env, "service", "stop")


def test_200_reads_through_serve_on_a_real_nextcloud_leave_the_service_flat(live_env: dict[str, str]) -> None:
    from mcp import Client, StdioServerParameters

    done = _cli(live_env, "index", "sync", "--wait", "300")
    assert done.returncode == 0, done.stderr[-500:]
    sockets = list((Path(live_env["XDG_RUNTIME_DIR"]) / "mcp-nextcloud").glob("*.sock"))
    service = _pid_of(sockets[0]) if sockets else None
    assert service, sockets
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_nextcloud", "serve", "--interval", "0"],
                                   env=live_env, cwd=str(ROOT))

    async def go() -> Flat:
        async with Client(params, mode="legacy") as client:
            found = json.loads((await client.call_tool("files_search", {"limit": 1})).content[0].text)
            path = found["files"][0]["path"] if found.get("files") else None
            calls: list[tuple[str, dict[str, Any]]] = [("files_grep", {"query": "nextcloud", "limit": 2}),
                                                       ("files_search", {"limit": 3}), ("nextcloud_whoami", {})]
            if path:
                calls.append(("files_read", {"path": path, "limit": 400}))
            for i in range(WARM_UP):
                await client.call_tool(*calls[i % len(calls)])
            flat = Flat({"service": service})
            for i in range(CALLS):
                result = await client.call_tool(*calls[i % len(calls)])
                assert not result.is_error, (calls[i % len(calls)][0], result.content[0].text[:300])
            return flat

    flat = anyio.run(go)
    assert not flat.grown(), flat.grown()
