"""Ranking for grep: the newest matching chunks ranked by bm25 in one pass, grouped into files.

bm25 costs about 2 us per matching chunk, so a term found in tens of
thousands of chunks cannot be ranked whole within the budget (FTS5's own
`ORDER BY rank` also sorts every match). One statement walks the matching
chunks newest first (FTS5's native rowid order, so LIMIT stops the walk)
and computes bm25 only for the RANK_WINDOW chunks it walks; Python keeps the
best per file. The same pass says which files have more than one matching
chunk (so `more` needs no extra query) and how many files match (exact when
the pass saw every match, else "at least"). A window too small for the page
asked for grows by tiers, so the order of the files never depends on the page.
Within a tier each chunk's bm25 is scaled by its file's focus (focus.py) and name (titles.py).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Callable, NamedTuple, Sequence, cast

import apsw

from mcp_nextcloud.indexer.search import focus
from mcp_nextcloud.indexer.store.schema import CHUNK_BITS


RANK_WINDOW = 2000           # matching chunks ranked by bm25 at most (the newest); widened when a page needs it
# bm25 first counts the rows of every phrase in the expression (a walk of each
# posting list), so no ranked expression holds more phrases than this: query.py
# cuts a tier's word-start expansion and word forms to the words closest to the
# typed one (the full expansion follows as a last tier that only adds files).
# Only a very long query (over this many terms) is still listed newest first.
MAX_RANKED_PHRASES = 12


_SCORE = itemgetter(1)


class Ranked(NamedTuple):
    """A file in ranked order: its best chunk and that chunk's bm25 (lower is better)."""

    fid: int
    best: float
    rid: int


@dataclass
class Scan:
    """The newest matching chunks of one expression, ranked: per-file chunk counts and where the walk stopped."""

    expr: str
    window: int
    per_file: Counter[int] = field(default_factory=Counter)
    floor: int | None = None     # lowest chunk rowid walked; None when the walk saw every match
    rows: list[tuple[int, float]] = field(default_factory=list)   # (chunk rowid, bm25), newest first

    ranked: bool = True
    below: bool = False     # the walk started at a floor (a narrower window than the expression's own)

    @property
    def complete(self) -> bool:
        return self.floor is None

    def matches(self, expr: str, window: int, ranked: bool) -> bool:
        """Whether this scan is what scan(expr, window=window, ranked=ranked) without a floor would return
        (with the same filters: the caller's to keep)."""
        return (self.expr, self.window, self.ranked, self.below) == (expr, window, ranked, False)


def _window_sql(filt: str, ranked: bool = True, floor: bool = False) -> str:
    score = "bm25(chunks_fts)" if ranked else "0.0"
    above = " AND chunks_fts.rowid >= ?" if floor else ""
    if filt:
        return (f"SELECT chunks_fts.rowid, {score} FROM chunks_fts JOIN files f "
                f"ON f.id = (chunks_fts.rowid >> {CHUNK_BITS}) WHERE chunks_fts MATCH ?{above} AND {filt} "
                f"ORDER BY chunks_fts.rowid DESC LIMIT ?")
    return f"SELECT rowid, {score} FROM chunks_fts WHERE chunks_fts MATCH ?{above} ORDER BY rowid DESC LIMIT ?"


def scan(con: apsw.Connection, expr: str, filt: str = "", fargs: Sequence[apsw.SQLiteValue] | None = None,
         window: int | None = None, ranked: bool = True, floor: int | None = None) -> Scan:
    """The newest `window` (RANK_WINDOW) matching chunks (within the filters) with their bm25, in one pass.

    One pass matters for prefix queries: FTS5 merges the doclists of every
    term with the prefix each time a statement starts (about 5 ms at 10k
    documents), so walking and ranking separately would pay it twice.
    ranked=False skips bm25 (every score 0): enough to count files and say which have several chunks.
    `floor`: only chunks at or above this rowid (the window of a broader expression).
    """
    window = RANK_WINDOW if window is None else window
    above: list[int] = [] if floor is None else [floor]
    # The SELECT's two columns are a chunk's rowid (INTEGER) and its bm25 (REAL): apsw types a row's cells only
    # as any SQLite value.
    rows = cast(list[tuple[int, float]], con.execute(_window_sql(filt, ranked, floor is not None),
                                                     [expr, *above, *(fargs or []), window + 1]).fetchall())
    walked = rows[:window]
    out = Scan(expr, window, Counter([rid >> CHUNK_BITS for rid, _ in walked]), rows=walked, ranked=ranked,
               below=floor is not None)
    if len(rows) > window:
        out.floor = rows[window - 1][0]
    return out


class TopFiles(NamedTuple):
    """Ranked files and the scan they were ranked within (`scan.floor` set: only its window was ranked)."""

    files: list[Ranked]
    scan: Scan


def phrases(expr: str) -> int:
    """How many FTS5 phrases `expr` (built by query.py) holds: quoted strings, those joined by " + " being one."""
    return expr.count('"') // 2 - expr.count('" + "')


def ranked_cheaply(expr: str) -> bool:
    """Whether bm25 over `expr` stays within the budget (see MAX_RANKED_PHRASES)."""
    return phrases(expr) <= MAX_RANKED_PHRASES


def top_files(con: apsw.Connection, expr: str, filt: str, fargs: Sequence[apsw.SQLiteValue], want: int,
              exclude: set[int] | frozenset[int] = frozenset(),
              floor: int | None = None, boost: Callable[[set[int]], dict[int, float]] | None = None,
              walked: Scan | None = None) -> TopFiles:
    """Up to `want` files matching `expr` (and the filters), best first, skipping `exclude`.

    Fewer than `want` come back only when no more files match. The order
    does not depend on `want`, so cursor pages agree: the newest RANK_WINDOW
    chunks are ranked first, then (only when a page needs more files) the
    next 3x RANK_WINDOW, and so on, each tier by bm25 after the one before.
    `floor` limits the walk to chunks at or above that rowid. `boost` gives files their bm25 factor
    (titles.py: a file named for the query's words). `walked`: the first window's scan when the caller
    already made it (same expression, filters and ranking; grep's broad walk of the last tier).
    """
    base = RANK_WINDOW  # read at call time: tests shrink it
    window = base
    ranked = ranked_cheaply(expr)
    while True:
        if walked is not None and window == base and floor is None and walked.matches(expr, base, ranked):
            sc = walked
        else:
            sc = scan(con, expr, filt, fargs, window, ranked=ranked, floor=floor)
        out: list[Ranked] = []
        seen: set[int] = set(exclude)
        lo, tier = 0, base
        # Each file's matching chunks among the tiers walked so far (focus.py): not the whole window's, which
        # grows with the page asked for, so the order within a tier is the same for every page.
        walked_chunks: Counter[int] = sc.per_file if len(sc.rows) <= base else Counter()
        while lo < len(sc.rows) and len(out) < want:
            hi = min(len(sc.rows), tier)
            rows = sc.rows[lo:hi]
            if ranked:
                if walked_chunks is not sc.per_file:
                    walked_chunks.update(rid >> CHUNK_BITS for rid, _ in rows)
                rows = _scaled(con, rows, walked_chunks, boost)
            # Best bm25 first; equal ranks keep rowid order, so pages are stable across calls. The rows come
            # newest (highest rowid) first, so a stable sort of them reversed on the score alone is that order,
            # at a quarter of the cost of a (score, rowid) key (1.1 ms for 2,000 rows, measured).
            for rid, score in sorted(reversed(rows), key=_SCORE):
                fid = rid >> CHUNK_BITS
                if fid in seen:
                    continue
                seen.add(fid)
                out.append(Ranked(fid, score, rid))
                if len(out) >= want:
                    break
            lo, tier = hi, tier * 4
        if len(out) >= want or sc.complete:
            return TopFiles(out, sc)
        window *= 4


def _scaled(con: apsw.Connection, rows: list[tuple[int, float]], matching: Counter[int],
            boost: Callable[[set[int]], dict[int, float]] | None) -> list[tuple[int, float]]:
    """The rows' bm25 scaled by their file's focus (focus.py) and name boost (titles.py)."""
    fids = {rid >> CHUNK_BITS for rid, _ in rows}
    factor = focus.factors(con, matching, fids)
    for fid, named in (boost(fids) if boost is not None else {}).items():
        factor[fid] *= named
    return [(rid, s * factor[rid >> CHUNK_BITS]) for rid, s in rows]


def count_files(sc: Scan, excluded: set[int] | frozenset[int] = frozenset()) -> tuple[int, bool]:
    """(matching files, estimate): exact when the scan saw every match, else at least the files it saw."""
    return len(sc.per_file.keys() - excluded), not sc.complete


def other_chunk_matches(con: apsw.Connection, sc: Scan, fid: int, rid: int) -> bool:
    """Whether a chunk of file `fid` other than `rid` matches: from the scan, else a rowid-range probe.

    The scan saw every matching chunk of a file unless the file straddles its floor.
    """
    if sc.per_file.get(fid, 0) >= 2:
        return True
    lo, hi = fid << CHUNK_BITS, ((fid + 1) << CHUNK_BITS) - 1
    if sc.floor is None or sc.floor <= lo:
        return False
    rows = con.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid BETWEEN ? AND ? LIMIT 2",
                       [sc.expr, lo, hi]).fetchall()
    return any(r[0] != rid for r in rows)


def files_matching(con: apsw.Connection, expr: str, cap: int) -> tuple[set[int], bool]:
    """Ids of the files with a chunk matching `expr` (walking at most `cap` chunks); and whether capped."""
    rows = con.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?", [expr, cap + 1]).fetchall()
    # r[0]: a rowid, an INTEGER (apsw types a cell only as any SQLite value).
    return {cast(int, r[0]) >> CHUNK_BITS for r in rows[:cap]}, len(rows) > cap
