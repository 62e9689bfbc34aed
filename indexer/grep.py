"""grep over the index: FTS5 finds candidate chunks, `reader.find` makes the passages.

Ranking is bm25 over chunk rows, grouped by file (a file scores as its best
chunk; the same SQL returns that chunk's rowid). Passages come from
`reader.find` run only on that best chunk of each top file (joined with the
next one when a match straddles the cut), so they cost a few thousand
characters per file, never a whole-document scan, and every offset is a
`Document.text` offset that files_read accepts. Measured: p50 6.4 ms for a
ranked top-10 with passages at 10k documents / 122 MB (benchmarks/).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reader.document import Document
from reader.find import find

from .query import ParsedQuery, expand, parse
from .schema import CHUNK_BITS
from .store import FILE_COLUMNS, _row_to_record, prefix_clause

if TYPE_CHECKING:  # pragma: no cover
    from .store import Index

PASSAGES_PER_FILE = 3
CONTEXT = 120                # characters of context each side of a match
MAX_LIMIT = 100
WARN_NAMES = 5


@dataclass
class Passage:
    """One match: `offset`/`length` index Document.text (what files_read accepts); `passage` is its context."""

    offset: int
    length: int
    text: str
    passage: str
    page: int
    line: int

    def to_dict(self) -> dict[str, Any]:
        return {"offset": self.offset, "length": self.length, "text": self.text, "passage": self.passage,
                "page": self.page, "line": self.line}


@dataclass
class GrepHit:
    """A matching file. `matchCount` is a lower bound: matches in its best ~3k-character
    chunk plus one for each other matching chunk (counting all would read the whole file)."""

    path: str
    fileId: int | None
    kind: str | None
    mtime: float
    size: int
    score: float
    passages: list[Passage] = field(default_factory=list)
    matchCount: int = 0
    source: str = "local"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "fileId": self.fileId, "kind": self.kind, "mtime": self.mtime,
                "size": self.size, "score": self.score, "matchCount": self.matchCount,
                "passages": [p.to_dict() for p in self.passages]}


@dataclass
class GrepResult:
    """Ranked hits, the number of matching files, paging, and what the index could not see."""

    query: str
    hits: list[GrepHit] = field(default_factory=list)
    total: int = 0
    truncated: bool = False
    nextCursor: str | None = None
    warnings: list[str] = field(default_factory=list)
    tookMs: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"query": self.query, "hits": [h.to_dict() for h in self.hits], "total": self.total,
                             "truncated": self.truncated}
        if self.nextCursor:
            d["nextCursor"] = self.nextCursor
        if self.warnings:
            d["warnings"] = self.warnings
        d["tookMs"] = self.tookMs
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)


# -- cursors ---------------------------------------------------------------
def _binding(secret: bytes, parts: list[Any]) -> str:
    msg = json.dumps(parts, separators=(",", ":"), sort_keys=True, default=str).encode()
    return hmac.new(secret, msg, hashlib.sha256).hexdigest()[:16]


def make_cursor(secret: bytes, parts: list[Any], offset: int) -> str:
    """Opaque cursor: the next offset plus an HMAC of the query, filters and scope."""
    raw = json.dumps({"o": offset, "h": _binding(secret, parts)}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(secret: bytes, parts: list[Any], cursor: str, what: str = "query") -> int:
    """The offset a cursor carries; ValueError when it was made for another query / filters / index."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
        offset, mac = int(data["o"]), str(data["h"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            "cursor is not one this index issued: pass the nextCursor of the previous answer unchanged, "
            "or drop cursor to start from the first page; do not retry with this cursor"
        ) from exc
    if offset < 0 or not hmac.compare_digest(mac, _binding(secret, parts)):
        raise ValueError(
            f"cursor belongs to another {what} (or other filters or account): repeat the exact same {what} "
            f"and filters with it, or drop cursor to start over; do not retry with this cursor"
        )
    return offset


# -- warnings --------------------------------------------------------------
def _iso(ts: float | None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts)) if ts else "never"


def coverage_warnings(index: "Index", path_prefix: str | None, total: int) -> list[str]:
    """What the answer cannot see: pending / failed files under the path and when indexing last ran."""
    con = index.conn()
    cond, args = prefix_clause(path_prefix)
    where = f"{cond} AND status != 'indexed'"
    counts = dict(con.execute(f"SELECT status, count(*) FROM files WHERE {where} GROUP BY status", args))
    scope = "/" + (path_prefix or "").strip("/")
    out: list[str] = []
    if counts.get("pending"):
        names = [r[0] for r in con.execute(
            f"SELECT path FROM files WHERE {where} AND status='pending' ORDER BY path LIMIT {WARN_NAMES}", args)]
        out.append(f"{counts['pending']} file(s) under {scope} are not indexed yet and were not searched "
                   f"(e.g. {', '.join(names)}): run the sync or index again, or read them with files_read")
    failed = sum(n for s, n in counts.items() if s != "pending")
    if failed:
        rows = con.execute(
            f"SELECT path, status, reason FROM files WHERE {where} AND status!='pending' ORDER BY path "
            f"LIMIT {WARN_NAMES}", args).fetchall()
        named = "; ".join(f"{p} ({s}: {r})" if r else f"{p} ({s})" for p, s, r in rows)
        kinds = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()) if s != "pending")
        out.append(f"{failed} file(s) under {scope} have no searchable text ({kinds}): {named}")
    last = con.execute("SELECT max(indexed_at) FROM files").fetchall()[0][0]
    if total == 0:
        anything = con.execute(f"SELECT 1 FROM files WHERE {cond} LIMIT 1", args).fetchall()
        if not anything:
            out.append(f"nothing is indexed under {scope}: index or sync that folder first "
                       "(mcp-nextcloud index add FOLDER), or check the path")
    if out or total == 0:
        out.append(f"index last updated {_iso(last)}")
    return out


# -- grep ------------------------------------------------------------------
def _filters(path_prefix: str | None, kinds: list[str] | None, modified_after: float | None) -> tuple[str, list]:
    conds, args = [], []
    if path_prefix and path_prefix.strip("/"):
        c, a = prefix_clause(path_prefix, "f.path")
        conds.append(c)
        args += a
    if kinds:
        conds.append(f"f.kind IN ({','.join('?' * len(kinds))})")
        args += [k.lower() for k in kinds]
    if modified_after is not None:
        conds.append("f.mtime > ?")
        args.append(float(modified_after))
    return " AND ".join(conds), args


def _rank(con, expr: str, filt: str, fargs: list, limit: int, offset: int) -> list[tuple[int, float, int, int, int]]:
    """(file rowid, best bm25, best chunk rowid, matching chunks, total files) for one page of ranked files."""
    # `rank` (bm25) is read in a subquery: FTS5 auxiliary functions cannot sit inside an aggregate.
    # With min(), SQLite takes the bare column `rid` from the row holding the minimum: the best chunk.
    hits = f"SELECT rowid >> {CHUNK_BITS} AS fid, rowid AS rid, rank AS s FROM chunks_fts WHERE chunks_fts MATCH ?"
    if filt:
        sql = (f"SELECT h.fid, min(h.s) AS best, h.rid, count(*), count(*) OVER () FROM ({hits}) h "
               f"JOIN files f ON f.id = h.fid WHERE {filt} GROUP BY h.fid ORDER BY best, h.fid LIMIT ? OFFSET ?")
        args = [expr, *fargs, limit, offset]
    else:
        sql = (f"SELECT fid, min(s) AS best, rid, count(*), count(*) OVER () FROM ({hits}) "
               f"GROUP BY fid ORDER BY best, fid LIMIT ? OFFSET ?")
        args = [expr, limit, offset]
    return con.execute(sql, args).fetchall()


def _find_any(sub: Document, pq: ParsedQuery, words: bool = True):
    """reader.find with the query as typed, else its bare words, else the variant that hit in FTS.

    Punctuation is literal for reader.find but not for the word index, so a
    query like '"(AND) OR:' can hit in FTS and still need its bare words here.
    """
    tried = set()
    res = None
    # Last resort: the longest single word, so a hit always shows where it is.
    longest = sorted(pq.tokens, key=len, reverse=True)[:1] if words else []
    # reader.find matches whole words; a prefix query ("config*") must say so to it too.
    star = "*" if pq.prefix else ""
    for q in [pq.find_text, " ".join(pq.tokens), *(" ".join(v) for v in pq.variants), *longest]:
        if q in tried:
            continue
        tried.add(q)
        try:
            res = find(sub, q + star, limit=PASSAGES_PER_FILE, context=CONTEXT)
        except ValueError:  # nothing searchable in this form (only punctuation)
            continue
        if res.total:
            return res
    return res if res is not None else find(sub, " ".join(pq.tokens) + star, limit=PASSAGES_PER_FILE,
                                            context=CONTEXT)


def _load_chunks(con, ids: list[int]) -> dict[int, tuple[int, int, str]]:
    """{chunk rowid: (start, line, text)} for the given chunk rowids, in one query."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {cid: (start, line, zlib.decompress(body).decode("utf-8")) for cid, start, line, body in
            con.execute(f"SELECT id, start, line, body FROM chunks WHERE id IN ({marks})", ids)}


def _passages_in(pq: ParsedQuery, start: int, line: int, text: str, pages: list[int],
                 kind: str | None, words: bool = True) -> tuple[list[Passage], int]:
    sub = Document(text=text, kind=kind or "text")
    res = _find_any(sub, pq, words)
    page_doc = Document(text="", kind=kind or "text", pages=pages or [0])
    out = [Passage(offset=start + m.offset, length=m.length, text=m.text, passage=m.passage,
                   page=page_doc.page_of(start + m.offset), line=line + m.line - 1) for m in res.matches]
    return out, res.total


def _hits(index: "Index", con, pq: ParsedQuery, ranked: list[tuple], result: GrepResult) -> None:
    """Build the hits of one page: records, pages and best chunks fetched in three queries.

    Passages come from the best-ranked chunk of each file (a few thousand
    characters for reader.find to fold), joined with its neighbour only when a
    match straddles the cut. matchCount is a lower bound: the matches in that
    chunk plus one per other matching chunk.
    """
    if not ranked:
        return
    fids = [r[0] for r in ranked]
    marks = ",".join("?" * len(fids))
    recs = {r[0]: _row_to_record(r) for r in con.execute(
        f"SELECT {FILE_COLUMNS} FROM files WHERE id IN ({marks})", fids)}
    pages = {i: json.loads(pg) if pg else [0] for i, pg in con.execute(
        f"SELECT id, json_extract(meta, '$.pages') FROM docs WHERE id IN ({marks})", fids)}
    chunks = _load_chunks(con, [r[2] for r in ranked])
    for fid, score, rid, n_chunks, _total in ranked:
        rec = recs.get(fid)
        if rec is None or rid not in chunks:
            continue
        start, line, text = chunks[rid]
        pg = pages.get(fid, [0])
        passages, count = _passages_in(pq, start, line, text, pg, rec.kind, words=False)
        if not count:
            # The match may straddle the cut: look again with the next chunk joined on,
            # and only then settle for showing one of the query's words.
            nxt = _load_chunks(con, [rid + 1]).get(rid + 1)
            joined = text + nxt[2] if nxt is not None else text
            passages, count = _passages_in(pq, start, line, joined, pg, rec.kind, words=False)
            if not count:
                passages, count = _passages_in(pq, start, line, joined, pg, rec.kind)
        result.hits.append(GrepHit(path=rec.path, fileId=rec.file_id, kind=rec.kind, mtime=rec.mtime,
                                   size=rec.size, score=round(-score, 4), passages=passages[:PASSAGES_PER_FILE],
                                   matchCount=max(count, 1) + n_chunks - 1, source=rec.source))


def grep(index: "Index", query: str, *, path_prefix: str | None = None, kinds: list[str] | None = None,
         modified_after: float | None = None, limit: int = 10, cursor: str | None = None,
         scope: str = "") -> GrepResult:
    """Ranked files containing `query`, each with passages; see the module docstring."""
    t0 = time.perf_counter()
    if not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive number, got {limit!r}")
    limit = min(limit, MAX_LIMIT)
    con = index.conn()
    parts = [query, path_prefix or "", sorted(kinds or []), modified_after, scope]
    offset = read_cursor(index.cursor_secret(), parts, cursor) if cursor else 0
    pq = parse(con, query)
    result = GrepResult(query=query)
    with con:  # one read snapshot for ranking, passages and warnings
        expand(con, pq)
        expr = pq.fts()
        filt, fargs = _filters(path_prefix, kinds, modified_after)
        ranked = _rank(con, expr, filt, fargs, limit, offset)
        if ranked:
            result.total = ranked[0][4]
        elif offset:
            # Past the last page: still report the total.
            result.total = len(_rank(con, expr, filt, fargs, 1_000_000, 0))
        _hits(index, con, pq, ranked, result)
        if offset + len(ranked) < result.total:
            result.truncated = True
            result.nextCursor = make_cursor(index.cursor_secret(), parts, offset + len(ranked))
        result.warnings = coverage_warnings(index, path_prefix, result.total)
    result.tookMs = round((time.perf_counter() - t0) * 1000, 3)
    return result
