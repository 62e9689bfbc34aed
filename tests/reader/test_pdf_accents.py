"""TeX-style spacing accents: recomposed by geometry in both engines; code samples keep ` and ^."""
from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_nextcloud.fixtures.tex_pdf import TEX_AFTER_CODE, TEX_CODE, TEX_SECTIONS, TEX_TITLE, intended_text
from mcp_nextcloud.reader import find, outline
from mcp_nextcloud.reader.document import DEFAULT_LIMITS
from mcp_nextcloud.reader.formats.pdf import extract_pdfium, extract_pdfminer
from mcp_nextcloud.reader.formats.pdf_accents import SPACING_TO_COMBINING, leftover_artefacts, recompose


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def tex_bytes(fixture_docs) -> bytes:
    return (fixture_docs / "tex-accents.pdf").read_bytes()


@pytest.fixture(scope="module", params=["pypdfium2", "pdfminer.six"])
def tex_doc(request, tex_bytes):
    if request.param == "pypdfium2":
        return extract_pdfium(tex_bytes, "tex-accents.pdf", DEFAULT_LIMITS)
    return extract_pdfminer(tex_bytes, "tex-accents.pdf", DEFAULT_LIMITS)


def test_accents_drawn_over_letters_come_back_composed(tex_doc):
    assert _words(tex_doc.text) == _words(intended_text())
    for word in ("préférable", "interprétée", "garçon", "naïf", "Noël", "côté", "Élise", "Šťastný", "Åsa",
                 "Muñoz", "Dvořák"):
        assert word in tex_doc.text, word
    assert leftover_artefacts(tex_doc.text) == leftover_artefacts(intended_text())


def test_without_repair_the_artefacts_are_there(tex_bytes):
    """What the agent used to get (so the test above can fail): the accent glyph beside its letter."""
    raw = extract_pdfium(tex_bytes, "tex-accents.pdf", DEFAULT_LIMITS, repair=False).text
    assert "pre´fe´rable" in raw and "préférable" not in raw
    assert leftover_artefacts(raw) > leftover_artefacts(intended_text()) + 40


def test_code_and_lone_accents_keep_their_characters(tex_doc):
    lines = tex_doc.text.split("\n")
    for code in TEX_CODE:  # backticks, carets, tildes and quotes beside letters, never over them
        assert code in lines, code
    assert "le ^ circonflexe et le `" in tex_doc.text


def test_find_offsets_map_to_the_clean_text(tex_doc):
    for query in ("préférable", "interpretee", "GARÇON", "Dvorak", "echo `date` > /tmp", "y=a^b"):
        res = find(tex_doc, query)
        assert res.total == 1, query
        m = res.matches[0]
        found = tex_doc.text[m.offset : m.offset + m.length]
        assert _words(found).casefold() == query.casefold() or unicodedata.normalize("NFKD", found).encode(
            "ascii", "ignore").decode().casefold() == query.casefold(), (query, found)
        assert m.page == tex_doc.page_of(m.offset) and m.line == tex_doc.text.count("\n", 0, m.offset) + 1


def test_pages_and_bookmarks_point_into_the_clean_text(tex_doc):
    assert len(tex_doc.pages) == 2
    assert tex_doc.text.startswith(TEX_TITLE)
    titles = [heading for heading, _ in TEX_SECTIONS]
    assert [e.title for e in tex_doc.outline] == titles
    for entry, page in zip(tex_doc.outline, (1, 2), strict=True):
        assert tex_doc.text.startswith(entry.title, entry.offset)  # found on its page, not the page start
        assert tex_doc.page_of(entry.offset) == entry.page == page
        assert entry.line == tex_doc.text.count("\n", 0, entry.offset) + 1
    assert tex_doc.text[tex_doc.pages[1]:].startswith("2. Exemples de code")
    assert tex_doc.text.rstrip().endswith(TEX_AFTER_CODE)
    o = outline(tex_doc)
    assert [e.title for e in o.entries] == titles


# ---------------------------------------------------------------- the pure function, box by box

def _row(*boxes: tuple[float, float]):
    """Boxes on one line from (left, right) pairs; letters 0..10 high, accents 11..13."""
    def box(i: int):
        left, right = boxes[i]
        return (left, 0.0, right, 10.0)
    return box


def test_accent_before_or_after_the_letter_it_covers():
    assert recompose("\u00b4e", _row((2, 4), (0, 6))) == "é"
    assert recompose("e\u00b4", _row((0, 6), (2, 4))) == "é"
    assert recompose("c\u00b8a", _row((0, 5), (1.5, 3.5), (5, 10))) == "ça"
    assert recompose("\u00a8\u0131", _row((0.5, 2.5), (0, 3))) == "ï"  # TeX's dotless i
    assert recompose("\u02c7q", _row((1, 3), (0, 4))) == "q\u030c"  # no precomposed form: letter + mark


def test_accent_beside_a_letter_stays():
    assert recompose("`date`", _row((0, 3), (3, 6), (6, 9), (9, 12), (12, 15), (15, 18))) == "`date`"
    assert recompose("4^\\", _row((0, 5), (5, 8), (8, 11))) == "4^\\"
    assert recompose("^^a", _row((0, 3), (3, 6), (6, 9))) == "^^a"


def test_accent_on_another_line_or_without_a_box_stays():
    far = {0: (2.0, 40.0, 4.0, 43.0), 1: (0.0, 0.0, 6.0, 10.0)}
    assert recompose("\u00b4e", far.get) == "\u00b4e"
    assert recompose("\u00b4e", lambda i: None) == "\u00b4e"
    assert recompose("\u00b4 ", _row((0, 3), (0, 6))) == "\u00b4 "  # not a letter


def _fold(text: str) -> str:
    """The letters of a text without any accent: what recomposition must never change."""
    text = "".join(c for c in text if c not in SPACING_TO_COMBINING).replace("\u0131", "i")
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))


CHARS = st.sampled_from(list("aeiouAEcns \u0131`^~") + list(SPACING_TO_COMBINING) + ["\n", "1", "\\"])


@settings(max_examples=300, deadline=None, database=None)
@given(text=st.text(CHARS, max_size=40), data=st.data())
def test_random_boxes_only_ever_join_accents_to_letters(text, data):
    coords = st.floats(-50, 50, allow_nan=False)
    one_box = st.one_of(st.none(), st.tuples(coords, coords, coords, coords))
    boxes = data.draw(st.lists(one_box, min_size=len(text), max_size=len(text)))
    out = recompose(text, boxes.__getitem__)
    assert _fold(out) == _fold(text)                       # nothing lost, added or reordered
    assert len(text) - len(out) <= sum(c in SPACING_TO_COMBINING for c in text)
    assert recompose(text, lambda i: (float(i * 10), 0.0, float(i * 10 + 9), 10.0)) == text  # side by side: kept
