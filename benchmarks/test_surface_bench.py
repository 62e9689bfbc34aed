"""The product's tool surface: tools/list bytes per tool over every tool of both server identities.

The tool list is paid for in every conversation an agent has (issues 11, 12, 13: ≤ 600 bytes per tool on
average, compact JSON as sent). Deterministic: the run fails when the budget is missed.
"""
from __future__ import annotations

import json

import anyio

from benchmarks.conftest import report


def test_tools_list_bytes_per_tool() -> None:
    from mcp import Client

    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext
    from mcp_nextcloud.server.mail_app import build_mail_server

    async def listed(server: object) -> list:
        async with Client(server, mode="legacy") as client:
            return (await client.list_tools()).tools

    sizes: dict[str, int] = {}
    parts: dict[str, int] = {}
    for build in (build_server, build_mail_server):
        for tool in anyio.run(listed, build(ServerContext(account=None, index=None))):
            wire = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
            sizes[tool.name] = len(json.dumps(wire, separators=(",", ":")))
            for key, value in wire.items():
                parts[key] = parts.get(key, 0) + len(json.dumps(value, separators=(",", ":")))
    per_tool = sum(sizes.values()) / len(sizes)
    report("surface", {
        "tools (mcp-nextcloud + mcp-mail)": len(sizes),
        "tools/list bytes total": sum(sizes.values()),
        "bytes per tool by part (avg)": {k: round(v / len(sizes)) for k, v in parts.items()},
        "bytes by tool": dict(sorted(sizes.items(), key=lambda kv: -kv[1])),
    }, [("tools/list bytes per tool, every tool", per_tool, 600.0, "<=")])
    assert per_tool <= 600, sizes
