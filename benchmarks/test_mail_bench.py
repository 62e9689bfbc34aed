"""mcp-mail figures: tools/list bytes, mail_search / mail_read latency and answer sizes against the emulator.

Printed next to the budgets and saved as JSON (benchmarks/results/). The run
fails only on deterministic figures (bytes), never on wall-clock times.
"""
from __future__ import annotations

import json
import time

import anyio

from benchmarks.conftest import report, summary
from mcp_nextcloud.fixtures.emulator.server import Emulator

REPEAT = 50


def test_mail_bench() -> None:
    from mcp import Client

    from mcp_nextcloud.nextcloud.config import Account
    from mcp_nextcloud.server.context import ServerContext
    from mcp_nextcloud.server.mail_app import build_mail_server

    with Emulator() as emu:
        creds = emu.account("alice")
        ctx = ServerContext(account=Account(url=creds["url"], user=creds["user"],
                                            app_password=creds["app_password"]), index=None)
        server = build_mail_server(ctx)

        async def go() -> dict:
            async with Client(server, mode="legacy") as c:
                tools = (await c.list_tools()).tools
                sizes = {t.name: len(json.dumps(t.model_dump(by_alias=True, mode="json", exclude_none=True),
                                                separators=(",", ":"))) for t in tools}
                search, read, last_read = [], [], None
                await c.call_tool("mail_search", {"limit": 20})   # warm-up: accounts and mailboxes cached
                for i in range(REPEAT):
                    t0 = time.perf_counter()
                    await c.call_tool("mail_search", {"limit": 20, "unread": bool(i % 2)})
                    search.append((time.perf_counter() - t0) * 1000)
                    t0 = time.perf_counter()
                    last_read = await c.call_tool("mail_read", {"id": 1 + i % 10})
                    read.append((time.perf_counter() - t0) * 1000)
                full = await c.call_tool("mail_search", {"limit": 20})
                return {"sizes": sizes, "search": search, "read": read, "search_bytes":
                        len(full.content[0].text.encode()), "found": len(json.loads(full.content[0].text)["messages"]),
                        "read_bytes": len(last_read.content[0].text.encode()) if last_read else 0,
                        "requests": emu.requests}
        try:
            out = anyio.run(go)
        finally:
            ctx.close()
    sizes = out["sizes"]
    per_tool = sum(sizes.values()) / len(sizes)
    per_message = out["search_bytes"] / max(1, out["found"])
    report("mail", {
        "tools/list bytes per tool (avg)": round(per_tool, 1),
        "tools/list bytes by tool": sizes,
        "mail_search (20 newest) against the emulator": summary(out["search"]),
        "mail_read one message": summary(out["read"]),
        "answer bytes: mail_search 20 messages": out["search_bytes"],
        "answer bytes per listed message": round(per_message, 1),
        "answer bytes: mail_read one message": out["read_bytes"],
    }, [
        ("mail_search bytes per message", per_message, 400.0, "<="),
    ])
    # The 600-byte average is over every tool of the product (benchmarks/test_surface_bench.py);
    # this guards mcp-mail's own share against growing unnoticed.
    assert per_tool <= 750, sizes
