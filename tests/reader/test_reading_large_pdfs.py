"""Moving in a large PDF (issue 48, item 7): the outline opens the branch asked for, find ranks and labels.

The fixture is shaped like gnuplot's manual: a table of contents, a part with 40 commands of 3 subsections
each, a back-of-book index, and the text cases find must tell apart (a word, part of a word, a word split
by a line break between two lines, a hyphenated word, a phrase across a line break).
"""
from __future__ import annotations

import json

import pytest

from mcp_nextcloud.fixtures import large_docs
from mcp_nextcloud.indexer.search import furniture as search_furniture
from mcp_nextcloud.reader import Document, extract, find, outline
from mcp_nextcloud.reader import furniture
from mcp_nextcloud.reader.outline import OUTLINE_BUDGET


@pytest.fixture(scope="module")
def manual() -> Document:
    return extract(large_docs.plotting_manual_pdf(), "plotting-manual.pdf")


def _size(o) -> int:
    return len(json.dumps(o.to_dict(), separators=(",", ":"), ensure_ascii=False).encode())


def _titles(o) -> list[str]:
    return [e.title for e in o.entries]


def test_without_a_focus_the_biggest_part_is_opened(manual):
    o = outline(manual)
    assert _size(o) <= OUTLINE_BUDGET and o.entry_count == 197
    titles = _titles(o)
    assert "Splot" in titles and "Zoom" in titles        # the 40 commands, not a bare list of 5 parts
    assert len(o.entries) + sum(o.subsections) == 197 and not o.truncated
    assert o.subsections[titles.index("Splot")] == 3


def test_a_hit_offset_opens_its_branch_and_siblings(manual):
    hit = manual.text.index("Examples of splot")
    o = outline(manual, offset=hit)
    titles = _titles(o)
    assert _size(o) <= OUTLINE_BUDGET
    assert {"III Commands", "Splot", "Splot examples"} <= set(titles)           # the path to the hit
    assert {"Splot syntax", "Splot options", "Shell", "Stats"} <= set(titles)   # its siblings, its parent's
    assert titles[0] == "I Basics" and titles[-1] == "Index"                    # the rest of the book, counted
    assert len(o.entries) + sum(o.subsections) == 197


@pytest.mark.parametrize("section", ["splot", "SPLOT", "Splot surfaces"])
def test_a_section_by_name_or_by_text(manual, section):
    if section == "Splot surfaces":   # no such title: the section holding the text's best match of it
        with pytest.raises(ValueError, match="no outline entry titled"):
            outline(manual, section=section)
        o = outline(manual, section="splot x y")
    else:
        o = outline(manual, section=section)
    titles = _titles(o)
    assert titles[titles.index("Splot") + 1: titles.index("Splot") + 4] == [
        "Splot syntax", "Splot examples", "Splot options"]


def test_find_ranks_body_words_first_and_says_which_are_which(manual):
    res = find(manual, "splot", ranked=True, limit=50)
    d = res.to_dict()
    kinds = [(m["kind"], m.get("in")) for m in d["matches"]]
    assert kinds[0] == ("word", None) and d["matches"][0]["page"] == 2    # body text, not "Splot 9" in the ToC
    assert kinds[-2:] == [("word", "toc"), ("word", "index")]            # the ToC and index lines last
    assert ("part", None) in kinds and kinds.index(("part", None)) > kinds.index(("word", None))
    assert d["kinds"] == {"word": 13, "part": 1, "toc": 1, "index": 1}
    assert "wholeWord" not in d["matches"][0]
    plain = find(manual, "splot")                                         # unranked: text order, as grep needs
    assert [m.offset for m in plain.matches] == sorted(m.offset for m in plain.matches)


def test_a_line_break_between_two_lines_is_not_a_glued_word(manual):
    texts = [m.text for m in find(manual, "splot", limit=100).matches]
    assert "s\nplot" not in texts                     # "uses" / "plot commands": two words on two lines
    assert "s plot" in texts                          # within a line, spaces still fold ("axis plots")
    hyphenated = find(manual, "isosurface").matches
    assert hyphenated[0].text == "isosur-\nface"      # a hyphen at the line's end: the word goes on
    phrase = [m.text for m in find(manual, "linear models").matches]
    assert "linear\nmodels" in phrase                 # the query separates the words there too
    assert find(Document("new\napp", "text"), "newapp").total == 0
    assert find(Document("newapp", "text"), "new app").total == 1
    assert find(Document("new\napp", "text"), "new app").total == 1


def test_linear_models_before_nonlinear_models(manual):
    matches = find(manual, "linear models", ranked=True).to_dict()["matches"]
    assert [m["kind"] for m in matches] == ["word", "word", "part"]
    assert "nonlinear" in manual.text[matches[-1]["offset"] - 3: matches[-1]["offset"] + 6]


def test_find_from_an_offset_is_in_text_order(manual):
    start = manual.text.index("III Commands\nBreak")
    res = find(manual, "splot", start=start, limit=3)
    assert [m.offset for m in res.matches] == sorted(m.offset for m in res.matches)
    assert all(m.offset >= start for m in res.matches) and res.total == 13   # the ones from there on


@pytest.mark.parametrize(("line", "around", "kind"), [
    ("Splot 226", ["Shell 226", "Set 220", "Stats 229", "System 230"], "toc"),
    ("Splot surfaces . . . . . . . . 231", [], "toc"),
    ("shell, 226", ["set, 130", "sgn, 38", "show, 130"], "index"),
    ("splot, 129, 155, 193", [], "index"),
    ("Next", [], "nav"),
    ("Splot 226", ["The splot command draws surfaces.", "It takes data files."], None),   # alone among prose
    ("set samples 100", ["set isosamples 10", "set xrange 5"], None),                     # code, not a ToC
    ("Surfaces are drawn by the splot command.", [], None),
])
def test_listing_lines(line, around, kind):
    assert furniture.listing_kind(line, around) == kind


def test_the_search_uses_the_readers_line_rule():
    assert search_furniture.furniture is furniture.furniture
    assert search_furniture.numbered_heading is furniture.numbered_heading
