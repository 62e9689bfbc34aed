"""Index benchmark: build throughput, size, grep latency at 1k / 10k (/100k) documents, vs ripgrep.

A corpus is generated from a seed (not committed): Zipf-distributed words,
accented words, glued and spaced "new app" (and so "newapp client" / "new app
client" for three-word glue queries), a rare and a common term, about
10 KB per document; MCP_NEXTCLOUD_BENCH_SCALE (default 1) scales the number
of documents (1.0 = 10,000 documents, ~100 MB of text). Figures are printed
next to the issue's budgets; the run fails only on a ratio measured here
(grep vs ripgrep on the same text).
"""
from __future__ import annotations

import collections
import concurrent.futures as cf
import itertools
import os
import random
import shutil
import statistics
import subprocess
import threading
import time
from pathlib import Path

import psutil

from mcp_nextcloud.indexer.local.folder import index_folder
from mcp_nextcloud.indexer.models import FileMeta
from mcp_nextcloud.indexer.jobs.pool import ExtractionPool
from mcp_nextcloud.indexer.store.prepare import prepare
from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.reader.document import Document

SEED = 20261130
SCALE = float(os.environ.get("MCP_NEXTCLOUD_BENCH_SCALE", "1"))
N_DOCS = max(2000, int(10_000 * SCALE))
N_SHORT_100K = 90_000 if SCALE >= 1 and os.environ.get("MCP_NEXTCLOUD_BENCH_100K", "1") == "1" else 0
FIXTURES = Path(__file__).resolve().parents[1] / "mcp_nextcloud" / "fixtures" / "docs"
ACCENTED = ["réunion", "café", "crème", "façade", "naïve", "élève", "déjà", "über", "Straße", "año", "résumé",
            "coöperation", "señor", "mañana", "forêt", "hôtel", "garçon", "Zürich", "Ærø", "jalapeño"]
RARE = "zephyrquartz"
PHRASE = "quarterly budget review"


def p(values: list[float], pct: float) -> float:
    s = sorted(values)
    return s[max(0, min(len(s) - 1, int(round(pct / 100 * (len(s) - 1)))))]


def make_corpus(n: int, seed: int = SEED, words_per_doc: tuple[int, int] = (600, 2200)) -> list[str]:
    """n documents of generated prose; reproducible from `seed`."""
    rnd = random.Random(seed)
    syll = ["ka", "to", "ri", "ne", "mo", "la", "sa", "vi", "de", "pu", "ar", "on", "tr", "st", "gr", "el", "in"]
    vocab = sorted({"".join(rnd.choice(syll) for _ in range(rnd.randint(2, 4))) for _ in range(40_000)})
    rnd.shuffle(vocab)
    vocab = vocab[:25_000] + ACCENTED
    cum = list(itertools.accumulate(1.0 / (i + 1) ** 1.05 for i in range(len(vocab))))
    # Sentences are made once and re-sampled: fast to generate, still Zipf-like across documents.
    sentences = []
    for _ in range(40_000):
        words = rnd.choices(vocab, cum_weights=cum, k=rnd.randint(6, 18))
        if rnd.random() < 0.03:
            words.insert(rnd.randrange(len(words)), rnd.choice(ACCENTED))
        s = " ".join(words)
        sentences.append(s[0].upper() + s[1:] + ".")
    docs = []
    for i in range(n):
        k = rnd.randint(*words_per_doc) // 12
        parts = rnd.choices(sentences, k=k)
        r = rnd.random()
        if r < 0.03:
            parts.insert(rnd.randrange(len(parts) + 1), "Install the newapp client.")
        elif r < 0.06:
            parts.insert(rnd.randrange(len(parts) + 1), "Install the new app client.")
        if rnd.random() < 0.01:
            parts.insert(rnd.randrange(len(parts) + 1), f"The {PHRASE} is due.")
        if i % 2000 == 7:
            parts.insert(rnd.randrange(len(parts) + 1), f"Code {RARE} here.")
        # Paragraphs of ~6 sentences.
        docs.append("\n\n".join(" ".join(parts[j:j + 6]) for j in range(0, len(parts), 6)))
    return docs, vocab


def _prepare(args: tuple[str, int]):
    text, i = args
    return prepare(Document(text=text, kind="text", name=f"doc{i}.txt"))


class PeakRSS:
    """Peak resident memory of this process (sampled) while a block runs."""

    def __init__(self) -> None:
        self.proc = psutil.Process()
        self.peak = 0
        self._stop = threading.Event()

    def __enter__(self):
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = self.proc.memory_info().rss
            for c in self.proc.children(recursive=True):
                try:
                    rss += c.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, rss)
            self._stop.wait(0.05)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()


WRITER_CPU: list[float] = []  # CPU seconds of the writer thread, per build() call
BATCH = 64                    # documents per function submitted to the writer (one savepoint each)
WINDOW = 8                    # batches submitted and not yet committed (bounds memory)


def _thread_cpu(thread: threading.Thread) -> float:
    """CPU seconds a thread has used so far (Linux); 0 where unknown."""
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    except (AttributeError, OSError, TypeError):
        return 0.0


def build(index: Index, docs: list[str], start: int, pool: cf.ProcessPoolExecutor) -> float:
    """Add docs[start:] the way the product does (prepare in worker processes, the writer thread stores); seconds."""
    w = index.writer()
    cpu0 = _thread_cpu(w._thread)
    t0 = time.perf_counter()

    def record(tx):
        return [tx.upsert(FileMeta(path=f"/corpus/{i // 1000:03d}/doc{i:06d}.txt", source="local", file_id=None,
                                   etag=None, size=len(docs[i]), mtime=1.7e9 + i, mime="text/plain"))[0].id
                for i in range(start, len(docs))]

    with w.bulk():
        recs = w.call(record)
        results = pool.map(_prepare, ((docs[i], i) for i in range(start, len(docs))), chunksize=16)
        pending: collections.deque = collections.deque()
        batch: list = []
        for item in zip(recs, results, strict=True):
            batch.append(item)
            if len(batch) == BATCH:
                pending.append(w.submit(lambda tx, b=batch: [tx.store(r, p) for r, p in b]))
                batch = []
            while len(pending) > WINDOW:
                pending.popleft().result()
        pending.append(w.submit(lambda tx, b=batch: [tx.store(r, p) for r, p in b]))
        for f in pending:
            f.result()
    WRITER_CPU.append(_thread_cpu(w._thread) - cpu0)
    return time.perf_counter() - t0


def queries(vocab: list[str]) -> dict[str, list[str]]:
    return {
        "word": [vocab[50], vocab[200], vocab[1000], vocab[3000]],
        "phrase": [f'"{PHRASE}"', f'"{vocab[3]} {vocab[5]}"'],         # quoted: exactly the phrase
        "words": [PHRASE, f"{vocab[40]} {vocab[400]}"],                      # unquoted: all words, phrase first
        "accented": ["réunion", "REUNION", "Straße"],
        "glued": ["new app", "newapp"],
        "glued 3 words": ["newappclient", "new appclient"],   # the corpus has "newapp client" and "new app client"
        "rare": [RARE],
        "common": [vocab[0], vocab[1]],
        "prefix": [vocab[100][:4] + "*"],
        # Whole words as prefixes (what word-start grep asks for every term) and a short, wide prefix.
        "prefix word*": [vocab[50] + "*", vocab[1000] + "*"],
        "prefix 3 letters": [vocab[300][:3] + "*"],
    }


def latency(index: Index, qs: dict[str, list[str]], repeat: int = 15) -> dict[str, dict]:
    out = {}
    for kind, items in qs.items():
        times = []
        for q in items:
            index.grep(q)  # warm
            for _ in range(repeat):
                t0 = time.perf_counter()
                res = index.grep(q, limit=10)
                times.append((time.perf_counter() - t0) * 1000)
            assert res.total > 0, f"benchmark query {q!r} found nothing: corpus generation is broken"
        out[kind] = {"p50": round(statistics.median(times), 2), "p95": round(p(times, 95), 2)}
    return out


def test_index_benchmark(tmp_path, bench_report):
    t_all = time.perf_counter()
    docs, vocab = make_corpus(N_DOCS)
    text_bytes = sum(len(d.encode("utf-8")) for d in docs)
    figures: dict = {"documents": N_DOCS, "text MB": round(text_bytes / 1e6, 1),
                     "corpus generation s": round(time.perf_counter() - t_all, 1)}
    qs = queries(vocab)
    index = Index.open(tmp_path / "bench.db")
    workers = os.cpu_count() or 1

    # In-process, single thread: what one IndexWriter.store_document call costs.
    w = index.writer()
    sample = docs[:200]
    t0 = time.perf_counter()
    for i, d in enumerate(sample):
        rec, _ = w.upsert(FileMeta(path=f"/single/{i}.txt", source="local", file_id=None, etag=None,
                                   size=len(d), mtime=1.0, mime="text/plain"))
        w.store_document(rec.id, Document(text=d, kind="text"))
    dt = time.perf_counter() - t0
    figures["store_document in-process, 1 thread (MB/s)"] = round(sum(map(len, sample)) / 1e6 / dt, 1)
    w.remove_under("/single")
    # The workers' share alone (chunk, fold_words, zlib, JSON), CPU time of this thread.
    t0 = time.process_time()
    for d in sample:
        prepare(Document(text=d, kind="text"))
    figures["prepare alone, 1 thread (MB/s of CPU time)"] = round(
        sum(map(len, sample)) / 1e6 / max(time.process_time() - t0, 1e-9), 1)

    with PeakRSS() as mem, cf.ProcessPoolExecutor(workers) as pool:
        n1 = min(1000, N_DOCS)
        t1 = build(index, docs[:n1], 0, pool)
        lat_1k = latency(index, qs)
        t2 = build(index, docs, n1, pool)
    build_s = t1 + t2
    figures["build, extraction excluded (MB/s)"] = round(text_bytes / 1e6 / build_s, 1)
    figures["build, extraction excluded (files/s)"] = round(N_DOCS / build_s, 1)
    if sum(WRITER_CPU):
        figures["  the writer thread alone, per CPU second (MB/s)"] = round(text_bytes / 1e6 / sum(WRITER_CPU), 1)
    figures["load average during run (1 min, 2 CPUs shared)"] = round(os.getloadavg()[0], 2)
    figures["peak RSS while indexing, incl. workers (MB)"] = round(mem.peak / 1e6, 1)
    index.writer().checkpoint()
    db_bytes = os.path.getsize(tmp_path / "bench.db")
    figures["db size (MB)"] = round(db_bytes / 1e6, 1)
    figures["db size / text size"] = round(db_bytes / text_bytes, 3)
    lat_10k = latency(index, qs)
    for kind in qs:
        figures[f"grep {kind} p50/p95 ms @1k"] = f"{lat_1k[kind]['p50']} / {lat_1k[kind]['p95']}"
        figures[f"grep {kind} p50/p95 ms @{N_DOCS // 1000}k"] = f"{lat_10k[kind]['p50']} / {lat_10k[kind]['p95']}"
    # The budget holds per query kind: a median over kinds would hide the kinds that miss it.
    grep_budgets = [(f"grep {kind} top-10 p50 @{N_DOCS // 1000}k docs (ms)", lat_10k[kind]["p50"], 20.0, "<=")
                    for kind in qs]
    t0 = time.perf_counter()
    names = index.search_names(name="doc00099*")
    figures["search_names p50 ms (one call)"] = round((time.perf_counter() - t0) * 1000, 2)
    assert names.total >= 1

    # ripgrep over the same extracted text, in the same run.
    rg = shutil.which("rg")
    ratio = None
    if rg:
        textdir = tmp_path / "text"
        for i, d in enumerate(docs):
            sub = textdir / f"{i // 1000:03d}"
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"doc{i:06d}.txt").write_text(d, encoding="utf-8")
        word = qs["word"][1]
        rg_times = []
        for _ in range(5):
            t0 = time.perf_counter()
            subprocess.run([rg, "-i", "-c", "-F", word, str(textdir)], capture_output=True, check=False)
            rg_times.append((time.perf_counter() - t0) * 1000)
        ours = [index.grep(word).tookMs for _ in range(15)]
        figures["rg -i -c word over the same text (ms, median)"] = round(statistics.median(rg_times), 1)
        ratio = statistics.median(ours) / statistics.median(rg_times)
        figures["grep / rg time ratio (same word)"] = round(ratio, 4)
    else:
        figures["rg"] = "not installed (apt-get install ripgrep) - comparison skipped"

    # Growth point at ~100k documents: short notes added to the same index.
    if N_SHORT_100K:
        short, _ = make_corpus(N_SHORT_100K, seed=SEED + 1, words_per_doc=(60, 180))
        with cf.ProcessPoolExecutor(workers) as pool:
            all_docs = docs + short
            t3 = build(index, all_docs, N_DOCS, pool)
        figures["100k: added short notes (files/s)"] = round(N_SHORT_100K / t3, 1)
        lat_100k = latency(index, qs, repeat=8)
        for kind in qs:
            figures[f"grep {kind} p50/p95 ms @{(N_DOCS + N_SHORT_100K) // 1000}k"] = (
                f"{lat_100k[kind]['p50']} / {lat_100k[kind]['p95']}")
    index.close()

    # Extraction included: the real pipeline (ExtractionPool + reader) over files on disk.
    folder = tmp_path / "files"
    n_files = min(2000, N_DOCS)
    for i in range(n_files):
        ext = ".md" if i % 2 else ".txt"
        (folder / f"{i // 500}").mkdir(parents=True, exist_ok=True)
        (folder / f"{i // 500}" / f"doc{i:05d}{ext}").write_text(docs[i], encoding="utf-8")
    shutil.copytree(FIXTURES, folder / "fixtures")
    folder_bytes = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    ix2 = Index.open(tmp_path / "files.db")
    with ExtractionPool() as xpool:
        t0 = time.perf_counter()
        rep = index_folder(ix2, folder, pool=xpool)
        dt = time.perf_counter() - t0
    ix2.close()
    figures["build, extraction included (files/s)"] = round(rep.scanned / dt, 1)
    figures["build, extraction included (MB of files/s)"] = round(folder_bytes / 1e6 / dt, 1)
    figures["benchmark wall time (s)"] = round(time.perf_counter() - t_all, 1)

    bench_report("index", figures, [
        *grep_budgets,
        ("build, extraction excluded (MB/s)", figures["build, extraction excluded (MB/s)"], 20.0, ">="),
    ])
    if ratio is not None:
        # The one assertion: measured against ripgrep on the same text in the same run.
        assert ratio < 1.0, f"grep over the index is slower than rg over the raw text ({ratio:.2f}x)"
