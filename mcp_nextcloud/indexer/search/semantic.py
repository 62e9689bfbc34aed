"""Meaning search for grep: when a query is a question, rank files by embedding similarity and fuse with words.

When (`wanted`): a plain query of at least QUESTION_WORDS words (or two and a
question mark), two of them at least plain words. Quoted phrases, OR, exclusions,
single words and lone identifiers (terms with inner punctuation: 3.11, node.js,
foo_bar) stay keyword-only: they ask for exactly those characters. A question
holding an identifier embeds the rest of it (`meaning_text`); the files holding
the identifier come first among its meaning hits (grep.py), and the answer says
when no file holds it.

How: the question's vector against every fresh window vector (one float32
matrix per index and process, reloaded when the vectors' generation moves),
the best windows per file, files within MARGIN of the best similarity and
above FLOOR kept (below it: "nothing close in meaning"). Calibrated on the issue's
Debian corpus (benchmarks/test_relevance_bench.py, `calibration`: the best cosine of
each question's first answering file, and the best cosine any file reaches for the
22 questions the corpus does not hold). multilingual-e5-small's cosines alone do
not separate them (answering files 0.82-0.92, p10 0.83; unrelated questions' best
0.75-0.85, median 0.82), so two measures are combined: FLOOR 0.78 leaves out what
is plainly unrelated (no answering file of the set below 0.80; 0.78 because a short
note answering across languages sits at 0.79 on the real server: tests/live/
test_live_meaning.py), and a question naming a word no
indexed text holds (`absent_words`: sourdough, Spargel, cricket; 16 of 22
unrelated questions, none of the 41 answerable ones, in an index of 2 M characters or
more) needs ABSENT_FLOOR 0.86, above every unrelated question's best (0.850). A German
compound of indexed words ("Zufallsbytes", "Kontextmanager": vocabulary.compound_of_indexed)
is no such word: counted absent, they cost two answerable questions every hit. A
file the builder has not finished is
not a meaning hit (`_allowed`). Files holding the words as the phrase lead in
keyword order (grep.py: such a query was meant as words); the rest is fused by
reciprocal rank fusion over files (`fuse`, K_RRF): a file found both ways ranks
first, ties go to the keyword rank (measured: benchmarks/test_meaning_bench.py,
keyword queries keep their top hit).

multilingual-e5-small favours the question's language: a terse French question
ranked French files on other subjects above the English one it is about. So the
files are ordered by language-centred cosines (centering.py) where the index holds
enough text of a language; what is close (FLOOR, ABSENT_FLOOR, WORDS_CLOSE, the
score) is still the plain cosine's call, and the files after the first meaning-only
one are shown when close by the centred one (`SemHit.close`).
"""
from __future__ import annotations

import re
import threading
from typing import Any, NamedTuple, Sequence

import apsw

from mcp_nextcloud.indexer.search import centering
from mcp_nextcloud.indexer.search.query import ParsedQuery
from mcp_nextcloud.indexer.store import vectors
from mcp_nextcloud.indexer.store.index import Index
from mcp_nextcloud.indexer.store.schema import CHUNK_BITS

QUESTION_WORDS = 3       # words that make a plain query a question
CANDIDATES = 256         # best windows looked at first (more when filters leave too few files)
MARGIN = 0.03            # files within this cosine of the best one are kept (0.01-0.07 measured: relevance bench)
FLOOR = 0.78             # below this cosine nothing is related: calibrated, see the module docstring
CLOSE = 0.84             # a file only meaning found, after the closest one, is shown at this cosine or above;
                         # an answer of meaning hits only, none this close, says nothing close (trim.loose)
WORDS_CLOSE = 0.85       # a question's word hit (not the phrase) is shown when a window of it is this close
ABSENT_FLOOR = 0.86      # the floor when the question names something no indexed text mentions (`absent_words`)
MIN_CONTENT = 4          # shorter words of a question are not checked against the vocabulary
ABSENT_MIN_CHARS = 2_000_000   # an index this large knows the words of what it holds (a few manuals)
NOTHING_CLOSE = "nothing close in meaning"
K_RRF = 60               # reciprocal rank fusion's constant (Cormack et al.; flat enough for 10-50 hits)

# Inner punctuation (not hyphens or apostrophes: "qu'un", "e-mail" are words) or an underscore.
_IDENTIFIER = re.compile(r"[^\w\s\u2010\u2011'\u2019-]|_")
_cache: dict[str, vectors.Matrix] = {}
_cache_lock = threading.Lock()


# What wraps a word in a sentence without being part of it: "(Fenster)", "«pare-feu»", "rsync," or "done?".
SENTENCE_MARKS = "?!.,;:()[]{}\"'«»“”„‘’"


def identifiers(pq: ParsedQuery) -> list[str]:
    """The words of the query with inner punctuation (node.js, 3.11, foo_bar), as typed; a question's
    punctuation around a word (brackets, quotes, a final '?') never makes it one."""
    return [g[0].text for g in pq.groups if _IDENTIFIER.search(g[0].text.strip(SENTENCE_MARKS))]


def wanted(pq: ParsedQuery) -> bool:
    """True when the query reads as a question of several words (see the module docstring).

    Identifiers do not make a question keyword-only: "Wie erzeuge ich in Node.js sichere Zufallsbytes?"
    keeps its meaning (the identifier boosts the files holding it: `meaning_text`, grep's fusion); the
    plain words must still be a question (at least two of them).
    """
    if not pq.plain or pq.negated or any(g[0].exact for g in pq.groups):
        return False
    words = [g[0].text for g in pq.groups]
    if len(words) - len(identifiers(pq)) < 2:
        return False
    return len(words) >= QUESTION_WORDS or (len(words) >= 2 and pq.raw.rstrip().endswith("?"))


WORDS_ONLY = ("searched by its words only, not by meaning: quoted phrases, OR and -word ask for exact words "
              "(write the question without them to search by meaning too)")


def words_only(pq: ParsedQuery) -> bool:
    """A query of QUESTION_WORDS words or more that is no question only for its operators: the answer says so."""
    words = sum(len(g) for g in pq.groups) + len(pq.negated)
    return words >= QUESTION_WORDS and not wanted(pq) and (not pq.plain or bool(pq.negated) or
                                                          any(g[0].exact for g in pq.groups))


def meaning_text(pq: ParsedQuery) -> str:
    """What the model embeds: the question without its identifiers (they are matched by their characters)."""
    ids = set(identifiers(pq))
    if not ids:
        return pq.raw
    return " ".join(w for w in pq.raw.split() if w.strip(SENTENCE_MARKS) not in ids and w not in ids)


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


def _matrix(index: Index, con: apsw.Connection) -> vectors.Matrix | None:
    """This index's vectors (cached per process until they change); None while there are none."""
    if not vectors.exists(con):
        return None
    gen = vectors.generation(con)
    key = str(index.path)
    with _cache_lock:
        m = _cache.get(key)
    if m is None or m.generation != gen:
        m = vectors.load_matrix(con)
        m = m._replace(centering=centering.of(con, m.ids, m.vecs))
        with _cache_lock:
            _cache[key] = m
    return m if len(m.ids) else None


class SemHit(NamedTuple):
    """A file found by meaning: its best window's chunk rowid and cosine, and its best windows (rowid, cosine)."""

    fid: int
    rid: int
    sim: float
    windows: tuple[tuple[int, float], ...] = ()
    close: bool = False     # close enough to be shown after the first meaning-only hit (CLOSE; centering.CLOSE)
    weak: bool = False      # past the margin, within `search`'s wider `weak_margin`: shown last, as weaker


WINDOWS_PER_FILE = 4     # a file's best windows handed to the passage chooser (answer.py)


def absent_words(con: apsw.Connection, pq: ParsedQuery) -> list[str]:
    """The question's words (MIN_CONTENT letters or more, identifiers aside) that no indexed word starts with
    and that have no other indexed form: the question names something the files never mention.

    Only in an index of ABSENT_MIN_CHARS characters or more (a small one lacks most words of any subject),
    and when at least as many of the question's words are known (two at least): a question in a language
    the files are not written in shares little vocabulary with them, and that says nothing of its subject.
    """
    from mcp_nextcloud.indexer.search.vocabulary import _VOCAB, compound_of_indexed, words_starting
    from mcp_nextcloud.indexer.search.wordforms import forms_of, index_languages

    cache = _VOCAB.of(con)
    if ("chars",) not in cache:
        cache[("chars",)] = int(con.execute("SELECT coalesce(sum(chars), 0) FROM docs").fetchall()[0][0] or 0)
    if cache[("chars",)] < ABSENT_MIN_CHARS:
        return []
    ids = set(identifiers(pq))
    langs = index_languages(con)
    absent, known = [], 0
    for g in pq.groups:
        t = g[0]
        if t.text in ids or len(t.tokens) != 1 or len(t.tokens[0]) < MIN_CONTENT:
            continue
        word = t.tokens[0]
        if words_starting(con, word, 1)[0] or forms_of(con, word, langs) or compound_of_indexed(con, word):
            known += 1
        else:
            absent.append(t.text.strip(SENTENCE_MARKS))
    return absent if known >= max(2, len(absent)) else []


def search(index: Index, con: apsw.Connection, query: str, filt: str, fargs: Sequence[apsw.SQLiteValue], want: int,
           floor: float | None = None, weak_margin: float = 0.0) -> list[SemHit]:
    """Up to `want` files related to `query`, best first, among files the filters `filt` allow.

    Kept: files at or above `floor` (FLOOR by default, plain cosines) and within MARGIN of the first one
    (centering.MARGIN of its centred cosine where the index is centred), in the centred order; with a
    `weak_margin`, also the files behind those within that much more, marked `weak`.
    """
    m = _matrix(index, con)
    if m is None:
        return []
    import numpy as np

    from mcp_nextcloud.indexer.embedding import embed_query

    _one_blas_thread()
    vec = embed_query(query)
    sims = m.vecs @ vec
    order = centering.cosines(m.centering, sims, vec)
    with _cache_lock:
        _recent[str(index.path)] = (query, m.generation, sims)
    n = CANDIDATES
    while True:
        top = np.argpartition(-order, min(n, len(order)) - 1)[:n] if n < len(order) else np.arange(len(order))
        top = top[np.argsort(-order[top])]
        per_file: dict[int, list[tuple[int, float]]] = {}
        rank: dict[int, float] = {}           # each file's best centred cosine: the order of the files
        # Plain lists: reading 256 numpy scalars one by one took 0.45 ms, the lists 0.18 (measured).
        for rid, centred, sim in zip(m.ids[top].tolist(), order[top].tolist(), sims[top].tolist(), strict=True):
            ws = per_file.setdefault(rid >> CHUNK_BITS, [])
            rank.setdefault(rid >> CHUNK_BITS, centred)
            if len(ws) < WINDOWS_PER_FILE:
                ws.append((rid, sim))
        allowed = _allowed(con, list(per_file), filt, fargs)
        hits = []
        for fid, ws in per_file.items():
            if fid in allowed:
                best = max(s for _, s in ws)
                hits.append(SemHit(fid, ws[0][0], best, tuple(ws), _close(m, best, rank[fid])))
        if len(hits) >= want or n >= len(order):
            break
        n *= 4
    if not hits:
        return []
    # Close is the plain cosine's call (FLOOR); how far behind the first a file may rank, the centred one's.
    least = FLOOR if floor is None else floor
    ahead = rank[hits[0].fid] - (MARGIN if m.centering is None else centering.MARGIN)
    kept = [h for h in hits if h.sim >= least and rank[h.fid] >= ahead]
    weak = [h._replace(weak=True, close=False) for h in hits
            if h.sim >= least and ahead - weak_margin <= rank[h.fid] < ahead] if weak_margin else []
    return (kept + weak)[:want]


def _close(m: vectors.Matrix, sim: float, centred: float) -> bool:
    """Whether a file is close: by its centred cosine where the index is centred (they tell related from
    unrelated better: centering.py), else by its plain one."""
    return sim >= CLOSE if m.centering is None else centred >= centering.CLOSE


_recent: dict[str, tuple[str, int, Any]] = {}   # per index: the last question's cosines (judge reuses them)


def judge(index: Index, con: apsw.Connection, query: str, fids: list[int]) -> dict[int, float]:
    """The best window cosine to `query` of each of `fids` whose windows are all embedded (others: absent).

    For the keyword side of a question: a file holding the words but unrelated in meaning is noise there.
    Reuses the cosines `search` just computed for the same question.
    """
    m = _matrix(index, con)
    done = _allowed(con, fids, "", []) if m is not None else set()
    if m is None or not done:
        return {}
    import numpy as np

    with _cache_lock:
        held = _recent.get(str(index.path))
    if held is not None and held[0] == query and held[1] == m.generation:
        sims = held[2]
    else:
        from mcp_nextcloud.indexer.embedding import embed_query

        sims = m.vecs @ embed_query(query)
    owners = m.ids >> CHUNK_BITS
    rows = np.flatnonzero(np.isin(owners, np.fromiter(done, dtype=np.int64)))
    out: dict[int, float] = {}
    for i in rows.tolist():
        fid, sim = int(owners[i]), float(sims[i])
        if sim > out.get(fid, -2.0):
            out[fid] = sim
    return out


def embedded(con: apsw.Connection, fids: list[int]) -> set[int]:
    """Of `fids`, the files whose every window is embedded at their current extraction (they can be judged)."""
    return _allowed(con, fids, "", [])


def _allowed(con: apsw.Connection, fids: list[int], filt: str, fargs: Sequence[apsw.SQLiteValue]) -> set[int]:
    """Of `fids`, the files the filters allow whose every window is embedded at their current extraction.

    A file the builder has only begun (its head window first) is not a meaning hit yet: its passage could
    only point at its head, whatever the question. Without filters, each file's verdict is remembered until
    the index changes (the vocabulary cache's life): a question asks it for ~250 files twice.
    """
    if not fids:
        return set()
    if filt:
        return _embedded_where(con, fids, filt, fargs)
    from mcp_nextcloud.indexer.search.vocabulary import _VOCAB

    known: dict[int, bool] = _VOCAB.of(con).setdefault(("embedded",), {})
    unknown = [f for f in fids if f not in known]
    if unknown:
        done = _embedded_where(con, unknown, "", [])
        known.update((f, f in done) for f in unknown)
    return {f for f in fids if known[f]}


def _embedded_where(con: apsw.Connection, fids: list[int], filt: str, fargs: Sequence[apsw.SQLiteValue]) -> set[int]:
    marks = ",".join("?" * len(fids))
    where = f"f.id IN ({marks}) AND f.status='indexed'" + (f" AND {filt}" if filt else "")
    return {int(r[0]) for r in con.execute(
        f"SELECT f.id FROM files f JOIN vector_files vf ON vf.id = f.id AND vf.done = 1 AND "
        f"vf.indexed_at = f.indexed_at WHERE {where}", [*fids, *fargs])}


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


def coverage(con: apsw.Connection) -> vectors.Coverage:
    """vectors.coverage, cached until the index changes (it joins every file: ~3 ms at 10k)."""
    from mcp_nextcloud.indexer.search.vocabulary import _VOCAB

    cache = _VOCAB.of(con)
    hit: vectors.Coverage | None = cache.get(("coverage",))
    if hit is None:
        hit = cache[("coverage",)] = vectors.coverage(con)
    return hit
