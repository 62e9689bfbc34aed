"""Search benchmark (issue 8): grep latency per query kind, recall against an independent reference, query cost.

The corpus is test_index_bench's (generated from a seed, 10k documents at
MCP_NEXTCLOUD_BENCH_SCALE=1). Figures are printed next to the issue's budgets:
- grep top-10 with passages <= 10 ms p50 for word, prefix-expanded word,
  phrase, accented and glued queries;
- word-start matching (the default) <= 1.5x the whole-word query ("quoted")
  measured in the same run: the one ratio that fails the run;
- recall >= 0.95 against files whose folded text (folded here by a few lines
  of unicodedata, not by reader.normalize) holds the folded query at a word start;
- no accepted query over ~100 ms, probed at the caps (terms, length, OR, NOT).
"""
from __future__ import annotations

import concurrent.futures as cf
import os
import re
import statistics
import time
import unicodedata

from benchmarks.test_index_bench import N_DOCS, PHRASE, RARE, build, make_corpus
from mcp_nextcloud.indexer.search.syntax import MAX_TERMS
from mcp_nextcloud.indexer.index import Index

REPEAT = 15


def _fold(text: str) -> str:
    """An independent fold: NFKD, marks dropped, casefold, whitespace runs as one space."""
    out = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold()
    return " ".join(out.split())


def _reference(docs_folded: list[str], query: str) -> set[int]:
    pattern = re.compile(r"(?<!\w)" + re.escape(_fold(query)))
    return {i for i, d in enumerate(docs_folded) if pattern.search(d)}


def _all_hits(index: Index, query: str) -> set[int]:
    """Every file grep lists for `query`, following cursors (doc index from the generated path)."""
    found: set[int] = set()
    res = index.grep(query, limit=100)
    while True:
        found |= {int(h.path.rsplit("doc", 1)[1].split(".")[0]) for h in res.hits}
        if not res.nextCursor:
            return found
        res = index.grep(query, limit=100, cursor=res.nextCursor)


def _p50(index: Index, queries: list[str]) -> float:
    times = []
    for q in queries:
        index.grep(q)  # warm
        for _ in range(REPEAT):
            t0 = time.perf_counter()
            res = index.grep(q, limit=10)
            times.append((time.perf_counter() - t0) * 1000)
        assert res.total > 0, f"benchmark query {q!r} found nothing: corpus generation is broken"
    return round(statistics.median(times), 2)


def _interleaved(index: Index, words: list[str], rounds: int = 40) -> tuple[float, float]:
    """p50 of grep for each word at word start and quoted (whole word), timed alternately.

    The order flips every round: the second of two queries on the same word finds its pages and
    chunks warm, which would otherwise favour whichever kind always runs second.
    """
    start: list[float] = []
    whole: list[float] = []
    for k in range(rounds):
        for w in words:
            pair = [(w, start), (f'"{w}"', whole)]
            for q, out in (pair if k % 2 else pair[::-1]):
                t0 = time.perf_counter()
                index.grep(q, limit=10)
                out.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(start), 2), round(statistics.median(whole), 2)


def _expanding_word(vocab: list[str]) -> str:
    """A mid-frequency word that starts at least three other words of the vocabulary."""
    words = set(vocab)
    for w in vocab[300:5000]:
        if len(w) >= 4 and sum(1 for v in words if v != w and v.startswith(w)) >= 3:
            return w
    raise AssertionError("no prefix-expanding word in the generated vocabulary")


def _worst_queries(vocab: list[str]) -> dict[str, str]:
    common = vocab[:MAX_TERMS]
    return {
        f"{MAX_TERMS} frequent words": " ".join(common),
        f"{MAX_TERMS} three-letter prefixes": " ".join(sorted({w[:3] for w in vocab[:200]})[:MAX_TERMS]),
        f"{MAX_TERMS} words OR-ed": " OR ".join(common),
        "8 words, 8 exclusions": " ".join(common[:8]) + " " + " ".join("-" + w for w in vocab[20:28]),
        "40 glued letters": "".join(common)[:40],
        f"one word repeated {MAX_TERMS}x": " ".join([vocab[0]] * MAX_TERMS),
        "quoted 16-word phrase": '"' + " ".join(common) + '"',
    }


def test_search_benchmark(tmp_path, bench_report):
    docs, vocab = make_corpus(N_DOCS)
    index = Index.open(tmp_path / "search.db")
    with cf.ProcessPoolExecutor(os.cpu_count() or 1) as pool:
        build(index, docs, 0, pool)
    index.writer().checkpoint()
    figures: dict = {"documents": N_DOCS, "load average at start (1 min, 2 CPUs shared)": round(os.getloadavg()[0], 2)}
    words = [vocab[1000], vocab[3000]]
    expanding = _expanding_word(vocab)
    kinds = {
        "word (word start, default)": words,
        "whole word (quoted), same words": [f'"{w}"' for w in words],
        "prefix-expanded word": [expanding],
        "phrase": [f'"{PHRASE}"'],
        "accented": ["réunion", "Straße"],
        "glued": ["new app", "newapp"],
    }
    lat = {k: _p50(index, qs) for k, qs in kinds.items()}
    for k, v in lat.items():
        figures[f"grep top-10 p50 ms: {k}"] = v
    # The ratio from interleaved runs (word start, then the same word quoted), so both meet the same load.
    start_ms, whole_ms = _interleaved(index, words)
    ratio = start_ms / whole_ms
    figures["interleaved p50 ms: word start / whole word"] = f"{start_ms} / {whole_ms}"
    figures["word start / whole word time ratio"] = round(ratio, 3)
    longer = sum(1 for v in vocab if v != expanding and v.startswith(expanding))
    figures["prefix-expanded word"] = f"{expanding} (starts {longer} other words)"

    # Recall against the independent reference.
    folded = [_fold(d) for d in docs]
    recall_queries = [vocab[1500], vocab[4000], expanding, "réunion", "STRASSE", "façade", PHRASE, RARE]
    recalls = {}
    for q in recall_queries:
        ref = _reference(folded, q)
        ours = _all_hits(index, q)
        recalls[q] = (len(ref & ours) / len(ref)) if ref else 1.0
        figures[f"recall {q!r} (reference files)"] = f"{recalls[q]:.3f} ({len(ref)})"
    worst_recall = min(recalls.values())

    # Query cost at the caps.
    costs = {}
    for label, q in _worst_queries(vocab).items():
        index.grep(q)
        costs[label] = max(timed_once(index, q) for _ in range(3))
        figures[f"accepted query, max of 3 ms: {label}"] = round(costs[label], 1)
    t0 = time.perf_counter()
    try:
        index.grep(" ".join([vocab[0]] * 2000))
        refused = "accepted"
    except ValueError as exc:
        refused = str(exc)[:60]
    figures["2,000 repeated words: refused in ms"] = round((time.perf_counter() - t0) * 1000, 2)
    figures["2,000 repeated words: answer"] = refused
    index.close()
    figures["load average at end (1 min)"] = round(os.getloadavg()[0], 2)

    budgets = [(f"grep top-10 p50 ms: {k}", v, 10.0, "<=") for k, v in lat.items()
               if not k.startswith("whole word")]
    budgets += [("word start / whole word time ratio", ratio, 1.5, "<="),
                ("recall, worst query", worst_recall, 0.95, ">="),
                ("slowest accepted query at the caps (ms)", max(costs.values()), 100.0, "<=")]
    bench_report("search", figures, budgets)
    assert refused != "accepted"
    assert worst_recall >= 0.95, recalls
    # The one timing assertion: a ratio of two figures measured in this run.
    assert ratio <= 1.5, f"word-start grep is {ratio:.2f}x the whole-word query"


def timed_once(index: Index, q: str) -> float:
    t0 = time.perf_counter()
    index.grep(q, limit=10)
    return (time.perf_counter() - t0) * 1000
