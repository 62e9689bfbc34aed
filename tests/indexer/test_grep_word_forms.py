"""Word forms: a query word finds the other forms of it in the document's language (Snowball stems),
after the hits it found before; glued words still find the words apart; an index from v4 keeps working."""
from __future__ import annotations

import apsw
import pytest

from mcp_nextcloud.indexer.index import Index

pytest.importorskip("Stemmer")

EN = ("The service runs every night and the runner logs what it saw. It ran quickly; the scheduler "
      "was started by the operator who has been there for years, and this is what they do.\n")
FR = ("Les enfants mangeaient des pommes dans le jardin et la grand-mère les regardait avec plaisir. "
      "Ils sont partis pour une promenade sur la route avec leur chien.\n")
DE = ("Die Kinder liefen durch den Garten und der Hund ist nicht mit ihnen auf die Straße gegangen. "
      "Das Haus wird von den Eltern gebaut, die Häuser sind alt.\n")


def _paths(res):
    return [h.path for h in res.hits]


def _matched(res):
    return [m["text"] for h in res.hits for p in h.passages for m in p.matches]


def test_a_word_finds_its_other_forms_with_a_passage_on_them(index, put_text):
    w = index.writer()
    put_text(w, "/en.txt", EN)
    put_text(w, "/fr.txt", FR)
    put_text(w, "/de.txt", DE)
    res = index.grep("running")          # "running" is nowhere; "runs" (stem run) is
    assert _paths(res) == ["/en.txt"] and _matched(res) == ["runs"]
    offsets = [p.passageOffset for h in res.hits for p in h.passages]
    assert EN[offsets[0]:offsets[0] + len(res.hits[0].passages[0].passage)] == res.hits[0].passages[0].passage
    assert _paths(index.grep("manger")) == ["/fr.txt"]          # mangeaient (stem mang)
    assert _matched(index.grep("Häuser")) == ["Häuser"]           # the word itself first
    assert _paths(index.grep("Hauses")) == ["/de.txt"]           # Haus


def test_languages_are_detected_per_document(index, put_text):
    w = index.writer()
    for name, text in (("/en.txt", EN), ("/fr.txt", FR), ("/de.txt", DE), ("/code.txt", "x = 1\ny = 2\n"),
                       ("/both.txt", EN + FR)):
        put_text(w, name, text)
    langs = dict(index.conn().execute("SELECT path, lang FROM files"))
    assert langs == {"/en.txt": "en", "/fr.txt": "fr", "/de.txt": "de", "/code.txt": "", "/both.txt": "en,fr"}
    st = index.status()["wordForms"]
    assert st == {"stemmers": True, "languages": {"de": 1, "en": 1, "en,fr": 1, "fr": 1}, "noLanguage": 1,
                  "beforeDetection": 0}


def test_a_bilingual_document_is_stemmed_in_both_languages(index, put_text):
    """The only file is English and French: French forms are found though no file is French alone."""
    put_text(index.writer(), "/both.txt", EN + FR)
    assert _paths(index.grep("manger")) == ["/both.txt"] and _paths(index.grep("swimming")) == []
    assert _paths(index.grep("scheduling")) == ["/both.txt"]   # scheduler (stem schedul)


def test_former_hits_keep_their_places_forms_come_after(index, put_text):
    w = index.writer()
    put_text(w, "/exact.txt", "the runner is fast\n")
    put_text(w, "/form.txt", "she runs daily\n")
    put_text(w, "/start.txt", "a runnerup prize\n")
    res = index.grep("runner")
    assert _paths(res) == ["/exact.txt", "/start.txt"]   # "runs" has stem "run", "runner" has "runner"
    res = index.grep("runs")
    assert _paths(res)[0] == "/form.txt"


def test_quoted_words_match_as_typed_only(index, put_text):
    put_text(index.writer(), "/en.txt", EN)
    assert index.grep('"running"').total == 0


def test_a_glued_query_finds_the_words_apart(index, put_text):
    put_text(index.writer(), "/re.txt", "A regular expression matches text.\n")
    res = index.grep("regularexpression")
    assert _paths(res) == ["/re.txt"] and _matched(res) == ["regular expression"]


def test_a_v4_index_opens_and_stems_in_every_language(tmp_path, put_text):
    """An index built before language detection (v4) migrates; its files (lang NULL) are stemmed in every
    supported language, so word forms work before any rebuild."""
    from mcp_nextcloud.indexer.store.schema import MIGRATIONS, SCHEMA_VERSION

    db = tmp_path / "v4.db"
    con = apsw.Connection(str(db))
    for step in MIGRATIONS[:4]:
        con.execute(step)
    con.execute("PRAGMA user_version=4")
    con.close()
    with Index.open(db) as ix:
        put_text(ix.writer(), "/fr.txt", FR)
        ix.writer().call(lambda tx: tx.con.execute("UPDATE files SET lang=NULL"))
        assert ix.conn().execute("PRAGMA user_version").fetchall()[0][0] == SCHEMA_VERSION
        assert _paths(ix.grep("manger")) == ["/fr.txt"]
        assert ix.status()["wordForms"]["beforeDetection"] == 1


def test_the_answer_says_when_hits_hold_other_forms(index, put_text):
    put_text(index.writer(), "/en.txt", EN)
    notes = index.grep("running").notes
    assert any("other forms" in n and "'running' (" in n and "runs" in n for n in notes)
    assert not any("other forms" in n for n in index.grep("runs").notes)   # the word itself is there


def test_forms_combine_with_or_and_exclusions(index, put_text):
    w = index.writer()
    put_text(w, "/en.txt", EN)
    put_text(w, "/swim.txt", "She swims every morning before the others are there, and this is what it was.\n")
    assert sorted(_paths(index.grep("running OR swimming"))) == ["/en.txt", "/swim.txt"]
    assert _paths(index.grep("swimming -scheduler")) == ["/swim.txt"]
    assert _paths(index.grep("running -scheduler")) == []


KEYWORD_QUERIES = ["install", "quota", "new app", "newapp", "aubergine lighthouse", "saffron gecko", "config*",
                   "dépenses de janvier", "olive badger", "violet walrus", "naïve café", "partag", "the server",
                   "fichiers", "synchronisation", '"every file version"', "amber OR coral", "quota -walrus"]


def test_keyword_queries_keep_their_hits_and_order_over_the_sample_documents(index, fixture_docs, counting_pool):
    """Today's queries over the real sample documents: with word forms the hits found before come first, in
    the same order (forms only add files after them)."""
    from mcp_nextcloud.indexer.local.folder import index_folder
    from mcp_nextcloud.indexer.search import wordforms

    index_folder(index, fixture_docs, pool=counting_pool)
    for q in KEYWORD_QUERIES:
        wordforms.ENABLED = False
        try:
            before = [(h.path, [p.passageOffset for p in h.passages]) for h in index.grep(q, limit=20).hits]
        finally:
            wordforms.ENABLED = True
        after = [(h.path, [p.passageOffset for p in h.passages]) for h in index.grep(q, limit=20).hits]
        assert before, q
        assert after[:len(before)] == before, q
