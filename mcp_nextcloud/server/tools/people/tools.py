"""contacts_search as the model sees it; the matching and merging is in `people`."""
from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.envelope import envelope
from mcp_nextcloud.server.tools.people import lookup as people
from mcp_nextcloud.server.tools.people.pim_out import PeopleOut

# openWorldHint is left out where it would say false (see server/tools/files/tools.py).
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)


def search_payload(ctx: ServerContext, query: str, limit: int) -> dict[str, Any]:
    """People matching `query`, best first; several matches say so, so the model asks instead of picking."""
    found, warnings = people.search(ctx, query)
    payload: dict[str, Any] = {"people": [p.entry() for p in found[:limit]], "total": len(found),
                               "truncated": len(found) > limit, "warnings": warnings}
    if not found:
        payload["hint"] = "Nobody matches; try part of the name or the e-mail address."
    elif len(found) > 1:
        payload["hint"] = "Several people match: ask the user which one before acting on a person."
    return payload


def register(server: MCPServer, ctx: ServerContext) -> None:
    """Add contacts_search to `server`."""

    @server.tool(annotations=READ)
    def contacts_search(
        query: Annotated[str, Field(description="Name or e-mail", min_length=1, max_length=200)],
        limit: Annotated[int, Field(description="Max 50", ge=1, le=50)] = 10,
    ) -> Annotated[CallToolResult, PeopleOut]:
        """Find people: e-mails, phones, accountId (sharing, Talk)."""
        return envelope(search_payload(ctx, query, limit))
