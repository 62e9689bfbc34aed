"""page: budgeted slices that never split a grapheme, prefer line ends and cover the text exactly."""
from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_nextcloud.reader import Document, page
from mcp_nextcloud.reader.slicing import DEFAULT_PAGE_CHARS, MAX_PAGE_CHARS, is_grapheme_boundary


def doc_of(text: str, pages: list[int] | None = None) -> Document:
    return Document(text=text, kind="text", pages=pages or [0])


def walk(doc: Document, limit: int) -> list:
    slices, offset = [], 0
    while True:
        s = page(doc, offset=offset, limit=limit)
        slices.append(s)
        if s.next_offset is None:
            return slices
        assert s.next_offset > offset  # always progresses
        offset = s.next_offset


def test_whole_short_text() -> None:
    s = page(doc_of("hello world"))
    assert (s.content, s.offset, s.returned, s.total, s.truncated, s.next_offset) == (
        "hello world", 0, 11, 11, False, None)
    assert "end of the text" in s.hint
    assert s.to_dict()["nextOffset"] is None


def test_default_and_maximum_are_documented_values() -> None:
    text = "word " * 20_000
    assert page(doc_of(text)).returned <= DEFAULT_PAGE_CHARS
    s = page(doc_of(text), limit=10 * MAX_PAGE_CHARS)
    assert s.clamped and s.returned <= MAX_PAGE_CHARS
    assert "clamped" in s.hint
    d = s.to_dict()
    assert d["clamped"] is True and d["limit"] == MAX_PAGE_CHARS


def test_prefers_a_line_end_then_a_space() -> None:
    text = ("x" * 90 + "\n") * 3
    s = page(doc_of(text), limit=100)
    assert s.content.endswith("\n") and s.returned == 91
    assert s.truncated and s.next_offset == 91
    assert "offset=91" in s.hint and "find" in s.hint and "outline" in s.hint
    words = "abcdefghi " * 30
    s = page(doc_of(words), limit=95)
    assert s.content.endswith(" ") and s.returned == 90
    # Nothing to cut at in the last fifth: the budget is used whole.
    s = page(doc_of("y" * 500), limit=100)
    assert s.returned == 100


@pytest.mark.parametrize(
    ("text", "bad_cut"),
    [
        ("ab\r\ncd", 3),  # inside CRLF
        ("ae\u0301\u0302x", 2),  # before a combining mark
        ("ae\u0301\u0302x", 3),  # between two combining marks
        ("a\U0001F468\u200d\U0001F469\u200d\U0001F467b", 2),  # ZWJ emoji family
        ("a\U0001F468\u200d\U0001F469b", 3),  # right after the ZWJ
        ("a\U0001F1EB\U0001F1F7\U0001F1E9\U0001F1EAb", 2),  # inside the first flag
        ("a\U0001F44D\U0001F3FDb", 2),  # before a skin tone modifier
        ("a\u2764\ufe0fb", 2),  # before a variation selector
    ],
)
def test_never_splits_a_grapheme(text: str, bad_cut: int) -> None:
    assert not is_grapheme_boundary(text, bad_cut)
    for limit in range(1, len(text) + 1):
        for s in walk(doc_of(text), limit):
            end = s.offset + s.returned
            assert is_grapheme_boundary(text, end)


def test_flag_pairs_are_boundaries_between_flags() -> None:
    text = "\U0001F1EB\U0001F1F7\U0001F1E9\U0001F1EA"
    assert is_grapheme_boundary(text, 2)
    assert not is_grapheme_boundary(text, 1) and not is_grapheme_boundary(text, 3)


def test_a_cluster_longer_than_the_budget_is_returned_whole() -> None:
    text = "e" + "\u0301" * 10 + "z"
    s = page(doc_of(text), limit=3)
    assert s.content == "e" + "\u0301" * 10 and s.next_offset == 11


def test_page_number_of_offset() -> None:
    doc = Document(text="one\ntwo\nthree\n", kind="pdf", pages=[0, 4, 8])
    assert page(doc, offset=5).page == 2
    assert page(doc, offset=8).page == 3
    assert page(doc, offset=8).to_dict()["pageUnit"] == "page"


def test_offset_at_the_end_and_beyond() -> None:
    doc = doc_of("abc")
    s = page(doc, offset=3)
    assert s.content == "" and s.next_offset is None
    with pytest.raises(ValueError, match="3 characters"):
        page(doc, offset=4)
    with pytest.raises(ValueError, match="offset"):
        page(doc, offset=-1)
    with pytest.raises(ValueError, match="limit"):
        page(doc, limit=0)


def test_empty_text() -> None:
    s = page(doc_of(""))
    assert s.content == "" and s.total == 0 and not s.truncated


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["a", " ", "\n", "\r\n", "e\u0301", "\U0001F1EB", "\u200d", "\U0001F468", "\u00e9",
                              "\u00df"]), max_size=120).map("".join),
    st.integers(1, 40),
)
def test_following_next_offset_covers_the_text_exactly(text: str, limit: int) -> None:
    slices = walk(doc_of(text), limit)
    assert "".join(s.content for s in slices) == text
    for s in slices:
        assert is_grapheme_boundary(text, s.offset + s.returned)
        assert s.content == text[s.offset : s.offset + s.returned]


def test_paging_through_the_fixture_manual(fixture_docs) -> None:
    from mcp_nextcloud.reader import extract

    doc = extract((fixture_docs / "manual.pdf").read_bytes(), "manual.pdf")
    slices = walk(doc, DEFAULT_PAGE_CHARS)
    assert "".join(s.content for s in slices) == doc.text
    assert len(slices) >= len(doc.text) // DEFAULT_PAGE_CHARS
    for s in slices[:-1]:
        assert s.content.endswith("\n")  # a PDF has line ends in every window
        assert s.returned >= 0.8 * DEFAULT_PAGE_CHARS - 1
        assert s.page == doc.page_of(s.offset)


def test_an_offset_inside_a_grapheme_starts_at_that_grapheme() -> None:
    doc = Document(text="abe\u0301cd", kind="text")
    s = page(doc, offset=3, limit=10)   # offset 3 is the combining accent of "é"
    assert s.offset == 2 and s.content == "be\u0301cd"[1:]
    assert not unicodedata.combining(s.content[0])
