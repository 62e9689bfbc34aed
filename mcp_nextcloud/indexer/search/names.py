"""Search files by name, MIME type, modification time and folder (index metadata only).

Names match case- and accent-insensitively as substrings of the path, with
`*` and `?` as wildcards ("*.pdf", "report*2024"). A LIKE over the folded path
column is a scan, but over metadata rows only: well under a millisecond per
thousand files (protocols.md §2.2: trigram is the fallback if this grows).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, cast

from mcp_nextcloud.indexer.search.grep import make_cursor, read_cursor
from mcp_nextcloud.indexer.models import FileRecord
from mcp_nextcloud.indexer.store.index import Index
from mcp_nextcloud.indexer.store.rows import FILE_COLUMNS, _row_to_record, account_clause, fold_name, prefix_clause

MAX_LIMIT = 200


@dataclass
class NameSearchResult:
    files: list[FileRecord] = field(default_factory=list)
    total: int = 0
    truncated: bool = False
    nextCursor: str | None = None
    tookMs: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "files": [{"path": f.path, "fileId": f.file_id, "size": f.size, "mtime": f.mtime, "mime": f.mime,
                       "kind": f.kind, "status": f.status} for f in self.files],
            "total": self.total,
            "truncated": self.truncated,
        }
        if self.nextCursor:
            d["nextCursor"] = self.nextCursor
        d["tookMs"] = self.tookMs
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)


def _like(pattern: str) -> str:
    """A name pattern as a LIKE pattern over the folded path (\\ escapes)."""
    folded = fold_name(pattern.strip())
    out = []
    for ch in folded:
        if ch in "%_\\":
            out.append("\\" + ch)
        elif ch == "*":
            out.append("%")
        elif ch == "?":
            out.append("_")
        else:
            out.append(ch)
    body = "".join(out)
    # A pattern with wildcards matches the file name as a whole; plain text anywhere in the path.
    if "*" in pattern or "?" in pattern:
        return "%/" + body
    return "%" + body + "%"


def search_names(index: Index, *, name: str | None = None, mime: str | None = None,
                 modified_after: float | None = None, path_prefix: str | None = None, limit: int = 20,
                 cursor: str | None = None, account_only: bool = False) -> NameSearchResult:
    """Files matching every given filter, newest first; see the module docstring.

    account_only: only files with a Nextcloud path (rows.account_clause), for the MCP server.
    """
    t0 = time.perf_counter()
    if not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive number, got {limit!r}")
    limit = min(limit, MAX_LIMIT)
    parts = ["names", name or "", mime or "", modified_after, path_prefix or ""]
    parts += ["account"] if account_only else []
    offset = read_cursor(index.cursor_secret(), parts, cursor, what="search") if cursor else 0
    cond, args = prefix_clause(path_prefix)
    conds = [cond, account_clause()] if account_only else [cond]
    if name and name.strip():
        conds.append("name_fold LIKE ? ESCAPE '\\'")
        args.append(_like(name))
    if mime and mime.strip():
        m = mime.strip().lower()
        if m.endswith("/") or m.endswith("/*"):
            conds.append("lower(mime) LIKE ?")
            args.append(m.rstrip("*").rstrip("/") + "/%")
        else:
            conds.append("lower(mime) = ?")
            args.append(m)
    if modified_after is not None:
        conds.append("mtime > ?")
        args.append(float(modified_after))
    where = " AND ".join(conds)
    con = index.conn()
    with con:
        rows = con.execute(
            f"SELECT {FILE_COLUMNS}, count(*) OVER () FROM files WHERE {where} "
            f"ORDER BY mtime DESC, id LIMIT ? OFFSET ?", [*args, limit, offset]).fetchall()
        total = cast(int, rows[0][-1] if rows else (
            con.execute(f"SELECT count(*) FROM files WHERE {where}", args).fetchall()[0][0] if offset else 0))
    res = NameSearchResult(files=[_row_to_record(r[:-1]) for r in rows], total=total)
    if offset + len(rows) < total:
        res.truncated = True
        res.nextCursor = make_cursor(index.cursor_secret(), parts, offset + len(rows))
    res.tookMs = round((time.perf_counter() - t0) * 1000, 3)
    return res
