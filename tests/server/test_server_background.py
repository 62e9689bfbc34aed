"""The server keeps its index fresh in the background while a session is open (serve --interval)."""
from __future__ import annotations

import time
import uuid

import anyio

from mcp_nextcloud.server.context import Settings


def test_background_sync_picks_up_new_files(world, ctx):
    from mcp import Client

    from mcp_nextcloud.server.app import build_server

    ctx.settings = Settings(sync_interval_s=0.5, freshness_interval_s=3600)
    path = f"/Documents/background-{uuid.uuid4().hex[:8]}.md"
    world.emulator.state.put_file("alice", path, b"synced by the background thread", mtime=time.time() + 5)
    server = build_server(ctx)

    async def go():
        async with Client(server, mode="legacy") as c:
            await c.call_tool("nextcloud_whoami", {})
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                rec = ctx.index.get_file(path=path)
                if rec is not None and rec.status == "indexed":
                    return rec
                await anyio.sleep(0.2)
            return None

    rec = anyio.run(go)
    assert ctx.background is not None, "the lifespan must start the background sync"
    assert rec is not None and rec.status == "indexed"
    ctx.close()
    assert ctx.background is None
