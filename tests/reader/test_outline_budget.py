"""Outlines stay within the budget on large documents of every format; sections expand; nothing silently lost."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_nextcloud.fixtures import large_docs
from mcp_nextcloud.reader import Document, OutlineEntry, extract, outline
from mcp_nextcloud.reader.outline import OUTLINE_BUDGET
from mcp_nextcloud.reader.outline_budget import json_bytes, select_entries


def _size(o) -> int:
    return len(json.dumps(o.to_dict(), separators=(",", ":"), ensure_ascii=False).encode())


@pytest.fixture(scope="module")
def big_pdf() -> Document:
    return extract(large_docs.bookmarked_pdf(), "big.pdf")


@pytest.fixture(scope="module")
def deck() -> Document:
    return extract(large_docs.slide_deck(400), "deck.pptx")


def test_600_bookmarks_fit_with_deeper_levels_counted(big_pdf):
    assert len(big_pdf.outline) == 600
    o = outline(big_pdf)
    assert _size(o) <= OUTLINE_BUDGET and o.entry_count == 600
    chapters = [e for e in o.entries if e.level == 1]
    assert len(chapters) == 24                                 # the top level, whole
    opened = [e for e in o.entries if e.level == 2]            # then the first chapters' sections, where room is left
    opened_chapters = sorted({int(e.title.split(".")[0]) for e in opened})
    assert opened_chapters == list(range(1, len(opened_chapters) + 1)) and len(opened) == 4 * len(opened_chapters)
    assert len(o.entries) + sum(o.subsections) == 600          # every entry shown or counted once
    assert not o.truncated and o.next_offset is None and "subsections" in o.hint
    assert o.to_dict()["entries"][-1]["subsections"] == 24     # the last chapter collapsed: 4 sections + 20 details


def test_an_offset_expands_its_branch_first(big_pdf):
    chapter5 = next(e for e in big_pdf.outline if e.title.startswith("5. "))
    o = outline(big_pdf, offset=chapter5.offset + 3)          # any offset inside the chapter's heading
    assert _size(o) <= OUTLINE_BUDGET
    assert [e.title for e in o.entries if e.level == 1] == [e.title for e in big_pdf.outline if e.level == 1]
    inside = [e for e in o.entries if e.title.startswith("5.")]
    assert [e.title for e in inside if e.level == 2] == [f"5.{s} Section on part {s}" for s in range(1, 5)]
    assert len(inside) >= 4 + 2 * 5                            # its sections, and the details of the first ones
    assert not any(e.level > 1 and not e.title.startswith("5.") for e in o.entries)   # the rest: counts
    assert all(big_pdf.text.startswith(e.title, e.offset) for e in o.entries)
    assert len(o.entries) + sum(o.subsections) == 600 and o.next_offset is None
    by_title = outline(big_pdf, section="5.2 section on")
    shown = [e.title for e in by_title.entries]
    assert "5.2 Section on part 2" in shown and "5.2.5 Detail 5" in shown   # the section, its details
    assert "5.1 Section on part 1" in shown and "5.4 Section on part 4" in shown   # and its siblings
    with pytest.raises(ValueError, match="no outline entry titled"):
        outline(big_pdf, section="no such chapter")


def test_400_slides_page_through_with_next_offset(deck):
    seen: list[str] = []
    offset = None
    for _ in range(40):
        o = outline(deck, offset=offset)
        assert _size(o) <= OUTLINE_BUDGET
        seen += [e.title for e in o.entries]
        if o.next_offset is None:
            break
        assert o.truncated and f"offset={o.next_offset}" in o.hint
        offset = o.next_offset
    assert seen == [f"Slide title {n}" for n in range(1, 401)]  # every slide once, in order


def test_300_columns_sheet_is_cut_in_place_and_says_so():
    doc = extract(large_docs.wide_sheet(300), "wide.xlsx")
    o = outline(doc)
    assert _size(o) <= OUTLINE_BUDGET and o.truncated and "structure shortened" in o.hint
    sheet = o.structure["sheets"][0]
    assert sheet["columns"] == 300 and sheet["header"][0] == "Column 1"
    assert sheet["header"][-1].endswith("more columns") and len(sheet["header"]) < 300
    assert doc.structure["sheets"][0]["header"][-1] == "Column 300"  # the document itself is untouched


def test_300_columns_csv_fits():
    text = ",".join(f"col{c}" for c in range(300)) + "\n" + "".join(
        ",".join(str(r * c) for c in range(300)) + "\n" for r in range(30))
    doc = extract(text.encode(), "wide.csv")
    o = outline(doc)
    assert _size(o) <= OUTLINE_BUDGET and o.truncated and o.structure["header"][0] == "col0"
    assert o.structure["header"][-1].endswith("more columns") and o.structure["rowCount"] == 30


def test_deep_json_skeleton_keeps_the_top_levels():
    doc = extract(large_docs.deep_json(), "deep.json")
    assert json_bytes(doc.structure) > OUTLINE_BUDGET  # the extractor's skeleton alone would not fit
    o = outline(doc)
    assert _size(o) <= OUTLINE_BUDGET and o.truncated
    assert sorted(o.structure["skeleton"]) == sorted(json.loads(doc.text))  # every top-level key


def test_many_headings_and_long_titles_fit():
    text = "".join(f"# Heading number {i} " + "long words " * 12 + "\n\n## Sub\n\nbody\n" for i in range(600))
    o = outline(Document(text=text, kind="markdown"))
    assert _size(o) <= OUTLINE_BUDGET and o.entries and o.truncated
    tiny = outline(Document(text=text, kind="markdown"), budget=700)
    assert _size(tiny) <= 700 and len(tiny.entries) >= 1 and tiny.next_offset is not None


# ---------------------------------------------------------------- selection, property-tested

def _entries(levels: list[int]) -> list[OutlineEntry]:
    return [OutlineEntry(title=f"e{i}", level=lv, offset=i * 10) for i, lv in enumerate(levels)]


@settings(max_examples=300, deadline=None, database=None)
@given(levels=st.lists(st.integers(1, 4), min_size=1, max_size=80), data=st.data())
def test_every_entry_is_shown_or_counted_once(levels, data):
    sizes = data.draw(st.lists(st.integers(20, 90), min_size=len(levels), max_size=len(levels)))
    budget = data.draw(st.integers(50, 3000))
    focus = data.draw(st.one_of(st.none(), st.integers(0, len(levels) - 1)))
    chosen = select_entries(_entries(levels), sizes.__getitem__, budget, focus)
    start = focus or 0
    stop = chosen.next_index if chosen.next_index is not None else len(levels)
    assert chosen.shown[0] == start and chosen.shown == sorted(set(chosen.shown))
    assert all(start <= i < stop for i in chosen.shown)
    assert len(chosen.shown) + sum(chosen.hidden.values()) == stop - start
    assert set(chosen.hidden) <= set(chosen.shown)
    assert len(chosen.shown) == 1 or sum(sizes[i] for i in chosen.shown) <= budget


def test_an_offset_narrows_a_workbook_to_its_sheet(extracted):
    doc = extracted("budget.xlsx")
    whole = outline(doc)
    expenses = whole.entries[1]
    focused = outline(doc, offset=expenses.offset)
    assert [e.title for e in focused.entries] == [e.title for e in whole.entries]   # every sheet named
    assert [s["name"] for s in focused.structure["sheets"]] == ["Expenses"]  # its header and rows, nothing else
    assert focused.structure["sheets"][0]["header"] == ["Date", "Category", "Description", "Amount"]
