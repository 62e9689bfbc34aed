"""`mcp-nextcloud demo`: the whole product in one command, against the bundled emulator.

Starts the Nextcloud emulator seeded with the sample documents, syncs it into
a temporary index, and drives the real MCP server through an in-process MCP
client: tools/list, files_grep, then files_read with find on the manual. It
prints exactly the JSON an agent would receive, so a newcomer sees the
answers (and their size) without configuring anything.
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

MANUAL = "/Documents/manual.pdf"


def run(*, query: str = "install", out: TextIO | None = None) -> int:
    """Run the demo, printing to `out` (stdout); returns an exit code."""
    import anyio

    out = out or sys.stdout
    from fixtures.emulator.server import Emulator   # installed with the package (mcp_nextcloud/fixtures)
    from indexer.remote.sync import sync
    from indexer.store.index import Index
    from nextcloud.client import NextcloudClient
    from nextcloud.config import Account

    from server.app import build_server
    from server.context import ServerContext, Settings

    with tempfile.TemporaryDirectory(prefix="mcp-nextcloud-demo-") as tmp, Emulator() as emu:
        creds = emu.account("alice")
        account = Account(url=creds["url"], user=creds["user"], app_password=creds["app_password"])
        index = Index.open(Path(tmp) / "index.db")
        client = NextcloudClient(account)
        t0 = time.perf_counter()
        report = sync(client, index)
        print(f"# emulated Nextcloud with the sample documents; synced {report.indexed} files into a temporary "
              f"index in {time.perf_counter() - t0:.1f} s", file=out)
        ctx = ServerContext(account=account, index=index, settings=Settings(), client_factory=lambda: client)
        server = build_server(ctx)
        try:
            anyio.run(_drive, server, query, out)
        finally:
            ctx.close()
    return 0


async def _drive(server: Any, query: str, out: TextIO) -> None:
    from mcp import Client

    async with Client(server, mode="legacy") as c:
        tools = (await c.list_tools()).tools
        size = sum(len(json.dumps(t.model_dump(by_alias=True, mode="json", exclude_none=True),
                                  separators=(",", ":"))) for t in tools)
        print(f"\n## tools/list: {len(tools)} tools, {size} bytes", file=out)
        for t in tools:
            print(f"  {t.name}: {t.description}", file=out)
        await _show(c, out, "nextcloud_whoami", {})
        await _show(c, out, "files_grep", {"query": query, "limit": 3})
        # PDF text glues words: the index and find are whitespace-insensitive both ways.
        await _show(c, out, "files_grep", {"query": "new app", "limit": 1})
        await _show(c, out, "files_read", {"path": MANUAL, "find": query, "limit": 2})
        await _show(c, out, "files_read", {"path": "/Documents/budget.xlsx", "format": "outline"})
        # Errors are instructions: cause, next action, whether to retry.
        await _show(c, out, "files_read", {"path": "/Documents/manual-v2.pdf"})


async def _show(client: Any, out: TextIO, name: str, args: dict[str, Any]) -> None:
    t0 = time.perf_counter()
    result = await client.call_tool(name, args)
    ms = (time.perf_counter() - t0) * 1000
    text = result.content[0].text if result.content else ""
    state = "error" if result.is_error else "ok"
    print(f"\n## {name} {json.dumps(args, separators=(',', ':'))} -> {state}, {len(text.encode())} bytes, "
          f"{ms:.0f} ms", file=out)
    print(text, file=out)
