"""Office and OpenDocument fixtures: xlsx, pptx, docx, odt, ods, odp."""
from __future__ import annotations

import io
import zipfile

import pytest

from mcp_nextcloud.reader.document import ReaderCode
from mcp_nextcloud.reader.document import Limits, ReaderError
from mcp_nextcloud.reader.extract import extract


def test_xlsx_sheets_as_pages(extracted):
    doc = extracted("budget.xlsx")
    assert doc.kind == "xlsx" and doc.engine == "openpyxl" and doc.page_unit == "sheet"
    assert [e.title for e in doc.outline] == ["Summary", "Expenses", "Notes"]
    assert [e.page for e in doc.outline] == [1, 2, 3]
    assert len(doc.pages) == 3
    for entry, start in zip(doc.outline, doc.pages, strict=True):
        assert entry.offset == start and doc.text[start:].startswith(f"## Sheet: {entry.title}\n")
    assert "2026-01-04 | Café | Expense number 4 | 40.86" in doc.text
    assert "Les dépenses de janvier sont validées." in doc.text[doc.pages[2]:]


def test_xlsx_structure(extracted):
    sheets = {s["name"]: s for s in extracted("budget.xlsx").structure["sheets"]}
    exp = sheets["Expenses"]
    assert exp["header"] == ["Date", "Category", "Description", "Amount"]
    assert exp["rows"] == 51 and exp["columns"] == 4 and exp["dimensions"] == "A1:D51"
    assert len(exp["firstRows"]) == 5 and exp["firstRows"][0][2] == "Expense number 1"
    assert sheets["Summary"]["header"] == ["Item", "Amount", "Double"]


def test_xlsx_formulas_without_cached_values_warn(extracted):
    doc = extracted("budget.xlsx")
    assert any("formulas without cached values" in w and "Summary" in w for w in doc.warnings)
    assert "Line 1 | 100\n" in doc.text  # the uncached formula cell reads as empty


def test_xlsx_with_cached_values_has_no_formula_warning():
    import xlsxwriter

    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf)
    ws = wb.add_worksheet("Calc")
    ws.write_row(0, 0, ["a", "b"])
    ws.write_formula(1, 0, "=1+1", None, 2)
    wb.close()
    doc = extract(buf.getvalue(), "calc.xlsx")
    assert "2" in doc.text and not any("formulas" in w for w in doc.warnings)


def test_xlsx_row_budget(fixture_docs):
    doc = extract((fixture_docs / "budget.xlsx").read_bytes(), "budget.xlsx", limits=Limits(max_rows_per_sheet=10))
    assert "sheet Expenses cut at 10 rows" in doc.warnings
    assert "Expense number 9 " in doc.text and "Expense number 10 " not in doc.text
    assert {s["name"]: s["rows"] for s in doc.structure["sheets"]}["Expenses"] == 10


def test_pptx_slides(extracted):
    doc = extracted("slides.pptx")
    assert doc.kind == "pptx" and doc.page_unit == "slide" and len(doc.pages) == 3
    assert [(e.title, e.page) for e in doc.outline] == [("Quarterly Review", 1), ("Roadmap", 2), ("Budget table", 3)]
    def slide(n: int) -> str:
        return doc.text[doc.pages[n - 1]: doc.pages[n] if n < len(doc.pages) else None]

    assert "violet walrus" in slide(1) and "Notes:" in slide(1) and "Résultats du trimestre" in slide(1)
    assert "Grouped text inside a group shape" in slide(2) and "Nested group text" in slide(2)
    assert "Sales | 120 | 140" in slide(3) and "thousands of euros" in slide(3)


def test_docx_headings_and_table(extracted):
    doc = extracted("report.docx")
    assert doc.kind == "docx"
    assert [(e.title, e.level) for e in doc.outline] == [("Annual Report", 1), ("Finances", 2),
                                                         ("Outlook", 2), ("Annexes", 1)]
    assert "amber heron" in doc.text and "Q1 | 1200" in doc.text
    # document order: the table sits between Finances and Outlook
    assert doc.text.index("Finances") < doc.text.index("Q2 | 1350") < doc.text.index("Outlook")
    for entry in doc.outline:
        assert doc.text[entry.offset:].startswith(entry.title)


def test_odt(extracted):
    doc = extracted("notes.odt")
    assert doc.kind == "odt"
    assert [(e.title, e.level, e.line) for e in doc.outline] == [("Meeting notes", 1, 1), ("Decisions", 2, 3),
                                                                 ("Actions", 2, 7)]
    assert "Nous avons parlé du budget." in doc.text and "Second line here." in doc.text
    assert "coral kestrel" in doc.text and "First item" in doc.text


def test_ods(extracted):
    doc = extracted("sheet.ods")
    assert doc.kind == "ods" and doc.page_unit == "sheet" and len(doc.pages) == 2
    inv, tot = doc.structure["sheets"]
    assert inv["name"] == "Inventory" and inv["header"] == ["Name", "Count"] and inv["rows"] == 8
    assert inv["firstRows"][0] == ["Item 1", "10"] and len(inv["firstRows"]) == 5
    assert tot["header"] == ["Total", "Total"] and tot["offset"] == doc.pages[1]
    assert "Item 7 | 70" in doc.text


def test_odp(extracted):
    doc = extracted("deck.odp")
    assert doc.kind == "odp" and doc.page_unit == "slide"
    assert [(e.title, e.page) for e in doc.outline] == [("Welcome deck", 1), ("Plan", 2)]
    assert "indigo otter" in doc.text[: doc.pages[1]]
    assert "Étape deux" in doc.text[doc.pages[1]:] and "Notes: Note for plan" in doc.text


def test_ods_row_budget(fixture_docs):
    doc = extract((fixture_docs / "sheet.ods").read_bytes(), "sheet.ods", limits=Limits(max_rows_per_sheet=3))
    assert "sheet Inventory cut at 3 rows" in doc.warnings
    assert "Item 2 | 20" in doc.text and "Item 3 | 30" not in doc.text


def test_ods_repeated_rows_are_capped():
    row = ('<table:table-row table:number-rows-repeated="1048576"><table:table-cell><text:p>same</text:p>'
           '</table:table-cell></table:table-row>')
    content = ('<?xml version="1.0"?><office:document-content '
               'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
               'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
               'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"><office:body><office:spreadsheet>'
               f'<table:table table:name="Big">{row}</table:table></office:spreadsheet></office:body>'
               '</office:document-content>')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        z.writestr("content.xml", content)
    doc = extract(buf.getvalue(), "big.ods")
    assert 0 < doc.text.count("same") <= 64 and doc.structure["sheets"][0]["name"] == "Big"


def test_docx_with_garbage_xml_is_corrupt():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("[Content_Types].xml", "<Types")
        z.writestr("word/document.xml", "not xml at all")
    with pytest.raises(ReaderError) as err:
        extract(buf.getvalue(), "bad.docx")
    assert err.value.code is ReaderCode.CORRUPT and "do not retry" in str(err.value)
