"""Meaning search for grep: when a query is a question, rank files by embedding similarity and fuse with words.

When (`wanted`): a plain query of at least QUESTION_WORDS words (or two and a
question mark). Quoted phrases, OR, exclusions, single words and identifiers
(terms with inner punctuation: 3.11, node.js, foo_bar) stay keyword-only: they
ask for exactly those characters, and their answers must not change.

How: the question's vector against every fresh window vector (one float32
matrix per index and process, reloaded when the vectors' generation moves),
the best window per file, files within MARGIN of the best similarity (and
above MIN_SIMILARITY) kept. Files holding the words as the phrase lead in
keyword order (grep.py: such a query was meant as words); the rest is fused by
reciprocal rank fusion over files (`fuse`, K_RRF): a file found both ways ranks
first, ties go to the keyword rank (measured: benchmarks/test_meaning_bench.py,
keyword queries keep their top hit).

Known limit (measured on the benchmark corpus): multilingual-e5-small favours
the question's language, so a terse French question can rank a French file on
another subject just above the English one it is about (recall@10 holds; @1 is
where it shows).
"""
from __future__ import annotations

import re
import threading
from typing import Any, NamedTuple

from mcp_nextcloud.indexer.search.passages import MAX_PASSAGE, Passage
from mcp_nextcloud.indexer.search.query import ParsedQuery
from mcp_nextcloud.indexer.store import vectors
from mcp_nextcloud.indexer.store.index import Index
from mcp_nextcloud.indexer.store.schema import CHUNK_BITS

QUESTION_WORDS = 3       # words that make a plain query a question
CANDIDATES = 256         # best windows looked at first (more when filters leave too few files)
MARGIN = 0.07            # files within this cosine of the best one are kept (e5 scores sit in 0.7..0.9)
MIN_SIMILARITY = 0.78    # below this nothing is related (measured: unrelated text scores ~0.70-0.76)
K_RRF = 60               # reciprocal rank fusion's constant (Cormack et al.; flat enough for 10-50 hits)

# Inner punctuation (not hyphens or apostrophes: "qu'un", "e-mail" are words) or an underscore.
_IDENTIFIER = re.compile(r"[^\w\s\u2010\u2011'\u2019-]|_")
_cache: dict[str, vectors.Matrix] = {}
_cache_lock = threading.Lock()


def wanted(pq: ParsedQuery) -> bool:
    """True when the query reads as a question of several words (see the module docstring)."""
    if not pq.plain or pq.negated or any(g[0].exact for g in pq.groups):
        return False
    words = [g[0].text for g in pq.groups]
    if any(_IDENTIFIER.search(w.strip("?!.,;:")) for w in words):
        return False
    return len(words) >= QUESTION_WORDS or (len(words) >= 2 and pq.raw.rstrip().endswith("?"))


def _one_blas_thread() -> None:
    """Scan with one BLAS thread (once per process).

    Measured on 2 shared cores at 10k documents (15.6k vectors): OpenBLAS's two threads take 16 ms for the
    matrix-vector product that one thread does in 1.5 ms (they spin against each other and the load).
    """
    global _blas_limited
    if not _blas_limited:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1, user_api="blas")
        _blas_limited = True


_blas_limited = False


def _matrix(index: Index, con: Any) -> vectors.Matrix | None:
    """This index's vectors (cached per process until they change); None while there are none."""
    if not vectors.exists(con):
        return None
    gen = vectors.generation(con)
    key = str(index.path)
    with _cache_lock:
        m = _cache.get(key)
    if m is None or m.generation != gen:
        m = vectors.load_matrix(con)
        with _cache_lock:
            _cache[key] = m
    return m if len(m.ids) else None


class SemHit(NamedTuple):
    """A file found by meaning: its best window's chunk rowid and the cosine similarity."""

    fid: int
    rid: int
    sim: float


def search(index: Index, con: Any, query: str, filt: str, fargs: list, want: int) -> list[SemHit]:
    """Up to `want` files related to `query`, best first, among files the filters `filt` allow."""
    m = _matrix(index, con)
    if m is None:
        return []
    import numpy as np

    from mcp_nextcloud.indexer.embedding import embed_query

    _one_blas_thread()
    sims = m.vecs @ embed_query(query)
    n = CANDIDATES
    while True:
        top = np.argpartition(-sims, min(n, len(sims)) - 1)[:n] if n < len(sims) else np.arange(len(sims))
        top = top[np.argsort(-sims[top])]
        best: dict[int, SemHit] = {}
        for i in top:
            rid = int(m.ids[i])
            fid = rid >> CHUNK_BITS
            if fid not in best:
                best[fid] = SemHit(fid, rid, float(sims[i]))
        allowed = _allowed(con, list(best), filt, fargs)
        hits = [h for h in best.values() if h.fid in allowed]
        if len(hits) >= want or n >= len(sims):
            break
        n *= 4
    if not hits:
        return []
    floor = max(MIN_SIMILARITY, hits[0].sim - MARGIN)
    return [h for h in hits if h.sim >= floor][:want]


def _allowed(con: Any, fids: list[int], filt: str, fargs: list) -> set[int]:
    if not fids:
        return set()
    marks = ",".join("?" * len(fids))
    where = f"f.id IN ({marks}) AND f.status='indexed'" + (f" AND {filt}" if filt else "")
    return {int(r[0]) for r in con.execute(f"SELECT f.id FROM files f WHERE {where}", [*fids, *fargs])}


def fuse(words: list[int], meaning: list[int]) -> list[tuple[int, str]]:
    """Reciprocal rank fusion of two file rankings: [(file, "words" | "meaning" | "both")], best first."""
    score: dict[int, float] = {}
    for ranking in (words, meaning):
        for r, fid in enumerate(ranking):
            score[fid] = score.get(fid, 0.0) + 1.0 / (K_RRF + r + 1)
    kw_rank = {fid: r for r, fid in enumerate(words)}
    order = sorted(score, key=lambda f: (-score[f], kw_rank.get(f, len(words))))
    in_words, in_meaning = set(words), set(meaning)
    return [(f, "both" if f in in_words and f in in_meaning else "words" if f in in_words else "meaning")
            for f in order]


def passage(con: Any, rid: int, chunk_start: int, chunk_text: str, pages: list[int]) -> Passage | None:
    """The passage a meaning hit shows: the start of its embedded window (an exact slice of Document.text)."""
    row = vectors.window_rows(con, [rid]).get(rid)
    if row is None:
        return None
    start, length, line = row
    a = start - chunk_start
    if a < 0 or a > len(chunk_text):
        return None
    end = min(a + length, a + MAX_PASSAGE, len(chunk_text))
    if end < a + length:
        cut = chunk_text.rfind(" ", a + MAX_PASSAGE // 2, end)
        end = cut if cut != -1 else end
    text = chunk_text[a:end].rstrip()
    from mcp_nextcloud.reader.document import Document

    page = Document(text="", kind="text", pages=pages or [0]).page_of(start)
    return Passage(offset=start, length=len(text), text=text, passage=text, passageOffset=start, page=page,
                   line=line, matches=[])


_covered: dict[tuple[str, int, int, float], vectors.Coverage] = {}


def coverage(index: Index, con: Any) -> vectors.Coverage:
    """vectors.coverage, cached until the vectors or the indexed files change (it joins every file: ~3 ms at 10k)."""
    if not vectors.exists(con):
        return vectors.coverage(con)
    n, last = con.execute("SELECT count(*), coalesce(max(indexed_at), 0) FROM files").fetchall()[0]
    key = (str(index.path), vectors.generation(con), int(n), float(last))
    with _cache_lock:
        hit = _covered.get(key)
    if hit is None:
        hit = vectors.coverage(con)
        with _cache_lock:
            _covered.clear()
            _covered[key] = hit
    return hit
