"""Relevance of grep's answers on real documents (issue 36), next to Recoll's ranking of the same corpus.

The corpus is the issue's Debian documentation (benchmarks/debian_docs.py: 1,550 files, en/fr/de), built
once by benchmarks/relevance_corpus.py (keyword and meaning index, and recollindex over the same folder;
reused from its cache folder). The graded set is benchmarks/relevance_set.py.

Figures, next to the issue's budgets (benchmarks/results/relevance.json):
- keyword queries (1-3 words): nDCG@10 and MRR of grep and of `recollq` on the same queries; how many
  answers say "not by relevance" (none may);
- questions (en/fr/de, half cross-language): the right file in the top 3; the answering text inside the
  returned passage or within 1,000 characters after its offset; precision of the returned hits;
- questions the corpus does not hold: the share answered "nothing close" or with at most 2 hits;
- latency: keyword p50 (warm), hybrid p50 (each question new, its embedding included; and warm).
The run fails only on comparisons made in it: ours against Recoll's on the same queries.

Run: python3 -m pytest -q -s benchmarks/test_relevance_bench.py   (~1 min once the cache is built; the first
build takes ~10 min on 2 cores, mostly the meaning index)
"""
from __future__ import annotations

import math
import os
import re
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks import relevance_corpus
from benchmarks.relevance_set import KEYWORD, OFF_TOPIC, QUESTIONS
from mcp_nextcloud.indexer.index import Index

K = 10
AFTER = 1_000        # the answering text may start this many characters after the passage's offset
NOTHING_CLOSE = "nothing close in meaning"


def _grade(path: str, judged: dict[str, int]) -> int:
    return max((g for p, g in judged.items() if re.search(p, path)), default=0)


def ndcg_mrr(paths: list[str], judged: dict[str, int], corpus: list[str]) -> tuple[float, float]:
    """nDCG@K (gain 2^grade - 1, ideal from every judged file of the corpus) and the reciprocal rank."""
    grades = [_grade(p, judged) for p in paths[:K]]
    dcg = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(grades))
    ideal = sorted((_grade(p, judged) for p in corpus), reverse=True)[:K]
    idcg = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    rr = next((1 / (i + 1) for i, g in enumerate(grades) if g > 0), 0.0)
    return (dcg / idcg if idcg else 0.0), rr


def recoll_paths(built: relevance_corpus.Built, query: str) -> list[str]:
    """Recoll's top K for `query` (its own query language: the words ANDed), as indexed paths."""
    done = subprocess.run(["recollq", "-c", str(built.recoll), "-b", "-n", str(K), query], capture_output=True,
                          text=True, timeout=60)
    root = str(built.docs)
    return [line[len("file://") + len(root):] for line in done.stdout.splitlines()
            if line.startswith("file://" + root)]


def _keyword(index: Index, built: relevance_corpus.Built, corpus: list[str]) -> dict[str, Any]:
    ours, theirs, unranked, per_query = [], [], 0, {}
    for q, judged in KEYWORD:
        res = index.grep(q, limit=K)
        unranked += any("not by relevance" in n for n in res.notes)
        ours.append(ndcg_mrr([h.path for h in res.hits], judged, corpus))
        if built.recoll.exists() and shutil.which("recollq"):
            theirs.append(ndcg_mrr(recoll_paths(built, q), judged, corpus))
        per_query[q] = (round(ours[-1][0], 2), round(theirs[-1][0], 2) if theirs else None)
    mean = lambda xs, k: round(statistics.mean(x[k] for x in xs), 3) if xs else None  # noqa: E731
    return {"ndcg": mean(ours, 0), "mrr": mean(ours, 1), "recoll_ndcg": mean(theirs, 0),
            "recoll_mrr": mean(theirs, 1), "unranked": unranked, "per_query": per_query}


def _answers(index: Index, hit: Any, pattern: str) -> bool:
    """The answering text is in the hit's passage or starts within AFTER characters after its offset."""
    if not hit.passages:
        return False
    p = hit.passages[0]
    rec = index.get_file(path=hit.path)
    doc = index.cached_document(rec) if rec is not None else None
    if doc is None:
        return False
    window = doc.text[p.passageOffset:p.passageOffset + max(len(p.passage), AFTER)]
    return re.search(pattern, window) is not None


def _cross(index: Index, lang: str, files: str) -> bool:
    langs = [str(lg or "") for p, lg in index.conn().execute("SELECT path, lang FROM files") if re.search(files, p)]
    return not any(lang in lg.split(",") for lg in langs)


def _questions(index: Index, parity: int | None = None) -> dict[str, Any]:
    """The question figures over the set, or over its half of that id `parity` (0: even, 1: odd)."""
    top3 = passage = returned = relevant = cross = 0
    new_ms, warm_ms, new_cpu, misses = [], [], [], []
    chosen = [x for i, x in enumerate(QUESTIONS) if parity is None or i % 2 == parity]
    for q, lang, files, answer in chosen:
        cross += _cross(index, lang, files)
        t0, c0 = time.perf_counter(), time.process_time()
        res = index.grep(q, limit=K)
        new_ms.append((time.perf_counter() - t0) * 1000)
        new_cpu.append((time.process_time() - c0) * 1000)
        t0 = time.perf_counter()
        index.grep(q, limit=K)
        warm_ms.append((time.perf_counter() - t0) * 1000)
        right = [h for h in res.hits if re.search(files, h.path)]
        top3 += any(re.search(files, h.path) for h in res.hits[:3])
        passage += bool(right) and _answers(index, right[0], answer)
        returned += len(res.hits)
        relevant += len(right)
        if not any(re.search(files, h.path) for h in res.hits[:3]):
            misses.append((q, [h.path for h in res.hits[:3]]))
    n = len(chosen)
    return {"n": n, "cross": cross, "top3": round(top3 / n, 3), "passage": round(passage / n, 3),
            "precision": round(relevant / returned, 3) if returned else 0.0, "returned": returned,
            "hybrid_new_p50_ms": round(statistics.median(new_ms), 2),
            "hybrid_warm_p50_ms": round(statistics.median(warm_ms), 2),
            "hybrid_new_cpu_p50_ms": round(statistics.median(new_cpu), 2), "misses": misses}


def _off_topic(index: Index, parity: int | None = None) -> dict[str, Any]:
    quiet, shapes = 0, []
    chosen = [q for i, q in enumerate(OFF_TOPIC) if parity is None or i % 2 == parity]
    for q in chosen:
        res = index.grep(q, limit=K)
        said = any(NOTHING_CLOSE in n for n in res.notes)
        quiet += said or len(res.hits) <= 2
        shapes.append((len(res.hits), said))
    return {"n": len(chosen), "rate": round(quiet / len(chosen), 3), "hits_and_said": shapes}


def _halves(index: Index) -> dict[str, tuple]:
    """The question figures per half of the set (by id parity): the constants of hybrid.py, semantic.py and
    answer.py were tuned on the even half; the odd half is the held-out check against overfitting."""
    out = {}
    for name, parity in (("even (tuned on)", 0), ("odd (held out)", 1)):
        qs, off = _questions(index, parity), _off_topic(index, parity)
        out[name] = (qs["top3"], qs["passage"], qs["precision"], qs["returned"], off["rate"])
    return out


def calibration(index: Index) -> dict[str, Any]:
    """The data semantic.FLOOR is set from: the best cosine of each question's first answering file, and the
    best cosine of any file for each question the corpus does not hold (no floor, no margin)."""
    from mcp_nextcloud.indexer.search import semantic

    con = index.conn()
    floor, margin = semantic.FLOOR, semantic.MARGIN
    semantic.FLOOR, semantic.MARGIN = -1.0, 2.0
    try:
        right = []
        for q, _lang, files, _answer in QUESTIONS:
            found = semantic.search(index, con, q, "", [], 50)
            sims = [h.sim for h in found if re.search(files, index.get_by_id(h.fid).path)]
            right.append(round(max(sims), 4) if sims else None)
        off = [round(semantic.search(index, con, q, "", [], 1)[0].sim, 4) for q in OFF_TOPIC]
    finally:
        semantic.FLOOR, semantic.MARGIN = floor, margin
    kept = [r for r in right if r is not None]
    q = lambda xs, p: round(sorted(xs)[int(p * (len(xs) - 1))], 4) if xs else None  # noqa: E731
    return {"answering file's best cosine p10/p25/median": (q(kept, 0.1), q(kept, 0.25), q(kept, 0.5)),
            "off-topic best cosine median/p90/max": (q(off, 0.5), q(off, 0.9), max(off)),
            "answering": right, "off_topic": off, "floor": floor}


def _keyword_p50_ms(index: Index, rounds: int = 7) -> tuple[float, float]:
    """(wall, CPU) p50 in ms over the keyword queries, warm. CPU time (this process's) is printed beside the
    wall time because other engineers share the 2 cores: at a load of 10 the wall time is mostly waiting."""
    per_query, cpu = [], []
    for q, _ in KEYWORD:
        index.grep(q, limit=K)
        times, ticks = [], []
        for _ in range(rounds):
            t0, c0 = time.perf_counter(), time.process_time()
            index.grep(q, limit=K)
            times.append((time.perf_counter() - t0) * 1000)
            ticks.append((time.process_time() - c0) * 1000)
        per_query.append(statistics.median(times))
        cpu.append(statistics.median(ticks))
    return round(statistics.median(per_query), 2), round(statistics.median(cpu), 2)


@pytest.mark.timeout(3 * 3600)
def test_relevance(bench_report) -> None:
    built = relevance_corpus.build()
    load0 = os.getloadavg()
    with Index.open(built.db) as index:
        corpus = [str(p) for (p,) in index.conn().execute("SELECT path FROM files WHERE status='indexed'")]
        kw = _keyword(index, built, corpus)
        qs = _questions(index)
        off = _off_topic(index)
        halves = _halves(index)
        kw_ms, kw_cpu = _keyword_p50_ms(index)
        cal = calibration(index)
    figures: dict[str, Any] = {
        "corpus files, build (s) and its load": (len(corpus), built.info()),
        "keyword queries": len(KEYWORD),
        "keyword nDCG@10 ours / recoll": (kw["ndcg"], kw["recoll_ndcg"]),
        "keyword MRR ours / recoll": (kw["mrr"], kw["recoll_mrr"]),
        "keyword nDCG@10 per query (ours, recoll)": kw["per_query"],
        "questions (cross-language)": (qs["n"], qs["cross"]),
        "questions: top-3, passage, precision (hits)": (qs["top3"], qs["passage"], qs["precision"], qs["returned"]),
        "questions missed in the top 3": qs["misses"],
        "halves: top-3, passage, precision (hits), off-topic quiet": halves,
        "off-topic: nothing close or <= 2 hits (n)": (off["rate"], off["n"]),
        "off-topic answers (hits, said nothing close)": off["hits_and_said"],
        "floor calibration (semantic.FLOOR)": {k: v for k, v in cal.items() if k not in ("answering", "off_topic")},
        "keyword p50 warm: wall, CPU (ms)": (kw_ms, kw_cpu),
        "hybrid p50 new question: wall, CPU; warm wall (ms)": (qs["hybrid_new_p50_ms"], qs["hybrid_new_cpu_p50_ms"],
                                                               qs["hybrid_warm_p50_ms"]),
        "load average at start, at end": (round(load0[0], 2), round(os.getloadavg()[0], 2)),
    }
    budgets = [
        ("answers saying 'not by relevance'", kw["unranked"], 0, "<="),
        ("questions: right file in the top 3", qs["top3"], 0.85, ">="),
        ("questions: answering passage", qs["passage"], 0.70, ">="),
        ("questions: precision of the hits", qs["precision"], 0.70, ">="),
        ("off-topic: nothing close or <= 2 hits", off["rate"], 0.90, ">="),
        ("keyword p50 warm (ms)", kw_ms, 10.0, "<="),
        ("hybrid p50, new question (ms)", qs["hybrid_new_p50_ms"], 30.0, "<="),
    ]
    if kw["recoll_ndcg"] is not None:
        budgets += [("keyword nDCG@10 ours - recoll's", round(kw["ndcg"] - kw["recoll_ndcg"], 3), 0.0, ">="),
                    ("keyword MRR ours - recoll's", round(kw["mrr"] - kw["recoll_mrr"], 3), 0.0, ">=")]
    bench_report("relevance", figures, budgets)
    assert kw["unranked"] == 0
    if kw["recoll_ndcg"] is not None:
        assert kw["ndcg"] >= kw["recoll_ndcg"], "Recoll ranks these keyword queries better than grep"


def test_the_graded_set_is_the_issue_size() -> None:
    assert len(KEYWORD) >= 40 and all(1 <= len(q.split()) <= 3 for q, _ in KEYWORD)
    assert len(QUESTIONS) >= 30 and {lang for _, lang, _, _ in QUESTIONS} == {"en", "fr", "de"}
    assert len(OFF_TOPIC) >= 20
    assert Path(relevance_corpus.__file__).exists()
