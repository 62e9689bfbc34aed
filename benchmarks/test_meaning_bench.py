"""Meaning search benchmark (issue 24): recall of questions, hybrid and keyword latency at 10k documents, build cost.

Figures printed next to the issue's budgets and saved in benchmarks/results/meaning.json:
- recall@10 of hybrid vs keyword-only on paraphrased and cross-language questions (benchmarks/meaning_corpus.py:
  15 documents in English, French and German among generated distractors and this README's sections);
  keyword queries keep their top hit;
- query p50 warm at 10k documents: hybrid <= 30 ms (a question never asked before: its embedding is
  included; a repeated one is cached and printed apart), keyword-only <= 10 ms;
- three processes embedding questions at once vs one alone (wall, same run: <= 6x; 3x is the cores' share);
- embedding build: characters and windows per second measured on the real model, extrapolated to 37 M
  characters in the issue's corpus shape (123 files) and in the densest shape (one window per
  CHUNKS_PER_WINDOW chunks); the real corpus's build is measured whole in test_meaning_real_bench.py;
  size of the vectors vs the keyword index (<= 1.5x); peak memory (PSS) of the whole build, keyword then
  meaning, in their own processes, vs recollindex on the same folder (a figure here; the <= 1.25x budget is
  judged on the issue's corpus in test_meaning_real_bench.py).

The 10k-document latency index gets vectors of the real count and layout (one per chosen window of each
file's real chunks) but random values: scan cost does not depend on them, and embedding 10k documents
would take the better part of an hour here. Everything recall measures is embedded by the real model.
Run: python3 -m pytest -q -s benchmarks/test_meaning_bench.py (MCP_NEXTCLOUD_BENCH_SCALE=0.2: 2k docs).
"""
from __future__ import annotations

import concurrent.futures as cf
import os
import statistics
import time
from pathlib import Path

import pytest

from benchmarks.meaning_corpus import DOCS, KEYWORD, QUESTIONS
from benchmarks.test_index_bench import SCALE, PeakRSS, build, make_corpus
from mcp_nextcloud.indexer.jobs import embed_windows as ew
from mcp_nextcloud.indexer.jobs.embed import Builder
from mcp_nextcloud.indexer.models import FileMeta
from mcp_nextcloud.indexer.store import vectors
from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.reader.document import Document
from mcp_nextcloud.service.client import SWITCH

ROOT = Path(__file__).resolve().parents[1]
N_LATENCY_DOCS = max(2000, int(10_000 * SCALE))
N_DISTRACTORS = 120
CORPUS_CHARS = 37_000_000       # the issue's corpus (123 real documents)
CORPUS_FILES = 123


def _put(index: Index, path: str, text: str, mtime: float = 1.7e9) -> None:
    w = index.writer()
    rec, needs = w.upsert(FileMeta(path=path, source="local", file_id=None, etag=None, size=len(text), mtime=mtime,
                                   mime="text/plain"))
    if needs:
        w.store_document(rec.id, Document(text=text, kind="text", name=path.rsplit("/", 1)[-1], pages=[0],
                                          engine="bench"))


def _readme_sections() -> dict[str, str]:
    # The README and the docs it points to (the README was split into docs/ by issue 38: the same sections)
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    text = "\n## ".join(p.read_text(encoding="utf-8") for p in pages)
    parts = [p.strip() for p in text.split("\n## ") if len(p.strip()) > 200]
    return {f"/readme/section{i:02d}.md": p for i, p in enumerate(parts)}


def _recall(index: Index, questions: list[tuple[str, str]], meaning: bool, k: int = 10) -> tuple[float, float]:
    at1 = atk = 0
    for q, want in questions:
        paths = [h.path for h in index.grep(q, limit=k, meaning=meaning).hits]
        at1 += bool(paths) and paths[0] == want
        atk += want in paths
    return round(at1 / len(questions), 3), round(atk / len(questions), 3)


def _sizes(index: Index) -> tuple[int, int]:
    """(bytes of the meaning index's tables, bytes of everything else), page by page (SQLite's dbstat)."""
    con = index.conn()
    sizes = dict(con.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall())
    names = ("vectors", "vector_files", "vector_meta", "sqlite_autoindex_vector_meta_1")
    ours = sum(int(sizes.pop(n, 0)) for n in names)
    return ours, sum(int(v) for v in sizes.values())


def _size_ratio(index: Index) -> float:
    ours, rest = _sizes(index)
    return round(ours / rest, 3)


def _recall_part(tmp: Path) -> dict:
    out: dict = {}
    with Index.open(tmp / "recall.db") as index:
        for path, text in DOCS.items():
            _put(index, path, text)
        for path, text in _readme_sections().items():
            _put(index, path, text)
        docs, _vocab = make_corpus(N_DISTRACTORS, seed=24, words_per_doc=(150, 500))
        for i, text in enumerate(docs):
            _put(index, f"/generated/doc{i:04d}.txt", text)
        source_chars = int(index.conn().execute("SELECT sum(chars) FROM docs").fetchall()[0][0])
        with PeakRSS() as mem:
            rss0 = mem.proc.memory_info().rss
            t0 = time.perf_counter()
            report = Builder(index).build()
            build_s = time.perf_counter() - t0
        out["build"] = {**report.to_dict(), "source_chars": source_chars, "files": index.status()["files"],
                        "peak_rss_mb": round(mem.peak / 1e6, 1), "rss_growth_mb": round((mem.peak - rss0) / 1e6, 1)}
        out["build"]["embedded_chars_per_s"] = round(report.chars / build_s)
        out["build"]["windows_per_s"] = round(report.windows / build_s, 2)
        out["build"]["mean_window_chars"] = round(report.chars / max(1, report.windows))
        out["vectors_bytes_vs_keyword_recall_index"] = _size_ratio(index)
        out["recall_keyword_only"] = _recall(index, QUESTIONS, meaning=False)
        out["recall_hybrid"] = _recall(index, QUESTIONS, meaning=True)
        kept = 0
        for q, want in KEYWORD:
            words = [h.path for h in index.grep(q, meaning=False).hits][:1]
            hybrid = [h.path for h in index.grep(q).hits][:1]
            kept += words == hybrid == [want]
        out["keyword_top_hit_kept"] = round(kept / len(KEYWORD), 3)
    return out


def _synthetic_vectors(index: Index) -> int:
    """One random unit vector per chosen window of every file (the real layout); returns how many."""
    import numpy as np

    rng = np.random.default_rng(24)
    con = index.conn()
    files = con.execute("SELECT id, indexed_at FROM files WHERE status='indexed'").fetchall()
    counts = dict(con.execute("SELECT id >> 16, count(*) FROM chunks GROUP BY id >> 16").fetchall())
    rows = []
    for fid, at in files:
        lo, _hi = vectors.file_range(int(fid))
        for seq in ew.chosen_seqs(int(counts.get(fid, 1))):
            rows.append((int(fid), float(at), lo | seq))

    def write(tx) -> None:
        vectors.ensure(tx.con)
        v = rng.standard_normal((len(rows), vectors.DIM)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        tx.con.executemany("INSERT INTO vectors(id, start, length, line, hash, vec) VALUES(?,?,?,?,?,?)",
                           [(cid, 0, ew.WINDOW, 1, vectors.text_hash(str(cid)), v[i].astype(vectors.DTYPE).tobytes())
                            for i, (_f, _a, cid) in enumerate(rows)])
        tx.con.executemany("INSERT OR REPLACE INTO vector_files(id, indexed_at, done, windows) VALUES(?,?,1,0)",
                           sorted({(f, a) for f, a, _c in rows}))
        vectors.bump(tx.con)

    index.writer().call(write)
    return len(rows)


def _p50(index: Index, queries: list[str], meaning: bool, repeat: int = 1) -> float:
    times = []
    for q in queries:
        for _ in range(repeat):
            t0 = time.perf_counter()
            index.grep(q, limit=10, meaning=meaning)
            times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 2)


def _latency_part(tmp: Path) -> dict:
    from mcp_nextcloud.indexer import embedding as semantic_model
    from mcp_nextcloud.indexer.embedding import embed_query

    out: dict = {"documents": N_LATENCY_DOCS}
    docs, vocab = make_corpus(N_LATENCY_DOCS, seed=7, words_per_doc=(150, 900))
    with Index.open(tmp / "latency.db") as index:
        with cf.ProcessPoolExecutor(2) as pool:
            out["keyword_build_s"] = round(build(index, docs, 0, pool), 1)
        out["vectors"] = _synthetic_vectors(index)
        out["vectors_bytes_vs_keyword_index"] = _size_ratio(index)
        out["vectors_mb"] = round(_sizes(index)[0] / 1e6, 2)
        words = vocab[100:130]
        questions = [q for q, _ in QUESTIONS]
        index.grep("warm the matrix and the model up please")     # loads the matrix and the model once
        for w in words:
            index.grep(w)
        out["keyword_word_p50_ms"] = _p50(index, words, meaning=False, repeat=5)
        out["keyword_question_p50_ms"] = _p50(index, questions, meaning=False, repeat=3)
        semantic_model._queries.clear()      # the recall part asked these: each is embedded anew here
        out["hybrid_new_question_p50_ms"] = _p50(index, questions, meaning=True)
        out["hybrid_repeated_question_p50_ms"] = _p50(index, questions, meaning=True, repeat=3)
        t_embed = []
        for q in questions:
            t0 = time.perf_counter()
            embed_query(q + " ?")      # a string not cached yet
            t_embed.append((time.perf_counter() - t0) * 1000)
        out["query_embedding_p50_ms"] = round(statistics.median(t_embed), 2)
    return out


def _memory_part(tmp: Path) -> dict:
    """Peak memory (PSS of the process tree) of the whole build, keyword then meaning, vs recollindex, same folder."""
    import shutil
    import sys

    from benchmarks.test_lean_bench import measured_run, recoll_config

    folder = tmp / "memory-corpus"
    for path, text in {**DOCS, **_readme_sections()}.items():
        (folder / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (folder / path.lstrip("/")).write_text(text, encoding="utf-8")
    db = tmp / "memory.db"
    # In their own processes, so the measured trees do the work (through the index service, `index add` would
    # be the service's work, and it would start the meaning build there too).
    env = {**os.environ, "PYTHONPATH": str(ROOT), SWITCH: "0"}
    words = measured_run([sys.executable, "-m", "mcp_nextcloud", "index", "add", str(folder), "--index", str(db)], env)
    meaning = measured_run([sys.executable, "-m", "mcp_nextcloud.indexer.jobs.embed", "--index", str(db)], env)
    out = {"keyword_pss_mib": round(words["pss"], 1), "meaning_pss_mib": round(meaning["pss"], 1),
           "meaning_s": round(meaning["s"], 1)}
    if shutil.which("recollindex"):
        recoll = measured_run(["recollindex", "-c", str(recoll_config(tmp / "recoll", folder)), "-z"])
        out["recoll_pss_mib"] = round(recoll["pss"], 1)
        out["whole_build_vs_recoll"] = round(max(words["pss"], meaning["pss"]) / recoll["pss"], 2)
    return out


_ASKER = """
import sys, time
from mcp_nextcloud.indexer.embedding import embed_query
embed_query("a first question loads the model")
t0 = time.perf_counter()
for i in range(int(sys.argv[1])):
    embed_query(f"how do I parse command line arguments in Python, take {i}")
print(time.perf_counter() - t0)
"""


def _askers_wall_s(processes: int, questions: int = 30) -> float:
    """The slowest of `processes` processes embedding `questions` new questions each at the same moment (s)."""
    import subprocess
    import sys

    procs = [subprocess.Popen([sys.executable, "-c", _ASKER, str(questions)], stdout=subprocess.PIPE, text=True)
             for _ in range(processes)]
    return round(max(float(p.communicate(timeout=600)[0].split()[-1]) for p in procs), 2)


@pytest.mark.timeout(1800)   # a few minutes at low load; the model's build dominates, and it slows with the load
def test_meaning_benchmark(tmp_path, bench_report):
    memory = _memory_part(tmp_path)
    recall = _recall_part(tmp_path)
    latency = _latency_part(tmp_path)
    # Three people's processes asking at once on two threads each: OpenMP's default spinning made this ~20x
    # one process's time on 2 cores (embedding.SPIN_COUNT). Same-run ratio: noise does not decide it.
    alone, three = _askers_wall_s(1), _askers_wall_s(3)
    b = recall["build"]
    # 37 M characters: the issue's shape (123 files of ~300k characters, ~100 chunks: the cap each), and the
    # densest shape (files below the cap: one window per CHUNKS_PER_WINDOW chunks of ~3k characters). Files
    # of one chunk each are the exception: one window per file, so that build grows with the file count.
    issue_windows = CORPUS_FILES * ew.windows_for(CORPUS_CHARS // CORPUS_FILES // 3000)
    worst_windows = CORPUS_CHARS // (3000 * ew.CHUNKS_PER_WINDOW)
    per_window_s = 1 / b["windows_per_s"]
    issue_min = round(issue_windows * per_window_s / 60, 1)
    worst_min = round(worst_windows * per_window_s / 60, 1)
    figures = {
        "recall@1, @10 keyword-only (questions)": recall["recall_keyword_only"],
        "recall@1, @10 hybrid (questions)": recall["recall_hybrid"],
        "questions / keyword queries": f"{len(QUESTIONS)} / {len(KEYWORD)}",
        "keyword queries keeping their top hit": recall["keyword_top_hit_kept"],
        "build: windows, embedded chars, seconds": (b["windows"], b["chars"], b["seconds"]),
        "build: embedded chars/s, windows/s": (b["embedded_chars_per_s"], b["windows_per_s"]),
        "build: source chars of the recall corpus": b["source_chars"],
        "build: peak RSS MB (growth MB)": (b["peak_rss_mb"], b["rss_growth_mb"]),
        "37M chars, 123 files: windows, minutes": (issue_windows, issue_min),
        "37M chars, densest shape (1 window per 3 chunks): windows, minutes": (worst_windows, worst_min),
        "37M chars in one-chunk files (1 window per file): windows, minutes": (
            CORPUS_CHARS // 3000, round(CORPUS_CHARS // 3000 * per_window_s / 60, 1)),
        "latency index: documents, vectors": (latency["documents"], latency["vectors"]),
        "keyword build of the latency index s": latency["keyword_build_s"],
        "vectors size / keyword index size (vectors MB)": (latency["vectors_bytes_vs_keyword_index"],
                                                           latency["vectors_mb"]),
        "keyword-only p50 ms (word, question)": (latency["keyword_word_p50_ms"], latency["keyword_question_p50_ms"]),
        "hybrid p50 ms (new question, repeated)": (latency["hybrid_new_question_p50_ms"],
                                                    latency["hybrid_repeated_question_p50_ms"]),
        "query embedding p50 ms": latency["query_embedding_p50_ms"],
        "30 new questions: one process alone, three processes at once (s)": (alone, three),
        "build memory PSS MiB: keyword, meaning, recollindex": (memory["keyword_pss_mib"], memory["meaning_pss_mib"],
                                                                 memory.get("recoll_pss_mib")),
        "load average at the end": os.getloadavg()[0],
    }
    budgets = [
        ("recall@10 hybrid (questions)", recall["recall_hybrid"][1], 0.9, ">="),
        ("keyword queries keep their top hit", recall["keyword_top_hit_kept"], 1.0, ">="),
        ("hybrid p50 ms at 10k docs (new question)", latency["hybrid_new_question_p50_ms"], 30.0, "<="),
        ("keyword-only p50 ms at 10k docs (word)", latency["keyword_word_p50_ms"], 10.0, "<="),
        ("embedding 37M chars, 123 files (min)", issue_min, 10.0, "<="),
        ("embedding 37M chars, densest shape (min)", worst_min, 10.0, "<="),
        ("vectors / keyword index on disk", latency["vectors_bytes_vs_keyword_index"], 1.5, "<="),
        ("three asking processes at once / one alone (wall)", round(three / alone, 2), 6.0, "<="),
    ]
    # The memory budget (<= 1.25x recollindex) is judged on the issue's 37 M-character corpus, in
    # test_meaning_real_bench.py: on this small recall corpus recollindex needs ~6 MiB, and the ratio only
    # shows the interpreter's, numpy's and the model's fixed cost. Printed here as a figure, not a verdict.
    figures["whole build peak memory / recollindex's, small corpus (not the budget's corpus)"] = \
        memory.get("whole_build_vs_recoll")
    bench_report("meaning", {**figures, "raw": {"recall": recall, "latency": latency, "memory": memory}}, budgets)
    assert recall["recall_hybrid"][1] >= recall["recall_keyword_only"][1]
    assert three / alone <= 6.0, "three processes asking at once oversubscribe the cores (OpenMP spinning)"
