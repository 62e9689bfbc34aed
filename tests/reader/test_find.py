"""find: every artefact of real PDF text, offsets into the original text, limits and hints."""
from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_nextcloud.reader import Document, NormalizedText, find, normalize, normalize_query, page
from mcp_nextcloud.reader.find import line_of

ARTEFACTS = (
    "Chapter 1\n"
    "Les propri´et´es du dossier. D`es la premi`ere synchronisation.\r\n"
    "To install the newapp package, open the store; every new app is reviewed.\n"
    "Pe\u0301riode de test; the ﬁle deﬁnes the workﬂow; Straße and Strasse.\n"
    "A\u00a0shared folder; soft\u00adhyphen; pdfium\ufffemarker; a regular expres-\nsion here.\n"
    "Zero\u200bwidth and well-known and wellknown.\n"
)


def doc_of(text: str, pages: list[int] | None = None) -> Document:
    return Document(text=text, kind="text", pages=pages or [0])


def texts(result) -> list[str]:
    return [m.text for m in result.matches]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("proprietes", ["propri´et´es"]),
        ("propriétés", ["propri´et´es"]),
        ("PROPRIÉTÉS", ["propri´et´es"]),
        ("des", ["D`es"]),  # "dossier. D`es": ". D" separates the earlier "des" candidates
        ("première", ["premi`ere"]),
        ("new app", ["newapp", "new app"]),
        ("newapp", ["newapp", "new app"]),
        ("NEW-APP", ["newapp", "new app"]),
        ("periode", ["Pe\u0301riode"]),
        ("période", ["Pe\u0301riode"]),
        ("file defines", ["ﬁle deﬁnes"]),
        ("workflow", ["workﬂow"]),
        ("strasse", ["Straße", "Strasse"]),
        ("STRAßE", ["Straße", "Strasse"]),
        ("a shared", ["A\u00a0shared"]),
        ("softhyphen", ["soft\u00adhyphen"]),
        ("pdfiummarker", ["pdfium\ufffemarker"]),
        ("expression", ["expres-\nsion"]),
        ("zerowidth", ["Zero\u200bwidth"]),
        ("well known", ["well-known", "wellknown"]),
        ("synchronisation. to", ["synchronisation.\r\nTo"]),  # across CR LF
    ],
)
def test_every_artefact_matches(query: str, expected: list[str]) -> None:
    doc = doc_of(ARTEFACTS)
    result = find(doc, query)
    assert texts(result) == expected
    assert result.total == len(expected)
    assert result.truncated is False and result.hint is None
    for m in result.matches:
        assert ARTEFACTS[m.offset : m.offset + m.length] == m.text
        assert page(doc, offset=m.offset).content.startswith(m.text)
        assert normalize_query(query) in normalize_query(m.text)


def test_match_fields_page_line_and_passage() -> None:
    text = "alpha beta\n" * 50 + "the quantum pelican sleeps\n" + "gamma delta\n" * 50
    pages = [0, 300, 600]
    doc = doc_of(text, pages)
    result = find(doc, "Quantum  Pelican", context=30)
    assert result.total == 1
    m = result.matches[0]
    assert m.offset == text.index("quantum")
    assert m.length == len("quantum pelican")
    assert m.line == 51
    assert m.page == 2
    assert text[m.passage_offset : m.passage_offset + len(m.passage)] == m.passage
    assert "quantum pelican" in m.passage
    # Cut at whitespace: the passage neither starts nor ends inside a word.
    assert not m.passage[0].isspace() and text[m.passage_offset - 1].isspace()
    end = m.passage_offset + len(m.passage)
    assert text[end].isspace()
    d = result.to_dict()
    assert d["matches"][0]["passageOffset"] == m.passage_offset
    assert set(d) == {"query", "matches", "total", "truncated"}


def test_matches_do_not_overlap_and_total_counts_beyond_limit() -> None:
    doc = doc_of("aa aa aa aa")
    result = find(doc, "aa", limit=2)
    assert [m.offset for m in result.matches] == [0, 3]
    assert result.total == 4
    assert result.truncated is True
    assert "4 matches" in result.hint


def test_expanded_characters_match_once() -> None:
    # "ß" folds to "ss": "ss" matches it once as a whole word; the letter "s" is part of it (not a whole word).
    doc = doc_of("ß ss ß")
    result = find(doc, "ss")
    assert [(m.offset, m.text, m.whole_word) for m in result.matches] == [(0, "ß", True), (2, "ss", True),
                                                                          (5, "ß", True)]
    assert [(m.offset, m.whole_word) for m in find(doc, "s").matches] == [(0, False), (2, False), (3, False),
                                                                          (5, False)]
    assert find(doc, "s", match="whole_word").total == 0


@pytest.mark.parametrize(
    ("text", "query", "expected"),
    [
        # (match text, wholeWord) in text order: a substring search, like a PDF viewer's Ctrl-F.
        ("The reader starts there.", "here", [("he re", False), ("here", False)]),
        ("renew applications; a new app", "new app", [("new app", False), ("new app", True)]),
        ("To install the newapp package", "new app", [("newapp", True)]),
        ("The reader restores it or not", "or", [("or", False), ("or", True)]),
        ("2. Installation and install", "install", [("Install", False), ("install", True)]),
        ("2. Installation and install", "install*", [("Install", False), ("install", True)]),  # '*' is accepted
        ("Les propri\u00b4et\u00b4es", "et", [("et", False)]),
        ("Les propri\u00b4et\u00b4es", "propriétés", [("propri\u00b4et\u00b4es", True)]),
        ("Les propri\u00b4et\u00b4es", "propriété", [("propri\u00b4et\u00b4e", False)]),
        ("D`es la premi`ere", "des", [("D`es", True)]),
        ("use `code` here", "code", [("code", True)]),                  # Markdown backticks are not accents
        ("the cafe\u0301 opens", "café", [("cafe\u0301", True)]),        # the combining accent is part of it
        ("the cafe\u0301 opens", "caf", [("caf", False)]),
        ("well-known facts", "known", [("known", True)]),               # hyphens separate words, as in the index
        ("v1.2 and C++ code", "C++", [("C++", True)]),
        ("Partitionierung, partitions", "partition", [("Partition", False), ("partition", False)]),
    ],
)
def test_substring_matches_say_whether_they_are_whole_words(text: str, query: str, expected) -> None:
    assert [(m.text, m.whole_word) for m in find(doc_of(text), query).matches] == expected


@pytest.mark.parametrize(
    ("text", "query", "mode", "expected"),
    [
        ("The reader starts there.", "here", "word_start", []),
        ("renew applications; a new app", "new app", "word_start", ["new app"]),
        ("2. Installation and install", "install", "word_start", ["Install", "install"]),
        ("2. Installation and install", "install", "whole_word", ["install"]),
        ("Les propri\u00b4et\u00b4es", "et", "word_start", []),   # a spacing accent inside a word joins it
        ("the cafe\u0301 opens", "caf", "whole_word", []),
    ],
)
def test_word_start_and_whole_word_modes(text: str, query: str, mode, expected: list[str]) -> None:
    assert [m.text for m in find(doc_of(text), query, match=mode).matches] == expected


def test_unknown_match_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="match must be"):
        find(doc_of("text"), "t", match="regex")  # type: ignore[arg-type]


def test_no_match_gives_a_hint() -> None:
    result = find(doc_of(ARTEFACTS), "aubergine lighthouse")
    assert result.total == 0 and result.matches == []
    assert "fewer" in result.hint and "outline" in result.hint


@pytest.mark.parametrize("query", ["", "   ", "- ` ´", "\u00ad\u200b"])
def test_empty_queries_are_refused(query: str) -> None:
    with pytest.raises(ValueError, match="query"):
        find(doc_of("text"), query)


def test_bad_limit_and_context_are_refused() -> None:
    with pytest.raises(ValueError, match="limit"):
        find(doc_of("text"), "t", limit=-1)
    with pytest.raises(ValueError, match="context"):
        find(doc_of("text"), "t", context=-1)


def test_normalised_form_is_built_once_and_a_cached_one_is_used() -> None:
    doc = doc_of(ARTEFACTS)
    assert doc._normalized is None
    find(doc, "newapp")
    built = doc._normalized
    assert built is not None
    find(doc, "store")
    assert doc._normalized is built
    # A form from the indexer's cache (serialised) is accepted as is.
    other = doc_of(ARTEFACTS)
    other._normalized = type(built).from_bytes(built.to_bytes())
    assert texts(find(other, "proprietes")) == ["propri´et´es"]
    # So is its serialised form, as the indexer stores it; damaged bytes are rebuilt.
    as_bytes = doc_of(ARTEFACTS)
    as_bytes._normalized = built.to_bytes()
    assert texts(find(as_bytes, "des")) == ["D`es"]
    assert as_bytes._normalized.norm == built.norm
    damaged = doc_of(ARTEFACTS)
    damaged._normalized = b"NT\x01garbage"
    assert texts(find(damaged, "des")) == ["D`es"]
    # One that does not fit the text (another length) is rebuilt.
    stale = doc_of(ARTEFACTS)
    stale._normalized = normalize("short")
    assert texts(find(stale, "newapp")) == ["newapp", "new app"]


def test_line_of() -> None:
    doc = doc_of("a\nb\r\nc")
    assert [line_of(doc, k) for k in (0, 1, 2, 3, 4, 5)] == [1, 1, 2, 2, 2, 3]


@settings(max_examples=100, deadline=None)
@given(
    st.text(
        alphabet=st.one_of(st.sampled_from("aAbéß ﬁ-\n\u00a0\u0301´`xyz.\r"),
                           st.characters(exclude_categories=("Cs",))),
        min_size=1,
        max_size=60,
    ),
    st.data(),
)
def test_substring_is_always_found_at_or_before_it(text: str, data: st.DataObject) -> None:
    # Any substring that starts and ends at word boundaries is found (find matches whole words).
    def word(k: int) -> bool:
        if not 0 <= k < len(text):
            return False
        while k >= 0 and unicodedata.combining(text[k]):
            k -= 1  # a mark is part of the letter before it, if there is one
        return k >= 0 and text[k].isalnum()

    starts = [k for k in range(len(text)) if not (word(k) and word(k - 1))]
    i = data.draw(st.sampled_from(starts))
    ends = [k for k in range(i + 1, len(text) + 1) if not (word(k - 1) and word(k))]
    if not ends:
        return
    j = data.draw(st.sampled_from(ends))
    q = normalize_query(text[i:j])
    if not q or any(ch in "´`¨^¸¯˜ˇ˘˙˚˛˝*" for ch in text[max(0, i - 1):j + 1]):
        return  # spacing accents may join words (see test_matches_are_whole_words); '*' means prefix
    doc = doc_of(text)
    result = find(doc, text[i:j], limit=1000)
    assert result.total >= 1
    # The first original character of the substring that takes part in the fold.
    first = next(k for k in range(i, j) if normalize_query(text[k]))
    assert result.matches[0].offset <= first
    prev_end = 0
    for m in result.matches:
        assert m.offset >= prev_end  # no overlap
        prev_end = m.offset + m.length
        assert q in normalize_query(m.text)
        assert text[m.offset : m.offset + m.length] == m.text


@pytest.fixture(scope="module")
def manual(fixture_docs) -> Document:
    from mcp_nextcloud.reader import extract

    return extract((fixture_docs / "manual.pdf").read_bytes(), "manual.pdf")


@pytest.mark.parametrize(
    ("query", "minimum", "contains"),
    [
        ("PROPRIÉTÉS", 3, "propriétés"),  # TeX-style accent glyphs, recomposed at extraction
        ("proprietes", 3, "propriétés"),
        ("dès la première", 1, "Dès la"),
        ("expression", 1, "expres"),  # line-end hyphenation (pdfium: U+FFFE, no line break)
        ("the configuration file defines the workflow", 1, "configuration"),  # ligatures in the PDF
        ("strasse", 1, "Straße"),
        ("new app", 4, "newapp"),
        ("newapp", 4, "new app"),
        ("quantum pelican", 1, "quantum pelican"),
    ],
)
def test_artefacts_in_the_fixture_manual(manual: Document, query: str, minimum: int, contains: str) -> None:
    result = find(manual, query)
    assert result.total >= minimum
    assert any(contains in m.text or contains in m.passage for m in result.matches)
    for m in result.matches:
        assert manual.text[m.offset : m.offset + m.length] == m.text
        assert page(manual, offset=m.offset, limit=200).content.startswith(m.text)
        assert m.page == manual.page_of(m.offset) and m.page > 1
        assert m.line == manual.text.count("\n", 0, m.offset) + 1


def test_serialised_form_of_the_manual_gives_the_same_matches(manual: Document) -> None:
    fresh = Document(text=manual.text, kind=manual.kind, pages=manual.pages)
    fresh._normalized = NormalizedText.from_bytes(normalize(manual.text).to_bytes())
    expected = [m.to_dict() for m in find(manual, "new app").matches]
    assert [m.to_dict() for m in find(fresh, "new app").matches] == expected


@settings(max_examples=150, deadline=None)
@given(
    st.text(alphabet=st.one_of(st.sampled_from("aAbéß ﬁ-\n\u00a0\u0301´`\u00adxyz.\r"),
                               st.characters(exclude_categories=("Cs",))), min_size=1, max_size=60),
    st.data(),
)
def test_every_match_maps_back_to_the_folded_query(text: str, data: st.DataObject) -> None:
    # Any piece of the text is a query; every match, mapped back, folds to (or, cut inside "ß"/"ﬁ", holds) it.
    i = data.draw(st.integers(0, len(text) - 1))
    j = data.draw(st.integers(i + 1, len(text)))
    q = normalize_query(text[i:j].strip().rstrip("*"))   # as find takes a query: stripped, then a final "*"
    if not q:
        return
    result = find(doc_of(text), text[i:j], limit=1000)
    assert result.total >= 1
    for m in result.matches:
        folded = normalize_query(text[m.offset:m.offset + m.length])
        assert q in folded
        # The match is no wider than the query: only characters that fold to several may overhang.
        assert folded == q or len(normalize_query(text[m.offset])) > 1 or len(
            normalize_query(text[m.offset + m.length - 1])) > 1 or folded.startswith(q)
        # wholeWord is exactly "starts a word and ends one".
        starts = m.offset == 0 or not (text[m.offset].isalnum() and text[m.offset - 1].isalnum())
        if m.whole_word:
            assert starts
