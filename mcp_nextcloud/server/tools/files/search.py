"""files_search (names, MIME, dates) and files_grep (text inside documents).

Both answer from the local index first. files_search falls back to the
server's WebDAV SEARCH when the index knows no match (e.g. a file created a
moment ago, or an index never synced). files_grep first asks the server what
changed since the last complete sync started (at most every few seconds):
small changed files are indexed on the fly, larger ones are named in
`warnings`, so "no result" is never silently stale. Deletions are only seen
by a full sync: when that is older than `settings.stale_after_s` the answer
says so with its time, and a files_read that finds a file gone drops it from
the index. A folder the server does not have is a wrong path, never an outage.
Answers point only at tools: the index states facts, this module adds the advice. Whether
the index can vouch for an empty answer (sync running, failed, never run) is
server.tools.files.coverage's; the bounded look at the server is server.tools.files.freshness's.
Files of a plain local folder (no Nextcloud mapping) are left out: every hit
must open with files_read.
"""
from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import mimetypes
import time
from typing import Any

from mcp.types import CallToolResult

from mcp_nextcloud.indexer.models import iso_time
from mcp_nextcloud.nextcloud.errors import NextcloudError
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.envelope import envelope
from mcp_nextcloud.server.errors import from_nextcloud, misuse
from mcp_nextcloud.server.tools.files.coverage import coverage, empty_hint, grep_hint, index_warnings, read_state
from mcp_nextcloud.server.tools.files.coverage import SyncState
from mcp_nextcloud.server.tools.files.grep_hit import hit_entry
from mcp_nextcloud.server.tools.files.freshness import (Freshness, check_folder, drop_deleted, freshen,
                                                        since_last_check, timed_out)
from mcp_nextcloud.server.tools.files.resolve import check_path, file_entry
from mcp_nextcloud.server.tools.files.server_search import augment

REMOTE_CURSOR = "r."


# Nextcloud's mtimes are unix seconds; SEARCH literals are ISO dates, which end with year 9999.
MTIME_LATEST = dt.datetime(9999, 12, 30, tzinfo=dt.timezone.utc).timestamp()


def parse_time(value: str) -> float:
    """ISO date or date-time (naive = UTC) -> unix seconds; a misuse error naming the format otherwise."""
    text = value.strip()
    try:
        if len(text) == 10:
            stamp = dt.datetime.strptime(text, "%Y-%m-%d")
        else:
            stamp = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise misuse(f"modifiedAfter {value!r} is not an ISO date: use 2025-01-31 or 2025-01-31T09:30:00Z.",
                     status=ToolStatus.BAD_TIME) from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=dt.timezone.utc)
    try:
        seconds = stamp.timestamp()
        dt.datetime.fromtimestamp(seconds, dt.timezone.utc)   # year 1 or 9999 with an offset leaves the range
    except (OverflowError, ValueError, OSError):
        seconds = -1.0
    if not 0 <= seconds < MTIME_LATEST:
        raise misuse("modifiedAfter must lie between 1970-01-01 and 9999-12-30 (UTC): no file has a time outside.",
                     status=ToolStatus.BAD_TIME)
    return seconds


def _folder(path: str | None) -> str | None:
    return check_path(path) if path else None


# -- files_search ------------------------------------------------------------------------------
def search(ctx: ServerContext, *, name: str | None, mime: str | None, modified_after: str | None,
           path: str | None, limit: int, cursor: str | None) -> CallToolResult:
    """Files by name / MIME / mtime under a folder: the index, then WebDAV SEARCH."""
    folder = _folder(path)
    since = parse_time(modified_after) if modified_after else None
    name = name.strip() if name and name.strip() else None
    mime = check_mime(mime.strip()) if mime and mime.strip() else None
    binding = _binding(name, mime, since, folder)
    if cursor and cursor.startswith(REMOTE_CURSOR):
        return _remote_search(ctx, name, mime, since, folder, limit, _read_remote_cursor(cursor, binding), binding)
    try:
        res = ctx.files_index().search_names(name=name, mime=mime, modified_after=since, path_prefix=folder,
                                             limit=limit, cursor=cursor, account_only=True)
    except ValueError as exc:  # a cursor from another search: the indexer's text is the instruction
        raise misuse(str(exc), status=ToolStatus.BAD_CURSOR) from None
    if res.total == 0 and not cursor:
        return _remote_search(ctx, name, mime, since, folder, limit, 0, binding)
    payload: dict[str, Any] = {
        "files": [file_entry(r) for r in res.files],
        "total": res.total,
        "truncated": res.truncated,
        "nextCursor": res.nextCursor,
        "hint": "Pass nextCursor for more." if res.truncated else None,
        "warnings": coverage(ctx).warnings,
    }
    return envelope(payload)


def _remote_search(ctx: ServerContext, name: str | None, mime: str | None, since: float | None,
                   folder: str | None, limit: int, offset: int, binding: str) -> CallToolResult:
    pattern = name.replace("*", "%").replace("?", "_") if name else None
    if mime and mime.endswith("/"):
        mime += "%"
    try:
        # Best effort on a read path: one bounded attempt (the index had nothing; the server may be gone).
        items = ctx.quick_client().webdav.search(name=pattern, mime=mime, modified_after=since, path=folder or "/",
                                                 limit=limit + 1, offset=offset)
    except NextcloudError as exc:
        if not (exc.code.blocks_sync or exc.code.passing):
            raise from_nextcloud(exc) from None
        return _unanswered(ctx, exc, folder)
    more = len(items) > limit
    items = items[:limit]
    # `total` as in every answer: how many match. Exact unless the server has more than this page shows.
    payload: dict[str, Any] = {
        "files": [file_entry(i) for i in items],
        "total": offset + len(items) + (1 if more else 0),
        "totalIsEstimate": True if more else None,
        "truncated": more,
        "nextCursor": _remote_cursor(offset + len(items), binding) if more else None,
    }
    if not items:
        payload["hint"] = ("No file name matches. files_search matches names, MIME types and dates only; "
                           "for words inside documents use files_grep.")
    elif more:
        payload["hint"] = "Pass nextCursor for more."
    payload["warnings"] = ["Listed by the server's search (not in the local index yet)."] if items else None
    return envelope(payload)


def _unanswered(ctx: ServerContext, exc: NextcloudError, folder: str | None) -> CallToolResult:
    """No match in the index and the server's search failed: say so, never a bare empty list."""
    cover = coverage(ctx, check_failure=exc)
    warnings = cover.warnings + ([] if exc.code.blocks_sync else [timed_out(ctx, exc)])
    return envelope({"files": [], "truncated": False, "hint": empty_hint(folder, cover.retry), "warnings": warnings})


_TOP_LEVEL_TYPES = frozenset({"application", "audio", "font", "image", "model", "text", "video"})


def check_mime(mime: str) -> str:
    """A MIME type or prefix ("application/pdf", "image/"); a bare extension gets the type it stands for."""
    if "/" in mime:
        return mime
    bare = mime.strip(".*").lower()
    guess = bare + "/" if bare in _TOP_LEVEL_TYPES else mimetypes.guess_type("x." + bare)[0]
    example = f"mime={guess!r}" if guess else "e.g. mime='application/pdf' or mime='image/'"
    raise misuse(f"mime {mime!r} is not a MIME type: use {example} (type/subtype, or a prefix ending in /). "
                 f"To match the file extension instead use name='*.{bare or 'ext'}'.",
                 status=ToolStatus.BAD_MIME)


def _binding(*parts: Any) -> str:
    raw = json.dumps(parts, separators=(",", ":"), default=str).encode()
    return hashlib.sha256(raw).hexdigest()[:12]


def _remote_cursor(offset: int, binding: str) -> str:
    raw = json.dumps({"o": offset, "b": binding}, separators=(",", ":")).encode()
    return REMOTE_CURSOR + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _read_remote_cursor(cursor: str, binding: str) -> int:
    body = cursor[len(REMOTE_CURSOR):]
    try:
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        offset, bound = int(data["o"]), str(data["b"])
    except (ValueError, KeyError, TypeError):
        raise misuse("cursor is not one this server issued: pass nextCursor unchanged, or drop it to start over.",
                     status=ToolStatus.BAD_CURSOR) from None
    if bound != binding or offset < 0:
        raise misuse("cursor belongs to another search (other name, mime, modifiedAfter or path): repeat the same "
                     "search with it, or drop it.", status=ToolStatus.BAD_CURSOR)
    return offset


# -- files_grep --------------------------------------------------------------------------------
def grep(ctx: ServerContext, *, query: str, path: str | None, limit: int, cursor: str | None,
         passages: int = 1) -> CallToolResult:
    """Ranked files with passages from the FTS5 index, after folding in what changed on the server."""
    if not query.strip():
        raise misuse("query is empty: give words or a phrase.", status=ToolStatus.BAD_QUERY)
    folder = _folder(path)
    state = read_state(ctx)   # the sync marks, read once for the whole call
    fresh = freshen(ctx, folder, state) if not cursor else Freshness([], folder_seen=False)
    res = _index_grep(ctx, query, folder, limit, cursor, passages)
    if res.total == 0 and not cursor and not fresh.checked:
        # An empty answer is where a file added since the last check matters: ask now, whatever the interval.
        fresh = freshen(ctx, folder, state, force=True, root_seen=fresh.root_seen)
        if fresh.checked and fresh.failure is None:
            res = _index_grep(ctx, query, folder, limit, cursor, passages)
    if folder and res.total == 0 and not cursor and not fresh.folder_seen and fresh.failure is None:
        fresh = check_folder(ctx, folder)  # one PROPFIND: a folder the server does not have is a wrong path
    cover = coverage(ctx, check_failure=fresh.failure, state=state)
    warnings = cover.warnings + fresh.warnings + index_warnings(res, cover)
    if res.unindexed:
        warnings.append("Files not indexed yet were not searched: read them with files_read.")
    hits = [hit_entry(h) for h in res.hits]
    total = res.total
    if hits and fresh.failure is None:   # a server that just failed the check is not asked again
        shown = len(hits)
        hits, gone, verified = drop_deleted(ctx, hits)
        total -= shown - len(hits)
        warnings += gone if verified else _deleted_since(ctx, state)
        if not fresh.checked:
            warnings += since_last_check(ctx)
    elif hits:
        warnings += _deleted_since(ctx, state)
    sources = None
    if not cursor:   # the server's own search answers for what the index does not cover (first page only)
        hits, left_out, sources = augment(ctx, query, folder=folder, hits=hits,
                                          cold=cover.incomplete and state.last_full is None, report=state.report)
        warnings += left_out
    payload = {"query": query, "mode": res.mode, "hits": hits, "total": max(total, len(hits)), "sources": sources,
               "totalIsEstimate": True if res.totalIsEstimate else None, "truncated": res.truncated,
               "nextCursor": res.nextCursor,
               "hint": " ".join([*(n + "." for n in res.notes), grep_hint(res, folder, cover, is_file=fresh.is_file)]),
               "warnings": warnings}
    return envelope(payload)


def _index_grep(ctx: ServerContext, query: str, folder: str | None, limit: int, cursor: str | None,
                passages: int) -> Any:
    try:
        return ctx.files_index().grep(query, path_prefix=folder, limit=limit, cursor=cursor, account_only=True,
                              passages=passages)
    except ValueError as exc:  # a cursor from another query, or a query with nothing searchable
        raise misuse(str(exc), status=ToolStatus.BAD_CURSOR if cursor else ToolStatus.BAD_QUERY) from None


def _deleted_since(ctx: ServerContext, state: SyncState) -> list[str]:
    """Say when hits may name files deleted on the server: deletions are only seen by a full sync."""
    last = state.last_full or state.last_sync
    if last is None or time.time() - last <= ctx.call_settings.stale_after_s:
        return []
    return [f"Files deleted on the server since the last full sync ({iso_time(last)}) may still be listed; "
            "files_read says so if one is gone."]
