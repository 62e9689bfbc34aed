"""The file tools as the model sees them: names, arguments, descriptions, annotations.

Only the surface lives here; the work is in `file_read`, `file_search` and
`file_write`. Descriptions are short on purpose (tools/list is paid for in
every session) but every argument is described: a field description is the
model's only documentation. Annotations feed the approval policy.
"""
from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from . import file_read, file_search, file_write
from .context import ServerContext
from .envelope import GrepOut, ReadOut, SearchOut, ShareOut, WriteOut

READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=False)
# Sharing shows a person's files to someone else: not declared idempotent, so the policy asks for approval
# (a repeated call is harmless, but whether to disclose at all is the person's decision, not the model's).
SHARE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)

Path_ = Annotated[str | None, Field(description="e.g. /Documents/a.pdf")]
FileId = Annotated[int | None, Field(description="Instead of path", ge=0)]
Folder = Annotated[str | None, Field(description="Under this folder")]
Cursor = Annotated[str | None, Field(description="From nextCursor")]


def register(server: MCPServer, ctx: ServerContext) -> None:
    """Add files_search, files_grep, files_read, files_write and files_share_internal to `server`."""

    @server.tool(annotations=READ_ONLY)
    def files_search(
        name: Annotated[str | None, Field(description="Part of the name, * wildcard")] = None,
        mime: Annotated[str | None, Field(description="e.g. application/pdf or image/")] = None,
        modifiedAfter: Annotated[str | None, Field(description="ISO date, like 2025-01-31")] = None,
        path: Folder = None,
        limit: Annotated[int, Field(description="Max files", ge=1, le=100)] = 20,
        cursor: Cursor = None,
    ) -> Annotated[CallToolResult, SearchOut]:
        """Find files by name, MIME type or date; never by contents (use files_grep for text)."""
        return file_search.search(ctx, name=name, mime=mime, modified_after=modifiedAfter, path=path,
                                  limit=limit, cursor=cursor)

    @server.tool(annotations=READ_ONLY)
    def files_grep(
        query: Annotated[str, Field(description='Words, "phrase" or prefix*',
                                    min_length=1, max_length=500)],
        path: Folder = None,
        limit: Annotated[int, Field(description="Max files", ge=1, le=50)] = 10,
        cursor: Cursor = None,
    ) -> Annotated[CallToolResult, GrepOut]:
        """Search text inside documents (PDF, Office, text): ranked files with passages and offsets."""
        return file_search.grep(ctx, query=query, path=path, limit=limit, cursor=cursor)

    @server.tool(annotations=READ_ONLY)
    def files_read(
        path: Path_ = None,
        fileId: FileId = None,
        offset: Annotated[int, Field(description="Start character, e.g. nextOffset", ge=0)] = 0,
        limit: Annotated[int | None, Field(description="Characters (8000); with find: passages (20)",
                                           ge=1, le=40_000)] = None,
        find: Annotated[str | None, Field(description="Words to find", max_length=500)] = None,
        format: Annotated[Literal["text", "outline"] | None, Field(description="outline: headings and pages")] = None,
    ) -> Annotated[CallToolResult, ReadOut]:
        """Read any file (PDF, Office, text, images) in slices; find gives passages."""
        return file_read.read(ctx, path=path, file_id=fileId, offset=offset, limit=limit, find=find,
                              fmt=format or "text")

    @server.tool(annotations=WRITE)
    def files_write(
        path: Path_ = None,
        *,
        content: Annotated[str, Field(description="Full new text")],
        etag: Annotated[str | None, Field(description="From files_read")] = None,
        fileId: FileId = None,
    ) -> Annotated[CallToolResult, WriteOut]:
        """Write a text file: with etag only if unchanged, else only if new. Returns the new etag."""
        return file_write.write(ctx, path=path, file_id=fileId, content=content, etag=etag)

    @server.tool(annotations=SHARE)
    def files_share_internal(
        path: Path_ = None,
        fileId: FileId = None,
        *,
        shareWith: Annotated[str, Field(description="Account id or exact name",
                                        min_length=1, max_length=200)],
        permissions: Annotated[Literal["read", "edit"], Field(description="Access")] = "read",
    ) -> Annotated[CallToolResult, ShareOut]:
        """Share a file or folder with an account here (no public links)."""
        return file_write.share(ctx, path=path, file_id=fileId, share_with=shareWith, permissions=permissions)
