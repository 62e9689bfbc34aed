"""Ranking for grep: the top chunks by bm25, grouped into files, without materialising every match.

`ORDER BY rank LIMIT n` lets FTS5/SQLite keep only the best n rows instead
of sorting every matching chunk, which is what made common and prefix terms
slow when every match was grouped by file first (benchmarks/). Files are
taken in the order of their best chunk; when the top n chunks name too few
files, n grows. Counting matching files stops at COUNT_CAP: past it the
total is a lower bound and says so (`estimate`).
"""
from __future__ import annotations

from dataclasses import dataclass

from .schema import CHUNK_BITS

COUNT_CAP = 1000             # matching files counted exactly up to here; past it the total is "at least"
FIRST_CHUNKS = 40            # chunks read for the first try; grows x4 while too few files come out


@dataclass(frozen=True)
class Ranked:
    """A file in ranked order: its best chunk and that chunk's bm25 (lower is better)."""

    fid: int
    best: float
    rid: int


def _chunk_sql(filt: str) -> str:
    if filt:
        return (f"SELECT chunks_fts.rowid, chunks_fts.rank FROM chunks_fts JOIN files f "
                f"ON f.id = (chunks_fts.rowid >> {CHUNK_BITS}) WHERE chunks_fts MATCH ? AND {filt} "
                f"ORDER BY chunks_fts.rank LIMIT ?")
    return "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?"


def top_files(con, expr: str, filt: str, fargs: list, want: int, exclude: set[int] | frozenset = frozenset()
              ) -> list[Ranked]:
    """Up to `want` files matching `expr` (and the filters), best first, skipping `exclude`.

    Fewer than `want` come back only when no more files match.
    """
    n = max(FIRST_CHUNKS, want * 4)  # read at call time: tests shrink it to exercise the growth
    sql = _chunk_sql(filt)
    while True:
        rows = con.execute(sql, [expr, *fargs, n]).fetchall()
        out: list[Ranked] = []
        seen: set[int] = set()
        # Equal ranks keep rowid order, so pages are stable across calls.
        for rid, score in sorted(rows, key=lambda r: (r[1], r[0])):
            fid = rid >> CHUNK_BITS
            if fid in seen or fid in exclude:
                continue
            seen.add(fid)
            out.append(Ranked(fid, score, rid))
        if len(out) >= want or len(rows) < n:
            return out[:want]
        n *= 4


def count_files(con, expr: str, filt: str, fargs: list, cap: int | None = None) -> tuple[int, bool]:
    """(matching files, estimate): exact up to `cap` (COUNT_CAP); past it (cap, True), a lower bound."""
    cap = COUNT_CAP if cap is None else cap
    if filt:
        inner = (f"SELECT DISTINCT (chunks_fts.rowid >> {CHUNK_BITS}) AS fid FROM chunks_fts JOIN files f "
                 f"ON f.id = (chunks_fts.rowid >> {CHUNK_BITS}) WHERE chunks_fts MATCH ? AND {filt} LIMIT ?")
    else:
        inner = f"SELECT DISTINCT (rowid >> {CHUNK_BITS}) FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?"
    n = con.execute(f"SELECT count(*) FROM ({inner})", [expr, *fargs, cap + 1]).fetchall()[0][0]
    return (cap, True) if n > cap else (n, False)


def other_chunk_matches(con, expr: str, fid: int, rid: int) -> bool:
    """Whether a chunk of file `fid` other than `rid` matches `expr` (a rowid-range probe, stops at 2)."""
    lo, hi = fid << CHUNK_BITS, ((fid + 1) << CHUNK_BITS) - 1
    rows = con.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid BETWEEN ? AND ? LIMIT 2",
                       [expr, lo, hi]).fetchall()
    return any(r[0] != rid for r in rows)
