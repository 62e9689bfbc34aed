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

from mcp_nextcloud.indexer.search.syntax import MAX_QUERY_CHARS
from mcp_nextcloud.server.tools.files import read as file_read
from mcp_nextcloud.server.tools.files import search as file_search
from mcp_nextcloud.server.tools.files import write as file_write
from mcp_nextcloud.server.tools.files.jail import jailed
from mcp_nextcloud.server.context import MAX_WRITE_BYTES, ServerContext
from mcp_nextcloud.server.envelope import GrepOut, ReadOut, SearchOut, ShareOut, WriteOut

# openWorldHint is left out where it would say false (as for the mail tools): the approval policy reads the
# other three only, and its 22 bytes per tool pay for typing every output property (schema portability).
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False)
# Sharing shows a person's files to someone else: not declared idempotent, so the policy asks for approval
# (a repeated call is harmless, but whether to disclose at all is the person's decision, not the model's).
SHARE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)

# Length limits: a path as long as Linux allows, names as long as a file name, the rest generous for what
# they hold. Enforced with a clear error (server/arguments.py adds the default for undeclared strings).
MAX_PATH = 4096
MAX_NAME = 255
MAX_CURSOR = 2048
MAX_ETAG = 200

Path_ = Annotated[str | None, Field(description="e.g. /Documents/a.pdf", max_length=MAX_PATH)]
# files_write refuses binary formats: its example must be a text file, not the reader's PDF.
TextPath = Annotated[str | None, Field(description="e.g. /Notes/todo.md", max_length=MAX_PATH)]
FileId = Annotated[int | None, Field(description="Instead of path", ge=0)]
Folder = Annotated[str | None, Field(description="Under this folder", max_length=MAX_PATH)]
Cursor = Annotated[str | None, Field(description="From nextCursor", max_length=MAX_CURSOR)]


def register(server: MCPServer, ctx: ServerContext) -> None:
    """Add files_search, files_grep, files_read, files_write and files_share_internal to `server`."""

    @server.tool(annotations=READ_ONLY)
    def files_search(
        name: Annotated[str | None, Field(description="Part of the name, * wildcard", max_length=MAX_NAME)] = None,
        mime: Annotated[str | None, Field(description="e.g. application/pdf, image/", max_length=MAX_NAME)] = None,
        modifiedAfter: Annotated[str | None, Field(description="ISO date, e.g. 2025-01-31", max_length=64)] = None,
        path: Folder = None,
        limit: Annotated[int, Field(description="Max 100", ge=1, le=100)] = 20,
        cursor: Cursor = None,
    ) -> Annotated[CallToolResult, SearchOut]:
        """Find files by name, type or date; never by contents (files_grep)."""
        return jailed(lambda folder: file_search.search(ctx, name=name, mime=mime, modified_after=modifiedAfter,
                                                        path=folder, limit=limit, cursor=cursor),
                      path, "files", limit, cursor)

    @server.tool(annotations=READ_ONLY)
    def files_grep(
        query: Annotated[str, Field(description='words, "exact words", a OR b, -word, or a question; max 500',
                                    min_length=1, max_length=MAX_QUERY_CHARS)],
        path: Folder = None,
        limit: Annotated[int, Field(description="Max 50", ge=1, le=50)] = 10,
        cursor: Cursor = None,
    ) -> Annotated[CallToolResult, GrepOut]:
        """Search inside documents by word start (a question: also by meaning): ranked files, passages."""
        return jailed(lambda folder: file_search.grep(ctx, query=query, path=folder, limit=limit, cursor=cursor),
                      path, "hits", limit, cursor)

    @server.tool(annotations=READ_ONLY)
    def files_read(
        path: Path_ = None,
        fileId: FileId = None,
        # No published default: 0 goes without saying, and tools/list bytes are paid in every session.
        offset: Annotated[int | None, Field(description="Start character, e.g. nextOffset; outline: branch to open",
                                            ge=0)] = None,
        limit: Annotated[int | None, Field(
            description="Chars (8000, max 40000); find: matches (20, max 100)", ge=1, le=40_000)] = None,
        find: Annotated[str | None, Field(
            description="Text, any case/accents/spacing; outline: section to open; max 500",
            max_length=MAX_QUERY_CHARS)] = None,
        format: Annotated[Literal["text", "outline"] | None, Field(description="outline: headings, pages")] = None,
    ) -> Annotated[CallToolResult, ReadOut]:
        """Read any file (PDF, Office, text, image) in slices; find gives passages."""
        return file_read.read(ctx, path=path, file_id=fileId, offset=offset or 0, limit=limit, find=find,
                              fmt=format or "text")

    @server.tool(annotations=WRITE)
    def files_write(
        path: TextPath = None,
        *,
        # The cap is in UTF-8 bytes, checked by the tool with its own message; declared here so the
        # generic 32k-character default for strings does not apply.
        content: Annotated[str, Field(description="Full new text", json_schema_extra={"maxLength": MAX_WRITE_BYTES})],
        etag: Annotated[str | None, Field(description="From files_read", max_length=MAX_ETAG)] = None,
        fileId: FileId = None,
        # No published default (None = no): tools/list bytes are paid in every session.
        createFolders: Annotated[bool | None, Field(description="Create missing folders")] = None,
    ) -> Annotated[CallToolResult, WriteOut]:
        """Write a text file: with etag only if unchanged, else only if new."""
        return file_write.write(ctx, path=path, file_id=fileId, content=content, etag=etag,
                                create_folders=bool(createFolders))

    @server.tool(annotations=SHARE)
    def files_share_internal(
        path: Path_ = None,
        fileId: FileId = None,
        *,
        shareWith: Annotated[str, Field(description="Account id or exact name",
                                        min_length=1, max_length=200)],
        permissions: Annotated[Literal["read", "edit"], Field(description="Access")] = "read",
    ) -> Annotated[CallToolResult, ShareOut]:
        """Share with an account here (no public links)."""
        return file_write.share(ctx, path=path, file_id=fileId, share_with=shareWith, permissions=permissions)
