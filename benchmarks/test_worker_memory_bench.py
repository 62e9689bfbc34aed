"""Extraction workers after a large document: memory handed back between files, or a fat worker replaced (issue 17).

Two parts, each comparing the pool with and without the release in the same run:

1. One worker, one large document (an 80,000-row XLSX, a 150,000-word PDF, 33 MB of
   text), then the next small one of the same kind: the worker's RSS fresh (after a
   small document of that kind, so the parser's import is counted), at its peak,
   after the large document and after the next small one. "kept" is the pool as it
   was (nothing handed back, recycled only after RECYCLE_AFTER files); "released"
   hands memory back (malloc_trim, gc.collect before a recycle) with recycling off,
   to show what the release alone does; "default" is the pool as shipped. Also the
   cost of a recycle: files through a pool that replaces its worker after every
   file against one that keeps it.
2. A whole build (`index_folder`, the code `index add` runs) of a corpus whose first
   files are the large text and spreadsheet, then long text documents and PDFs;
   RSS summed over every process (main, fork server, workers), sampled: peak, mean
   over the build, and median over its second half (after the large documents),
   kept against default. The peak is reached while the large text is extracted and
   is the same either way: the release changes what the rest of the build holds.

The run fails only on ratios of the same run: after the next small document a
released worker must hold at most half of what a kept one holds above fresh (where
that is more than the heap a worker keeps for its next document, KEEP_FOR_NEXT), and
the default build's summed RSS over its second half must not exceed the kept one's.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from benchmarks.conftest import report
from benchmarks.test_index_bench import make_corpus
from benchmarks.test_lean_bench import ROOT, _prose_pdf, _tree_memory, checkout_env
from mcp_nextcloud.indexer.jobs.pool import ExtractionPool
from mcp_nextcloud.indexer.jobs.worker_memory import KEEP_FOR_NEXT, MIB, RECYCLE_ABOVE_FRESH

FIXTURES = ROOT / "mcp_nextcloud" / "fixtures" / "docs"
SEED = 20261217
BUILD_ROUNDS = 2
RECYCLE_FILES = 12
# The pool's settings per mode: (release_memory, recycle_above).
MODES: dict[str, tuple[bool, int | None]] = {"kept": (False, None), "released": (True, None),
                                             "default": (True, RECYCLE_ABOVE_FRESH)}


# ------------------------------------------------------------------ documents

def large_xlsx(rows_per_sheet: int = 20_000, sheets: int = 4) -> bytes:
    import io

    from openpyxl import Workbook

    words, _ = make_corpus(1, seed=SEED, words_per_doc=(600, 600))
    vocab = words[0].split()
    wb = Workbook(write_only=True)
    for s in range(sheets):
        ws = wb.create_sheet(f"Sheet{s + 1}")
        for r in range(rows_per_sheet):
            ws.append([r, r * 1.5, " ".join(vocab[(r + k) % len(vocab)] for k in range(6)),
                       vocab[(r * 7) % len(vocab)], r * 3, f"row {r} of sheet {s + 1}"])
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def large_text(words: int = 4_000_000) -> bytes:
    docs, _ = make_corpus(1, seed=SEED, words_per_doc=(words, words))
    return docs[0].encode()


def long_pdf(words: int = 150_000) -> bytes:
    docs, _ = make_corpus(1, seed=SEED + 1, words_per_doc=(words, words))
    return _prose_pdf(docs[0])


# ------------------------------------------------------------------ one worker

def _rss(pid: int) -> float:
    try:
        return psutil.Process(pid).memory_info().rss / MIB
    except psutil.Error:
        return 0.0


def _settled(pool: ExtractionPool) -> float:
    """The worker's RSS (MiB) once it has settled after a file (it hands memory back after answering)."""
    last, steady = -1.0, 0
    for _ in range(100):
        time.sleep(0.02)
        now = sum(_rss(pid) for pid in pool.pids())
        steady = steady + 1 if abs(now - last) < 0.5 else 0
        if steady >= 5:
            break
        last = now
    return round(last, 1)


def _peak_while(pool: ExtractionPool, run: Any) -> float:
    peak = [0.0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], sum(_rss(pid) for pid in pool.pids()))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        run()
    finally:
        done.set()
        sampler.join()
    return round(peak[0], 1)


def one_worker(mode: str, name: str, large: bytes, small_name: str) -> dict[str, float]:
    release, above = MODES[mode]
    small = (FIXTURES / small_name).read_bytes()
    with ExtractionPool(1, release_memory=release, recycle_above=above) as pool:
        pool.extract(small, small_name, None)
        fresh = _settled(pool)
        peak = _peak_while(pool, lambda: pool.extract(large, name, None))
        after = _settled(pool)
        pool.extract(small, small_name, None)
        after_small = _settled(pool)
        return {"fresh": fresh, "peak": peak, "after": after, "after_small": after_small,
                "recycled": pool.recycled_fat}


def recycle_cost(name: str) -> dict[str, float]:
    """ms per file through a worker replaced after every file, and through one kept (a small fixture)."""
    data = (FIXTURES / name).read_bytes()
    out = {}
    for label, above in (("kept", RECYCLE_ABOVE_FRESH), ("recycled", -1)):   # -1: fat after any file
        with ExtractionPool(1, recycle_above=above) as pool:
            pool.extract(data, name, None)
            t0 = time.perf_counter()
            for _ in range(RECYCLE_FILES):
                pool.extract(data, name, None)
            out[label] = (time.perf_counter() - t0) * 1000 / RECYCLE_FILES
            out[f"{label} recycles"] = pool.recycled_fat
    return out


# ------------------------------------------------------------------ a build

DRIVER = """
import json, sys
from mcp_nextcloud.indexer.jobs.pool import ExtractionPool
from mcp_nextcloud.indexer.local.folder import index_folder
from mcp_nextcloud.indexer.index import Index
release, above = json.loads(sys.argv[1])
with Index.open(sys.argv[3]) as index, ExtractionPool(release_memory=release, recycle_above=above) as pool:
    r = index_folder(index, sys.argv[2], pool=pool)
    print(json.dumps({"extracted": r.extracted, "failed": r.failed, "recycled": pool.recycled_fat}))
"""


def make_build_corpus(folder: Path, text: bytes, xlsx: bytes) -> int:
    folder.mkdir(parents=True)
    (folder / "000-large.txt").write_bytes(text)    # walked first: extracted at the start of the build
    (folder / "001-large.xlsx").write_bytes(xlsx)
    docs, _ = make_corpus(120, seed=SEED + 2, words_per_doc=(6000, 30000))
    for i, doc in enumerate(docs):
        (folder / f"doc{i:03d}.txt").write_text(doc, encoding="utf-8")
    pdfs, _ = make_corpus(6, seed=SEED + 3, words_per_doc=(6000, 15000))
    for i, doc in enumerate(pdfs):
        (folder / f"report{i}.pdf").write_bytes(_prose_pdf(doc))
    return sum(1 for _ in folder.iterdir())


def _children_cpu() -> float:
    import resource

    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def build(mode: str, folder: Path, db: Path, env: dict[str, str]) -> dict[str, Any]:
    """One build in its own process: summed RSS sampled over its whole process tree."""
    release, above = MODES[mode]
    cpu0 = _children_cpu()
    proc = psutil.Popen([sys.executable, "-c", DRIVER, json.dumps([release, above]), str(folder), str(db)],
                        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    samples: list[tuple[float, float, float]] = []
    t0 = time.perf_counter()
    while proc.poll() is None:
        rss, pss = _tree_memory(proc)
        samples.append((time.perf_counter() - t0, rss / MIB, pss / MIB))
        time.sleep(0.05)
    out, err = proc.communicate()
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    result = json.loads(out)
    assert result["failed"] == 0, result
    seconds = time.perf_counter() - t0
    cpu = _children_cpu() - cpu0   # the whole tree: the fork server reaps the workers, the driver the server
    sums = [s[1] for s in samples if s[1]]
    late = [s[1] for s in samples if s[1] and s[0] > seconds / 2]
    return {"s": seconds, "cpu": cpu, "peak": max(sums), "pss": max(s[2] for s in samples),
            "mean": statistics.fmean(sums), "late": statistics.median(late), "recycled": result["recycled"]}


# ------------------------------------------------------------------ the benchmark

def _diff_ratio(a: dict[str, float], b: dict[str, float], key: str) -> float:
    """(a[key] - fresh) / (b[key] - fresh): what a holds above fresh next to what b holds (b's growth >= 1 MiB)."""
    return round(max(0.0, a[key] - a["fresh"]) / max(1.0, b[key] - b["fresh"]), 3)


def test_worker_memory(tmp_path: Path) -> None:
    text, xlsx, pdf = large_text(), large_xlsx(), long_pdf()
    cases = [("large.xlsx", xlsx, "budget.xlsx"), ("long.pdf", pdf, "manual.pdf"), ("large.txt", text, "notes.txt")]
    figures: dict[str, Any] = {"large documents (MB)": {n: round(len(d) / 1e6, 1) for n, d, _ in cases},
                               "recycle above fresh (MiB)": RECYCLE_ABOVE_FRESH // MIB,
                               "heap kept for the next document (MiB)": KEEP_FOR_NEXT // MIB}
    held: dict[str, float] = {}
    for name, data, small in cases:
        runs = {mode: one_worker(mode, name, data, small) for mode in MODES}
        for mode, r in runs.items():
            figures[f"{name} {mode}: RSS fresh / peak / after / after next small (MiB)"] = (
                f"{r['fresh']:.0f} / {r['peak']:.0f} / {r['after']:.0f} / {r['after_small']:.0f}"
                + (f" ({r['recycled']} recycled)" if r["recycled"] else ""))
        kept_held = runs["kept"]["after_small"] - runs["kept"]["fresh"]
        if kept_held > KEEP_FOR_NEXT / MIB:   # below it the heap is kept for the next document, by design
            held[name] = _diff_ratio(runs["released"], runs["kept"], "after_small")
        figures[f"{name}: held above fresh after next small, released / kept"] = held.get(
            name, f"kept held {kept_held:.0f} MiB, not more than what is kept for the next document")
        figures[f"{name}: default worker after next small / fresh"] = round(
            runs["default"]["after_small"] / runs["default"]["fresh"], 2)
    for small, what in (("notes.txt", "a fork from the fork server"), ("report.docx", "and python-docx's import")):
        ms = recycle_cost(small)
        figures[f"ms per {small}: kept worker / worker recycled after each file"] = (
            f"{ms['kept']:.1f} / {ms['recycled']:.1f} ({ms['recycled recycles']:.0f} recycles)")
        figures[f"cost of one recycle before {small} (ms: {what})"] = round(ms["recycled"] - ms["kept"], 1)

    folder = tmp_path / "corpus"
    figures["build corpus files"] = make_build_corpus(folder, text, xlsx)
    env = checkout_env(tmp_path / "pycache")
    builds: dict[str, list[dict[str, Any]]] = {"kept": [], "default": []}
    build("default", folder, tmp_path / "warm.db", env)   # bytecode and page cache
    for round_ in range(BUILD_ROUNDS):
        for mode in builds:
            builds[mode].append(build(mode, folder, tmp_path / f"{mode}{round_}.db", env))
    for mode, runs_ in builds.items():
        figures[f"build {mode}: seconds (sampling every process's PSS slows it)"] = [round(b["s"], 1) for b in runs_]
        figures[f"build {mode}: CPU seconds, all processes"] = [round(b["cpu"], 1) for b in runs_]
        figures[f"build {mode}: summed RSS peak / mean / median of 2nd half (MiB)"] = [
            f"{b['peak']:.0f} / {b['mean']:.0f} / {b['late']:.0f}" for b in runs_]
        figures[f"build {mode}: summed PSS peak (MiB)"] = [round(b["pss"]) for b in runs_]
        figures[f"build {mode}: workers recycled"] = [b["recycled"] for b in runs_]

    def ratio(key: str) -> float:
        pairs = zip(builds["default"], builds["kept"], strict=True)
        return round(statistics.median(d[key] / k[key] for d, k in pairs), 3)

    mean_ratio, late_ratio, peak_ratio = ratio("mean"), ratio("late"), ratio("peak")
    figures["build default / kept: summed RSS peak"] = peak_ratio
    figures["build default / kept: CPU seconds (the cost of the release)"] = ratio("cpu")
    worst_held = max(held.values())
    default_after = max(v for k, v in figures.items() if k.endswith("default worker after next small / fresh"))
    report("worker_memory", figures, [
        ("worker held after next small, released / kept (worst)", worst_held, 0.5, "<="),
        ("default worker after next small / fresh (worst)", default_after, 2.0, "<="),
        ("build summed RSS mean, default / kept", mean_ratio, 1.0, "<="),
        ("build summed RSS, median of 2nd half, default / kept", late_ratio, 1.0, "<="),
    ])
    assert worst_held <= 0.5, f"handing memory back saved too little: {held}"
    assert late_ratio <= 1.0, f"the build held no less after its large documents: {late_ratio}"
