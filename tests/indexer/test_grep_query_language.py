"""How grep reads a query: word starts (inflected forms), exact quotes, punctuated sequences, OR / NOT, caps."""
from __future__ import annotations

import pytest

from mcp_nextcloud.indexer.search.syntax import MAX_QUERY_CHARS, MAX_TERMS, read_query

FILLER = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 20


def paths(res):
    return sorted(h.path for h in res.hits)


def shown(res):
    return {h.path: [m["text"] for p in h.passages for m in p.matches] for h in res.hits}


@pytest.fixture
def inflected(index, put_text):
    w = index.writer()
    put_text(w, "/en/exact.txt", "Create a partition first.\n" + FILLER)
    put_text(w, "/en/plural.txt", FILLER + "\nThe disk has two partitions and partitioning tools.\n")
    put_text(w, "/fr/manuel.txt", "Le partitionnement du disque. Les propriétés du dossier.\n" + FILLER)
    put_text(w, "/de/handbuch.txt", "Die Partitionierung der Festplatte und die Einstellungen.\n" + FILLER)
    put_text(w, "/en/regex.txt", "Use regular expressions to match names.\n" + FILLER)
    put_text(w, "/en/inside.txt", "A repartition of costs (not at a word start).\n" + FILLER)
    put_text(w, "/v/python.txt", "Requires Python 3.11 or later; node.js 20; write an e-mail to foo_bar.\n")
    put_text(w, "/v/loose.txt", "Chapter 3 has 11 sections; node and js are apart; mail e; foo or bar.\n")
    put_text(w, "/ops/olive.txt", "olive and badger\n")
    put_text(w, "/ops/walrus.txt", "a walrus sleeps\n")
    put_text(w, "/ops/both.txt", "olive oil, a walrus and a badger\n")
    return index


def test_inflected_forms_are_found_in_english_french_and_german(inflected):
    res = inflected.grep("partition")
    assert paths(res) == ["/de/handbuch.txt", "/en/exact.txt", "/en/plural.txt", "/fr/manuel.txt"]
    assert shown(res)["/de/handbuch.txt"] == ["Partition"]            # Partitionierung, at its start
    assert "/en/inside.txt" not in paths(res)                          # "repartition" does not start with it
    # The whole word ranks above the files that only hold longer forms.
    assert res.hits[0].path == "/en/exact.txt"
    assert paths(inflected.grep("propriété")) == ["/fr/manuel.txt"]    # propriétés
    assert paths(inflected.grep("Einstellung")) == ["/de/handbuch.txt"]
    assert paths(inflected.grep("regular expression")) == ["/en/regex.txt"]
    assert inflected.grep("regular expression").hits[0].phrase is True


def test_quotes_ask_for_the_exact_whole_words(inflected):
    assert paths(inflected.grep('"partition"')) == ["/en/exact.txt"]
    assert inflected.grep('"regular expression"').total == 0
    assert paths(inflected.grep('"regular expressions"')) == ["/en/regex.txt"]


@pytest.mark.parametrize(("query", "text"), [("3.11", "3.11"), ("node.js", "node.js"), ("e-mail", "e-mail"),
                                             ("foo_bar", "foo_bar")])
def test_a_term_with_inner_punctuation_is_matched_as_the_sequence(inflected, query, text):
    res = inflected.grep(query)
    assert paths(res) == ["/v/python.txt"], query          # not the file with the pieces apart
    assert shown(res)["/v/python.txt"] == [text]


def test_or_and_not(inflected):
    assert paths(inflected.grep("olive OR walrus")) == ["/ops/both.txt", "/ops/olive.txt", "/ops/walrus.txt"]
    assert paths(inflected.grep("olive AND badger")) == ["/ops/both.txt", "/ops/olive.txt"]
    assert paths(inflected.grep("badger -walrus")) == ["/ops/olive.txt"]
    assert paths(inflected.grep("badger NOT walrus")) == ["/ops/olive.txt"]
    assert paths(inflected.grep("walrus OR olive -badger")) == ["/ops/walrus.txt"]
    res = inflected.grep("olive OR walrus")
    assert res.notes == [] and all(len(shown(res)[p]) >= 1 for p in paths(res))


def test_operator_looking_words_taken_literally_say_so(inflected):
    res = inflected.grep("olive or walrus")
    assert paths(res) == []          # "or" is a word here: no file holds olive, or and walrus
    assert any("'or' was searched as a word" in n and "OR" in n for n in res.notes)
    res = inflected.grep("NEAR(olive badger)")
    assert paths(res) == ["/ops/both.txt", "/ops/olive.txt"]
    assert any("NEAR" in n for n in res.notes)
    assert "notes" in res.to_dict()


def test_query_caps_refuse_with_the_reason():
    with pytest.raises(ValueError, match=f"at most {MAX_QUERY_CHARS}"):
        read_query("word " * 200)
    with pytest.raises(ValueError, match=f"at most {MAX_TERMS} are searched"):
        read_query(" ".join(f"w{i}" for i in range(MAX_TERMS)) + " -w99")
    with pytest.raises(ValueError, match=f"at most {MAX_TERMS} are searched"):
        read_query(" OR ".join(f"w{i}" for i in range(MAX_TERMS + 1)))
    # Plain words have no cap (issue 48: a question's extra words belong to meaning).
    assert read_query(" ".join(f"w{i}" for i in range(40))).terms == 40
    with pytest.raises(ValueError, match="only words to exclude"):
        read_query("-alone -other")


def test_a_short_prefix_expands_to_a_bounded_number_of_words(index, put_text):
    from mcp_nextcloud.indexer.search import query as q

    words = " ".join(f"zork{i:03d}" for i in range(q.MAX_EXPANSION + 10))
    put_text(index.writer(), "/many.txt", words + "\n")
    res = index.grep("zork")
    assert res.total == 1
    assert any(f"more than {q.MAX_EXPANSION} indexed words" in n for n in res.notes)


def test_passages_on_request(index, put_text):
    put_text(index.writer(), "/p.txt", ("A quokka here.\n" + FILLER + "\n") * 4)
    assert len(index.grep("quokka").hits[0].passages) == 1
    assert len(index.grep("quokka", passages=3).hits[0].passages) == 3
    with pytest.raises(ValueError, match="passages"):
        index.grep("quokka", passages=0)


def test_one_punctuated_term_of_many_tokens_is_still_searched(inflected):
    """Found by the property test: "0:0:¼:0¡¼" is one plain term of 7 tokens, too long to rank as a phrase;
    it had no tier at all (IndexError). It is searched as all its words."""
    res = inflected.grep("0:0:¼:0¡¼")
    assert res.total == 0 and res.hits == []
