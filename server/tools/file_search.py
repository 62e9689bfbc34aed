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
Answers point only at tools: CLI advice from the index is removed.
"""
from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import re
import time
from dataclasses import dataclass
from typing import Any

from mcp.types import CallToolResult

from server.context import ServerContext
from server.envelope import envelope
from server.errors import ToolFailure, from_nextcloud, misuse
from server.tools.resolve import check_path, file_entry, iso_time

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
    if _meta_time(ctx, "last_sync_at") is None:
        return ["The local index was never synced with the server; recent files may be missing."]
    return None


def _meta_time(ctx: ServerContext, key: str) -> float | None:
    """An ISO time from the index's meta table as unix seconds (None when absent or unreadable)."""
    try:
        value = ctx.index.get_meta(key)
    except Exception:
        return None
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def changes_since(ctx: ServerContext) -> float | None:
    """Since when the server must be asked what changed: the last complete sync's start, minus a margin.

    Indexes written before that mark existed only hold the finish time
    (`last_sync_at`) and the sync's duration: their start is derived from
    both, with the same margin, so edits made during that sync are not missed.
    """
    mark = _meta_time(ctx, "changes_since")
    if mark is not None:
        return mark
    finished = _meta_time(ctx, "last_sync_at")
    if finished is None:
        return None
    try:
        seconds = float(json.loads(ctx.index.get_meta("last_sync") or "{}").get("seconds") or 0.0)
    except (ValueError, TypeError, AttributeError):
        seconds = 0.0
    return finished - seconds - CHANGES_SINCE_MARGIN_S


CHANGES_SINCE_MARGIN_S = 2.0  # the same margin indexer.remote applies when it records the mark
# CLI steps an agent cannot take: removed from what the index says before it reaches a tool answer.
_CLI_ASIDE = re.compile(r"\s*\([^()]*mcp-nextcloud[^()]*\)")
_CLI_CLAUSE = re.compile(r"(run the sync or index again|index or sync that folder first)[,;:]?\s*(or\s+)?", re.I)


def tool_warnings(warnings: list[str]) -> list[str]:
    """The index's warnings with CLI advice removed: tools point only at tools."""
    out = []
    for w in warnings:
        text = _CLI_CLAUSE.sub("", _CLI_ASIDE.sub("", w)).strip()
        if "mcp-nextcloud" in text:  # advice in a wording we do not know: keep only what precedes it
            text = text.split("mcp-nextcloud", 1)[0].rstrip(" (`'\"-:;,")
        if text:
            out.append(text)
    return out


# -- files_grep --------------------------------------------------------------------------------
def grep(ctx: ServerContext, *, query: str, path: str | None, limit: int, cursor: str | None) -> CallToolResult:
    """Ranked files with passages from the FTS5 index, after folding in what changed on the server."""
    if not query.strip():
        raise misuse("query is empty: give words or a phrase. Do not retry unchanged.", status="bad_query")
    folder = _folder(path)
    fresh = freshen(ctx, folder) if not cursor else Freshness([], folder_seen=False)
    try:
        res = ctx.index.grep(query, path_prefix=folder, limit=limit, cursor=cursor)
    except ValueError as exc:  # a cursor from another query, or a query with nothing searchable
        raise misuse(str(exc), status="bad_cursor" if cursor else "bad_query") from None
    warnings = fresh.warnings + tool_warnings(list(res.warnings))
    if folder and res.total == 0 and not cursor:
        if not fresh.folder_seen:
            _check_folder(ctx, folder)  # one PROPFIND: a folder the server does not have is a wrong path
        warnings = [w for w in warnings if not w.lower().startswith("nothing is indexed under")]
    hits = []
    for h in res.hits:
        hit = {"path": h.path, "fileId": h.fileId, "kind": h.kind, "modified": iso_time(h.mtime),
               "phrase": h.phrase, "more": h.more, "passages": [p.to_dict() for p in h.passages]}
        if h.folder is not None:
            hit["folder"] = h.folder
        hits.append(hit)
    if hits:
        hint = ("more=true: the file has matches beyond its passages, files_read(path, find=...) lists every one; "
                "files_read(path, offset=...) reads around a passage.")
        if any(not h.phrase for h in res.hits):
            hint += (" phrase=false: the file holds the words but not as the phrase "
                     "(quote the query for the phrase only).")
        if res.truncated:
            hint = "Pass nextCursor for more files. " + hint
        warnings += _deleted_since(ctx)
    elif folder:
        hint = (f"No indexed document under {folder} contains this. Try other words or a prefix (word*); "
                f"files_search(path={folder!r}) lists the files there and files_read reads any of them.")
    else:
        hint = ("No indexed document contains this. Try fewer or other words, a prefix (word*), or files_search "
                "if you know part of the file name.")
    payload = {"query": query, "hits": hits, "total": res.total,
               "totalIsEstimate": True if res.totalIsEstimate else None, "truncated": res.truncated,
               "nextCursor": res.nextCursor, "hint": hint, "warnings": warnings}
    return envelope(payload)


def _folder_missing(folder: str) -> ToolFailure:
    return misuse(f"The folder {folder} does not exist on the server. Confirm it with files_search (its name, "
                  "or path=/ to list the top level), or drop path to search everything. "
                  "Do not retry this path unchanged.", status="folder_not_found")


def _check_folder(ctx: ServerContext, folder: str) -> None:
    """Raise the wrong-path instruction when the server has no such folder; any other trouble is ignored."""
    try:
        ctx.client().webdav.stat(folder)
    except Exception as exc:
        if type(exc).__name__ != "NextcloudError":
            raise
        if getattr(exc, "kind", "") == "not_found":
            raise _folder_missing(folder) from None


def _deleted_since(ctx: ServerContext) -> list[str]:
    """Say when hits may name files deleted on the server: deletions are only seen by a full sync."""
    last = _meta_time(ctx, "last_full_sync_at") or _meta_time(ctx, "last_sync_at")
    if last is None or time.time() - last <= ctx.settings.stale_after_s:
        return []
    return [f"Files deleted on the server since the last full sync ({iso_time(last)}) may still be listed; "
            "files_read says so if one is gone."]


@dataclass
class Freshness:
    """What the freshness check found: warnings, and whether the server confirmed the folder exists."""

    warnings: list[str]
    folder_seen: bool


def freshen(ctx: ServerContext, folder: str | None) -> Freshness:
    """Index small files changed on the server since the last sync; name the rest.

    Runs at most every `settings.freshness_interval_s` (one WebDAV SEARCH) so
    a burst of greps costs one round trip, and never fails the grep for an
    outage: a server that does not answer only produces a warning. A folder
    the server does not have is the one failure: the path is wrong.
    """
    # A failed check counts too: during an outage every grep must not wait on it.
    if not ctx.claim_fresh_check(ctx.settings.freshness_interval_s):
        return Freshness([], folder_seen=False)
    since = changes_since(ctx)
    if since is None:
        return Freshness([], folder_seen=False)  # never synced: grep's own coverage warnings say so
    from server.tools.file_read import load_document

    settings = ctx.settings
    try:
        changed = ctx.client().webdav.search(modified_after=since, path=folder or "/",
                                             limit=settings.fly_max_files * 3)
    except Exception as exc:  # freshness is best effort; grep still answers from the index
        if type(exc).__name__ != "NextcloudError":
            raise
        if folder and getattr(exc, "kind", "") == "not_found":
            raise _folder_missing(folder) from None
        return Freshness(["Could not ask the server what changed since the last sync; results may miss "
                          "recent edits."], folder_seen=False)
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
            continue  # already this version (the sync, files_read or files_write stored it)
        if done >= settings.fly_max_files or int(item.size or 0) > settings.fly_max_bytes:
            skipped.append(item.path)
            continue
        try:
            load_document(ctx, item)  # download + extract + store in the index
            done += 1
        except Exception:  # an unreadable file is recorded by the index; it must not fail the grep
            skipped.append(item.path)
    if not skipped:
        return Freshness([], folder_seen=True)
    names = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
    return Freshness([f"Changed on the server since the last sync and not searched yet: {names}. "
                      "Read them with files_read."], folder_seen=True)
