"""What the live tool tests share: a server on the live account, and a tool call that must succeed."""
from __future__ import annotations

import json
from typing import Any, Iterator

import anyio


def tool_server(account: Any, index: Any = None) -> Iterator[Any]:
    """build_server on the live account (no index unless given); the context closed at the end."""
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    client = NextcloudClient(account)
    ctx = ServerContext(account=account, index=index, client_factory=lambda: client)
    try:
        yield build_server(ctx)
    finally:
        ctx.close()


def call(server: Any, name: str, args: dict[str, Any], *, error: bool = False) -> Any:
    """The tool's JSON answer (or, error=True, its error text), through a real in-process MCP client."""
    from mcp import Client

    async def go() -> Any:
        async with Client(server, mode="legacy") as c:
            return await c.call_tool(name, args)
    result = anyio.run(go)
    assert result.is_error == error, result.content[0].text
    return result.content[0].text if error else json.loads(result.content[0].text)
