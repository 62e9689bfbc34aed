"""The result envelope: one JSON object, compact in content[0].text and the same as structuredContent.

Every tool answers through `envelope()` so the model (which reads the text)
and programs (which read structuredContent) see the same object, and the
fields that say "there is more" (`truncated`, `nextOffset`, `hint`,
`warnings`) are always in the same place. The output models declare every
field a caller relies on (optional where it depends on the mode) and
validate each answer; tools/list publishes only their top-level names and
non-text types (server/app.py `outline_schema`) to keep the context budget.
Extra fields are allowed so a new reader field never breaks a tool.
"""
from __future__ import annotations

import base64
import json
from typing import Any

from mcp.types import CallToolResult, ImageContent, TextContent
from pydantic import BaseModel, ConfigDict, Field


def compact(obj: Any) -> str:
    """Compact JSON (no indentation, no spaces), UTF-8 kept as is to save bytes."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def prune(payload: dict[str, Any]) -> dict[str, Any]:
    """Drop keys whose value is None or an empty warnings list; a missing key costs no bytes."""
    return {k: v for k, v in payload.items() if v is not None and not (k == "warnings" and not v)}


def envelope(payload: dict[str, Any], *, image: tuple[bytes, str] | None = None) -> CallToolResult:
    """Wrap a tool's answer: compact JSON text, the same object as structuredContent.

    `image` (bytes, mime) adds an MCP image block after the text so the model
    sees the picture itself, never base64 inside the JSON.
    """
    data = prune(payload)
    content: list[Any] = [TextContent(type="text", text=compact(data))]
    if image is not None:
        raw, mime = image
        content.append(ImageContent(type="image", data=base64.b64encode(raw).decode("ascii"), mime_type=mime))
    return CallToolResult(content=content, structured_content=data)


def result_bytes(result: CallToolResult) -> int:
    """Size of what the model receives (text bytes plus image bytes), for telemetry and budgets."""
    total = 0
    for block in result.content:
        if isinstance(block, TextContent):
            total += len(block.text.encode("utf-8"))
        elif isinstance(block, ImageContent):
            total += len(block.data)
    return total


class _Out(BaseModel):
    """Base of the output models: known fields typed, anything else allowed; hint and warnings everywhere."""

    model_config = ConfigDict(extra="allow")
    hint: str | None = None
    warnings: list[str] | None = None


class WhoamiOut(_Out):
    userId: str
    displayName: str | None = None
    email: str | None = None
    serverVersion: str | None = None
    apps: dict[str, bool]
    now: str | None = None                  # the current time, UTC ("2026-12-04T17:40:12Z")
    timeZone: str | None = None             # the account's time zone (IANA); None: unknown
    localTime: str | None = None            # now in that zone, as the tools accept it
    weekday: str | None = None              # today's weekday (in the account's zone, else UTC)
    profile: dict[str, Any] | None = None   # the limits in force (server/profile.py); absent: none


class FileItem(BaseModel):
    """One file as files_search lists it; validated, published only as the array's field names."""

    model_config = ConfigDict(extra="allow")
    path: str
    fileId: int | None = None
    name: str | None = None
    mime: str | None = None
    size: int | None = None
    modified: str | None = None
    folder: bool | None = None


class SearchOut(_Out):
    files: list[FileItem]
    total: int | None = None
    truncated: bool
    nextCursor: str | None = None


class Hit(BaseModel):
    """One file files_grep found, with the passages that matched (offsets files_read accepts)."""

    model_config = ConfigDict(extra="allow")
    path: str
    fileId: int | None = None
    kind: str | None = None
    score: float | None = Field(default=None, description=(
        "How close the hit is, 0-1, higher is closer, comparable across hits: 0.5-1 holds the words (the phrase "
        "highest), 0.3-0.8 related in meaning only (0.3 at the floor), found both ways up to 1. Absent for "
        "hits of the server's own search (source=server)."))
    modified: str | None = None
    more: bool | None = None  # matches beyond the passages shown (files_read with find lists all)
    passages: list[dict[str, Any]]
    phrase: bool | None = None  # the words matched as a phrase (else: all words, apart)
    folder: str | None = None   # the local folder holding the file, when several are indexed
    match: str | None = None    # why it matched: words, meaning, both (hybrid); content, name (source=server)


class GrepOut(_Out):
    mode: str | None = None     # words, or hybrid (a question: words and meaning, fused)
    hits: list[Hit]
    total: int | None = None
    truncated: bool
    nextCursor: str | None = None


class ReadOut(_Out):
    """files_read: `content` (text slice), `matches` (with find) or `entries` (format=outline)."""

    path: str
    fileId: int | None = None
    etag: str | None = None
    kind: str | None = None
    content: str | None = None
    matches: list[dict[str, Any]] | None = None
    entries: list[dict[str, Any]] | None = None
    total: int | None = None
    truncated: bool
    nextOffset: int | None = None


class WriteOut(_Out):
    path: str
    fileId: int | None = None
    etag: str
    created: bool | None = None


class ShareOut(_Out):
    path: str
    fileId: int | None = None
    shareWith: str
    displayName: str | None = None
    permissions: str
