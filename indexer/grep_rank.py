"""Ranking for grep: the top chunks by bm25, grouped into files, without ranking every match.

bm25 costs about 2 us per matching chunk (5 us for a prefix), so a term
found in tens of thousands of chunks cannot be ranked whole within the
budget. A scan walks the matching chunk rowids newest first (no bm25: a
fraction of the cost) up to RANK_WINDOW chunks; only those are ranked, with
SQLite's LIMIT sorter keeping a heap of the best n. The same scan says which
files have more than one matching chunk (so `more` needs no extra query)
and how many files match (exact when the scan saw every match, else "at
least"). When the window is too small for a page it grows.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .schema import CHUNK_BITS

COUNT_CAP = 1000             # with filters: matching files counted exactly up to here, past it "at least"
FIRST_CHUNKS = 40            # chunks read for the first try; grows x4 while too few files come out
RANK_WINDOW = 2000           # matching chunks ranked by bm25 at most (the newest); widened when a page needs it


@dataclass(frozen=True)
class Ranked:
    """A file in ranked order: its best chunk and that chunk's bm25 (lower is better)."""

    fid: int
    best: float
    rid: int


@dataclass
class Scan:
    """The newest matching chunks of one expression: matching chunks per file, and where ranking stops."""

    expr: str
    window: int
    per_file: Counter = field(default_factory=Counter)
    floor: int | None = None     # lowest chunk rowid ranked; None when the scan saw every match

    @property
    def complete(self) -> bool:
        return self.floor is None


def scan(con, expr: str, window: int | None = None) -> Scan:
    """Walk up to `window` (RANK_WINDOW) matching chunk rowids, newest first, without ranking them."""
    window = RANK_WINDOW if window is None else window
    rows = [r[0] for r in con.execute(
        "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid DESC LIMIT ?", [expr, window + 1])]
    out = Scan(expr, window, Counter(r >> CHUNK_BITS for r in rows[:window]))
    if len(rows) > window:
        out.floor = rows[window - 1]
    return out


def _chunk_sql(filt: str, floor: bool) -> str:
    # bm25() with SQLite's LIMIT sorter keeps a heap of n rows; FTS5's own `ORDER BY rank` sorts every match.
    cond = " AND chunks_fts.rowid >= ?" if floor else ""
    if filt:
        return (f"SELECT chunks_fts.rowid, bm25(chunks_fts) AS s FROM chunks_fts JOIN files f "
                f"ON f.id = (chunks_fts.rowid >> {CHUNK_BITS}) WHERE chunks_fts MATCH ?{cond} AND {filt} "
                f"ORDER BY s LIMIT ?")
    return f"SELECT rowid, bm25(chunks_fts) AS s FROM chunks_fts WHERE chunks_fts MATCH ?{cond} ORDER BY s LIMIT ?"


@dataclass
class TopFiles:
    """Ranked files and the scan they were ranked within (`scan.floor` set: only its window was ranked)."""

    files: list[Ranked]
    scan: Scan


def top_files(con, expr: str, filt: str, fargs: list, want: int, exclude: set[int] | frozenset = frozenset()
              ) -> TopFiles:
    """Up to `want` files matching `expr` (and the filters), best first, skipping `exclude`.

    Fewer than `want` come back only when no more files match.
    """
    n = max(FIRST_CHUNKS, want * 4)  # read at call time: tests shrink it to exercise the growth
    sc = scan(con, expr, max(RANK_WINDOW, n))
    while True:
        args = [expr, *([sc.floor] if sc.floor is not None else []), *fargs, n]
        rows = con.execute(_chunk_sql(filt, sc.floor is not None), args).fetchall()
        out: list[Ranked] = []
        seen: set[int] = set()
        # Equal ranks keep rowid order, so pages are stable across calls.
        for rid, score in sorted(rows, key=lambda r: (r[1], r[0])):
            fid = rid >> CHUNK_BITS
            if fid in seen or fid in exclude:
                continue
            seen.add(fid)
            out.append(Ranked(fid, score, rid))
        if len(out) >= want or (len(rows) < n and sc.complete):
            return TopFiles(out[:want], sc)
        if len(rows) < n:  # the window ran out before the page filled: rank a wider one
            sc = scan(con, expr, sc.window * 4)
        else:
            n *= 4


def count_files(con, sc: Scan, filt: str, fargs: list, cap: int | None = None) -> tuple[int, bool]:
    """(matching files, estimate). Without filters the scan tells: exact when it saw every match, else at least
    the files it saw. With filters a capped count: exact up to `cap` (COUNT_CAP), past it (cap, True)."""
    if not filt:
        return len(sc.per_file), not sc.complete
    cap = COUNT_CAP if cap is None else cap
    inner = (f"SELECT DISTINCT (chunks_fts.rowid >> {CHUNK_BITS}) AS fid FROM chunks_fts JOIN files f "
             f"ON f.id = (chunks_fts.rowid >> {CHUNK_BITS}) WHERE chunks_fts MATCH ? AND {filt} LIMIT ?")
    n = con.execute(f"SELECT count(*) FROM ({inner})", [sc.expr, *fargs, cap + 1]).fetchall()[0][0]
    return (cap, True) if n > cap else (n, False)


def other_chunk_matches(con, sc: Scan, fid: int, rid: int) -> bool:
    """Whether a chunk of file `fid` other than `rid` matches: from the scan, else a rowid-range probe.

    The scan saw every matching chunk of a file unless the file straddles its floor (or lies below it).
    """
    if sc.per_file.get(fid, 0) >= 2:
        return True
    lo, hi = fid << CHUNK_BITS, ((fid + 1) << CHUNK_BITS) - 1
    if sc.complete or sc.floor is None or sc.floor <= lo:
        return False
    rows = con.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid BETWEEN ? AND ? LIMIT 2",
                       [sc.expr, lo, hi]).fetchall()
    return any(r[0] != rid for r in rows)
