"""The organise-and-undo file tools as the model sees them; the work is in `file_ops`.

Four intentions: put a file elsewhere (files_move, copy=true keeps the
original), throw it away reversibly (files_delete), see what can be brought
back (files_history: a file's versions, or the trash bin), and bring it back
(files_restore). Every answer names the handle its undo takes.
"""
from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.envelope import _Out, envelope
from mcp_nextcloud.server.tools.files import ops as file_ops
from mcp_nextcloud.server.tools.files.tools import MAX_PATH, FileId, Path_

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
# A move may replace what is at the destination, a delete removes, a version restore replaces the content:
# all reversible (trash bin, versions), all destructive in the policy's sense, so a person approves them.
CHANGE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False)


class FileOpOut(_Out):
    path: str | None = None
    fileId: int | None = None


class HistoryOut(_Out):
    """versions (with a file) or trash (without)."""

    truncated: bool


def register(server: MCPServer, ctx: ServerContext) -> None:
    """Add files_move, files_delete, files_restore and files_history to `server`."""

    @server.tool(annotations=CHANGE)
    def files_move(
        path: Path_ = None,
        fileId: FileId = None,
        *,
        to: Annotated[str, Field(description="New path, or a folder to move into", min_length=1,
                                 max_length=MAX_PATH)],
        copy: Annotated[bool | None, Field(description="Copy instead")] = None,
        replace: Annotated[bool | None, Field(description="Trash what is at `to`")] = None,
        createFolders: Annotated[bool | None, Field(description="Create missing folders of `to`")] = None,
    ) -> Annotated[CallToolResult, FileOpOut]:
        """Move or rename (fileId kept), or copy, a file or folder."""
        return envelope(file_ops.move(ctx, path=path, file_id=fileId, to=to, copy=bool(copy),
                                      replace=bool(replace), create_folders=bool(createFolders)))

    @server.tool(annotations=CHANGE)
    def files_delete(path: Path_ = None, fileId: FileId = None) -> Annotated[CallToolResult, FileOpOut]:
        """Move a file or folder to the trash bin."""
        return envelope(file_ops.delete(ctx, path=path, file_id=fileId))

    @server.tool(annotations=CHANGE)
    def files_restore(
        path: Path_ = None,
        fileId: FileId = None,
        version: Annotated[str | None, Field(description="From files_history; else from trash",
                                             max_length=64)] = None,
    ) -> Annotated[CallToolResult, FileOpOut]:
        """Bring a file back from the trash, or to an earlier version."""
        return envelope(file_ops.restore(ctx, path=path, file_id=fileId, version=version))

    @server.tool(annotations=READ)
    def files_history(
        path: Path_ = None,
        fileId: FileId = None,
        limit: Annotated[int, Field(description="Max 200", ge=1, le=200)] = 30,
    ) -> Annotated[CallToolResult, HistoryOut]:
        """A file's versions; with no file, the trash bin."""
        out: dict[str, Any] = file_ops.history(ctx, path=path, file_id=fileId, limit=limit)
        return envelope(out)
