"""outline: headings, bookmarks, pages, sheets and skeletons, small and pointing into the text."""
from __future__ import annotations

import json

from mcp_nextcloud.reader import Document, OutlineEntry, outline, page
from mcp_nextcloud.reader.outline import OUTLINE_BUDGET, json_skeleton, markdown_headings

MD = "# Title\n\nintro\n\n## Install\n\nrun it\n```\n# not a heading\n```\nSetext title\n===\ntext\n### Deep ###\n"


def test_markdown_headings_with_lines_and_offsets() -> None:
    doc = Document(text=MD, kind="markdown")
    o = outline(doc)
    assert [(e.title, e.level, e.line) for e in o.entries] == [
        ("Title", 1, 1), ("Install", 2, 5), ("Setext title", 1, 11), ("Deep", 3, 14)
    ]
    for e in o.entries:
        assert page(doc, offset=e.offset).content.lstrip("# ").startswith(e.title)
    d = o.to_dict()
    assert d["kind"] == "markdown" and d["chars"] == len(MD) and d["truncated"] is False
    assert d["total"] == len(d["entries"])    # total counts what the answer lists, as everywhere
    assert d["entries"][1] == {"title": "Install", "level": 2, "offset": MD.index("## Install"), "line": 5}


def test_plain_text_gets_atx_headings_only() -> None:
    text = "# Notes\nsome line\n---\n"
    assert [e.title for e in markdown_headings(text, setext=False)] == ["Notes"]
    assert [e.title for e in outline(Document(text=text, kind="text")).entries] == ["Notes"]


def test_document_entries_are_completed_with_page_and_line() -> None:
    text = "Intro\nfirst page\nChapter 2\nsecond page\n"
    doc = Document(
        text=text, kind="pdf", pages=[0, 17],
        outline=[OutlineEntry("Intro", 1, 0, 1), OutlineEntry("Chapter 2", 1, 17), OutlineEntry("Sub", 2, 27)],
    )
    o = outline(doc)
    assert [(e.title, e.level, e.page, e.line) for e in o.entries] == [
        ("Intro", 1, 1, 1), ("Chapter 2", 1, 2, 3), ("Sub", 2, 2, 4)
    ]
    assert o.pages == 2
    assert doc.outline[1].line is None  # the document's own entries are left untouched


def test_pdf_without_bookmarks_lists_pages_with_first_line() -> None:
    text = "\n  Cover title\nmore\nSecond page head\nbody\n"
    doc = Document(text=text, kind="pdf", pages=[0, 20])
    o = outline(doc)
    assert [e.title for e in o.entries] == ["Page 1: Cover title", "Page 2: Second page head"]
    assert [e.page for e in o.entries] == [1, 2]
    assert text[o.entries[0].offset :].startswith("Cover title")


def test_slides_without_outline() -> None:
    doc = Document(text="Welcome\nbody\nPlan\nsteps\n", kind="pptx", pages=[0, 13], page_unit="slide")
    assert [e.title for e in outline(doc).entries] == ["Slide 1: Welcome", "Slide 2: Plan"]


def test_sheets_from_structure() -> None:
    structure = {"sheets": [
        {"name": "Budget", "dimensions": "A1:C10", "rows": 10, "columns": 3, "header": ["a", "b", "c"],
         "firstRows": [[1, 2, 3]], "offset": 0},
        {"name": "Staff", "dimensions": "A1:B3", "rows": 3, "columns": 2, "header": ["n", "m"],
         "firstRows": [], "offset": 40},
    ]}
    doc = Document(text="Budget\n" + "x" * 33 + "Staff\nrows\n", kind="xlsx", pages=[0, 40], page_unit="sheet",
                   structure=structure)
    o = outline(doc)
    assert [(e.title, e.offset, e.page) for e in o.entries] == [("Budget", 0, 1), ("Staff", 40, 2)]
    assert o.to_dict()["structure"]["sheets"][0]["dimensions"] == "A1:C10"


def test_csv_header_and_five_rows_derived_when_absent() -> None:
    text = "name;qty\n" + "".join(f"item{i};{i}\n" for i in range(10))
    o = outline(Document(text=text, kind="csv"))
    assert o.structure["header"] == ["name", "qty"]
    assert o.structure["rows"] == [[f"item{i}", str(i)] for i in range(5)]
    assert o.structure["rowCount"] == 10
    assert "find" in o.hint and "structure" in o.hint


def test_json_skeleton() -> None:
    value = {"users": [{"id": 1, "name": "a", "ok": True, "tags": []}] * 3, "meta": None, "v": 1.5}
    assert json_skeleton(value) == {
        "users": {"array[3]": {"id": "number", "name": "string", "ok": "boolean", "tags": "array[0]"}},
        "meta": "null", "v": "number",
    }
    deep = {"a": {"b": {"c": {"d": {"e": 1}}}}}
    assert json_skeleton(deep) == {"a": {"b": {"c": {"d": "object[1 keys]"}}}}
    wide = {f"k{i}": i for i in range(100)}
    sk = json_skeleton(wide)
    assert len(sk) == 41 and sk["…"] == "60 more keys"
    o = outline(Document(text='{"a": [1, 2]}', kind="json"))
    assert o.structure == {"skeleton": {"a": {"array[2]": "number"}}}
    assert outline(Document(text="{broken", kind="json")).structure == {}


def test_entries_are_capped_and_say_so() -> None:
    text = "".join(f"# H{i}\n" for i in range(250))
    o = outline(Document(text=text, kind="markdown"))
    shown = len(o.entries)
    assert 20 < shown < 250 and o.truncated and o.entry_count == 250
    assert f"{shown} of 250" in o.hint and o.next_offset == text.index(f"# H{shown}\n")
    assert len(json.dumps(o.to_dict(), separators=(",", ":")).encode()) <= OUTLINE_BUDGET


def test_long_titles_are_shortened() -> None:
    o = outline(Document(text="# " + "word " * 100 + "\n", kind="markdown"))
    assert len(o.entries[0].title) <= 120 and o.entries[0].title.endswith("…")


def test_fixture_manual_bookmarks(fixture_docs) -> None:
    from mcp_nextcloud.reader import extract

    doc = extract((fixture_docs / "manual.pdf").read_bytes(), "manual.pdf")
    o = outline(doc)
    assert o.kind == "pdf" and o.pages == len(doc.pages) > 10 and not o.truncated
    assert len(o.entries) >= 10
    assert {e.level for e in o.entries} >= {1, 2}  # nested bookmarks
    for e in o.entries:
        assert e.page == doc.page_of(e.offset)
        assert e.line == doc.text.count("\n", 0, e.offset) + 1
    found = [e for e in o.entries if doc.text.startswith(e.title, e.offset)]
    assert len(found) >= len(o.entries) // 2  # most bookmarks point at their heading's text
    d = o.to_dict()
    assert d["entries"][0]["title"] == o.entries[0].title and "page" in d["entries"][0]


def test_fixture_markdown_csv_json_html(fixture_docs) -> None:
    from mcp_nextcloud.reader import extract

    def read(name: str) -> Document:
        return extract((fixture_docs / name).read_bytes(), name)

    md = outline(read("manual.md"))
    assert [e.title for e in md.entries][:3] == ["Sample Manual", "Installation", "Requirements"]
    assert "not a heading inside a fence" not in [e.title for e in md.entries]
    csv_o = outline(read("data.csv"))
    assert csv_o.structure["header"][:2] == ["id", "name"] and len(csv_o.structure["rows"]) <= 5
    assert outline(read("config.json")).structure["skeleton"]["server"]["url"] == "string"
    assert [e.title for e in outline(read("page.html")).entries][0] == "Welcome"


def test_extractor_structure_is_capped_to_five_sample_rows() -> None:
    structure = {"header": ["a"], "rows": [[i] for i in range(50)], "rowCount": 50,
                 "sheets": [{"name": "S", "firstRows": [[i] for i in range(30)], "offset": 0}]}
    o = outline(Document(text="S\n", kind="xlsx", structure=structure))
    assert len(o.structure["rows"]) == 5 and len(o.structure["sheets"][0]["firstRows"]) == 5
    assert len(structure["rows"]) == 50  # the document's own skeleton is not modified


def test_fixture_office_and_odf_outlines(fixture_docs) -> None:
    from mcp_nextcloud.reader import extract

    def entries(name: str) -> list[tuple[str, int, int | None]]:
        doc = extract((fixture_docs / name).read_bytes(), name)
        o = outline(doc)
        for e in o.entries:
            assert doc.text.startswith(e.title, e.offset) or e.title in doc.text[e.offset : e.offset + 200]
        return [(e.title, e.level, e.page) for e in o.entries]

    assert entries("slides.pptx")[0] == ("Quarterly Review", 1, 1)
    assert [t for t, _, _ in entries("deck.odp")] == ["Welcome deck", "Plan"]
    assert entries("report.docx")[:2] == [("Annual Report", 1, None), ("Finances", 2, None)]
    assert [t for t, _, _ in entries("notes.odt")] == ["Meeting notes", "Decisions", "Actions"]
    assert [t for t, _, p in entries("sheet.ods")] == ["Inventory", "Totals"]
    doc = extract((fixture_docs / "budget.xlsx").read_bytes(), "budget.xlsx")
    o = outline(doc)
    assert [e.title for e in o.entries] == ["Summary", "Expenses", "Notes"] and o.page_unit == "sheet"
    first = o.structure["sheets"][0]
    assert first["dimensions"] and first["header"] and len(first["firstRows"]) <= 5
