"""files_search (names, MIME, dates) and files_grep (text inside documents).

Both answer from the local index first. files_search falls back to the
server's WebDAV SEARCH when the index knows no match (e.g. a file created a
moment ago, or an index never synced). files_grep first asks the server what
changed since the last sync (at most every few seconds): small changed files
are indexed on the fly, larger ones are named in `warnings`, so "no result"
is never silently stale.
"""
from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import time
from typing import Any

from mcp.types import CallToolResult

from .context import ServerContext
from .envelope import envelope
from .errors import from_nextcloud, misuse
from .resolve import check_path, file_entry, iso_time

REMOTE_CURSOR = "r."


def parse_time(value: str) -> float:
    """ISO date or date-time (naive = UTC) -> unix seconds; a misuse error naming the format otherwise."""
    text = value.strip()
    try:
        if len(text) == 10:
            stamp = dt.datetime.strptime(text, "%Y-%m-%d")
        else:
            stamp = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise misuse(f"modifiedAfter {value!r} is not an ISO date: use 2025-01-31 or 2025-01-31T09:30:00Z. "
                     "Do not retry unchanged.", status="bad_time") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=dt.timezone.utc)
    return stamp.timestamp()


def _folder(path: str | None) -> str | None:
    return check_path(path) if path else None


# -- files_search ------------------------------------------------------------------------------
def search(ctx: ServerContext, *, name: str | None, mime: str | None, modified_after: str | None,
           path: str | None, limit: int, cursor: str | None) -> CallToolResult:
    """Files by name / MIME / mtime under a folder: the index, then WebDAV SEARCH."""
    folder = _folder(path)
    since = parse_time(modified_after) if modified_after else None
    name = name.strip() if name and name.strip() else None
    mime = mime.strip() if mime and mime.strip() else None
    binding = _binding(name, mime, since, folder)
    if cursor and cursor.startswith(REMOTE_CURSOR):
        return _remote_search(ctx, name, mime, since, folder, limit, _read_remote_cursor(cursor, binding), binding)
    try:
        res = ctx.index.search_names(name=name, mime=mime, modified_after=since, path_prefix=folder, limit=limit,
                                     cursor=cursor)
    except ValueError as exc:  # a cursor from another search: the indexer's text is the instruction
        raise misuse(str(exc), status="bad_cursor") from None
    if res.total == 0 and not cursor:
        return _remote_search(ctx, name, mime, since, folder, limit, 0, binding)
    payload: dict[str, Any] = {
        "files": [file_entry(r) for r in res.files],
        "total": res.total,
        "truncated": res.truncated,
        "nextCursor": res.nextCursor,
        "hint": "Pass nextCursor for more." if res.truncated else None,
        "warnings": _index_age(ctx),
    }
    return envelope(payload)


def _remote_search(ctx: ServerContext, name: str | None, mime: str | None, since: float | None,
                   folder: str | None, limit: int, offset: int, binding: str) -> CallToolResult:
    pattern = name.replace("*", "%").replace("?", "_") if name else None
    if mime and mime.endswith("/"):
        mime += "%"
    try:
        items = ctx.client().webdav.search(name=pattern, mime=mime, modified_after=since, path=folder or "/",
                                           limit=limit + 1, offset=offset)
    except Exception as exc:
        if type(exc).__name__ == "NextcloudError":
            raise from_nextcloud(exc) from None
        raise
    more = len(items) > limit
    items = items[:limit]
    payload: dict[str, Any] = {
        "files": [file_entry(i) for i in items],
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
        raise misuse("cursor is not one this server issued: pass nextCursor unchanged, or drop it to start over. "
                     "Do not retry with this cursor.", status="bad_cursor") from None
    if bound != binding or offset < 0:
        raise misuse("cursor belongs to another search (other name, mime, modifiedAfter or path): repeat the same "
                     "search with it, or drop it. Do not retry with this cursor.", status="bad_cursor")
    return offset


def _index_age(ctx: ServerContext) -> list[str] | None:
    last = _last_sync(ctx)
    if last is None:
        return ["The local index was never synced with the server; recent files may be missing."]
    return None


def _last_sync(ctx: ServerContext) -> float | None:
    """When the last remote sync finished (unix seconds), from the index's meta table."""
    try:
        value = ctx.index.get_meta("last_sync_at")
    except Exception:
        return None
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# -- files_grep --------------------------------------------------------------------------------
def grep(ctx: ServerContext, *, query: str, path: str | None, limit: int, cursor: str | None) -> CallToolResult:
    """Ranked files with passages from the FTS5 index, after folding in what changed on the server."""
    if not query.strip():
        raise misuse("query is empty: give words or a phrase. Do not retry unchanged.", status="bad_query")
    folder = _folder(path)
    fresh_warnings = freshen(ctx, folder) if not cursor else []
    try:
        res = ctx.index.grep(query, path_prefix=folder, limit=limit, cursor=cursor)
    except ValueError as exc:  # a cursor from another query, or a query with nothing searchable
        raise misuse(str(exc), status="bad_cursor" if cursor else "bad_query") from None
    hits = []
    for h in res.hits:
        hits.append({"path": h.path, "fileId": h.fileId, "kind": h.kind, "modified": iso_time(h.mtime),
                     "matchCount": h.matchCount, "passages": [p.to_dict() for p in h.passages]})
    if hits:
        hint = ("files_read(path, find=...) lists every match in one file; files_read(path, offset=...) reads "
                "around a passage.")
        if res.truncated:
            hint = "Pass nextCursor for more files. " + hint
    else:
        hint = ("No indexed document contains this. Try fewer or other words, a prefix (word*), or files_search "
                "if you know part of the file name.")
    payload = {"query": query, "hits": hits, "total": res.total, "truncated": res.truncated,
               "nextCursor": res.nextCursor, "hint": hint, "warnings": fresh_warnings + list(res.warnings)}
    return envelope(payload)


def freshen(ctx: ServerContext, folder: str | None) -> list[str]:
    """Index small files changed on the server since the last sync; name the rest. Returns warnings.

    Runs at most every `settings.freshness_interval_s` (one WebDAV SEARCH) so
    a burst of greps costs one round trip, and never fails the grep: a server
    that does not answer only produces a warning.
    """
    now = time.monotonic()
    if now - ctx.last_fresh_check < ctx.settings.freshness_interval_s:
        return []
    ctx.last_fresh_check = now
    since = _last_sync(ctx)
    if since is None:
        return []  # never synced: grep's own coverage warnings say so
    from .file_read import load_document

    settings = ctx.settings
    try:
        changed = ctx.client().webdav.search(modified_after=since, path=folder or "/",
                                             limit=settings.fly_max_files * 3)
    except Exception as exc:  # freshness is best effort; grep still answers from the index
        if type(exc).__name__ != "NextcloudError":
            raise
        return ["Could not ask the server what changed since the last sync; results may miss recent edits."]
    skipped: list[str] = []
    done = 0
    for item in changed:
        if item.is_dir:
            continue
        try:
            rec = ctx.index.get_file(file_id=item.file_id) if item.file_id is not None else None
        except Exception:
            rec = None
        if rec is not None and rec.etag == item.etag and rec.status != "pending":
            continue  # already this version (files_read or files_write cached it)
        if done >= settings.fly_max_files or int(item.size or 0) > settings.fly_max_bytes:
            skipped.append(item.path)
            continue
        try:
            load_document(ctx, item)  # download + extract + store in the index
            done += 1
        except Exception:  # an unreadable file is recorded by the index; it must not fail the grep
            skipped.append(item.path)
    if not skipped:
        return []
    names = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
    return [f"Changed on the server since the last sync and not searched yet: {names}. "
            "Read them with files_read, or wait for the next sync."]
