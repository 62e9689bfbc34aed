"""Listings (files_search, files_grep) under a profile's folders: only what is inside is ever seen.

`jailed(run, path, key, limit, cursor)` runs a listing in the folders the profile allows under `path`
(server/profile.py `scopes`): one folder, the listing as is; several (`--folder /A --folder /B` and no
path), the first page of each, merged; none (a path outside), the answer a folder that does not exist
gets. Every item is checked once more with `Profile.allows` (the server's own search adds hits too).
"""
from __future__ import annotations

from typing import Callable

from mcp.types import CallToolResult

from mcp_nextcloud.server import profile
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.envelope import envelope
from mcp_nextcloud.server.errors import misuse
from mcp_nextcloud.server.tools.files.freshness import folder_missing
from mcp_nextcloud.server.tools.files.resolve import check_path

Listing = Callable[[str | None], CallToolResult]


def jailed(run: Listing, path: str | None, key: str, limit: int, cursor: str | None) -> CallToolResult:
    """`run(folder)` within the profile in force; `key` names the listed items (hits, files)."""
    p = profile.current()
    if p.folders is None:
        return run(path)
    folder = check_path(path) if path else None     # a malformed path is the same misuse with or without a jail
    scopes = p.scopes(folder)
    if not scopes:
        raise profile.as_missing(folder_missing(folder or "/"))
    if len(scopes) == 1:
        return _visible_only(run(scopes[0]), key)
    if cursor:
        raise misuse("This cursor belongs to a listing of one folder: pass path= that folder with it "
                     f"(one of {', '.join(str(s) for s in scopes)}).",
                     status=ToolStatus.BAD_CURSOR)
    return _merged([_visible_only(run(s), key) for s in scopes], key, limit, [str(s) for s in scopes])


def _visible_only(result: CallToolResult, key: str) -> CallToolResult:
    data = dict(result.structured_content or {})
    items = data.get(key) or []
    kept = list(profile.visible(items))
    if len(kept) == len(items):
        return result
    data[key] = kept
    if isinstance(data.get("total"), int):
        data["total"] = max(len(kept), data["total"] - (len(items) - len(kept)))
    return envelope(data)


def _merged(results: list[CallToolResult], key: str, limit: int, folders: list[str]) -> CallToolResult:
    """The first page of each folder's listing as one answer; paging goes folder by folder."""
    datas = [dict(r.structured_content or {}) for r in results]
    items = [item for d in datas for item in d.get(key) or []]
    out = dict(datas[0])
    out[key] = items[:limit]
    out["total"] = sum(int(d.get("total") or 0) for d in datas)
    out["truncated"] = len(items) > limit or any(d.get("truncated") for d in datas)
    out["nextCursor"] = None
    warnings = [w for d in datas for w in d.get("warnings") or []]
    out["warnings"] = list(dict.fromkeys(warnings)) or None
    if any(d.get("sources") for d in datas):
        out["sources"] = [s for d in datas for s in d.get("sources") or []]
    more = (f" Listed from {len(folders)} folders ({', '.join(folders)}), the first page of each: pass path= one "
            "of them to page through it.") if out["truncated"] else ""
    out["hint"] = ((datas[0].get("hint") or "") + more).strip() or None
    return envelope(out)
