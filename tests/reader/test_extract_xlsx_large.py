"""Large and unusual xlsx sheets: extraction reads only what the row budget keeps.

The big workbook is generated in a tmp dir (never committed): a tiny xlsxwriter
workbook whose sheet XML is replaced by 300k hand-written rows with no
<dimension> element — the shape that made openpyxl parse the whole sheet
before returning the first row.
"""
from __future__ import annotations

import datetime as dt
import io
import zipfile
from pathlib import Path

import pytest

from mcp_nextcloud.reader.document import ReaderCode
from mcp_nextcloud.reader.document import Limits, ReaderError
from mcp_nextcloud.reader.extract import extract
from mcp_nextcloud.reader.formats.xlsx_stream import XlsxStream

BIG_ROWS = 300_000
SHEET = "xl/worksheets/sheet1.xml"
STRINGS = "xl/sharedStrings.xml"
SST_HEAD = b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
HEAD = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        b'<sheetFormatPr defaultRowHeight="15"/><sheetData>')
TAIL = b"</sheetData></worksheet>"


def _row(r: int) -> bytes:
    # number, inline string, float, boolean: the value kinds a sheet holds without shared strings
    return (f'<row r="{r}"><c r="A{r}"><v>{r}</v></c><c r="B{r}" t="inlineStr"><is><t>row {r}</t></is></c>'
            f'<c r="C{r}"><v>{r * 1.5}</v></c><c r="D{r}" t="b"><v>{r % 2}</v></c></row>').encode()


def _with_sheet(sheet_xml: bytes, strings_xml: bytes | None = None) -> bytes:
    """A valid one-sheet xlsx (written by xlsxwriter) whose sheet XML (and shared-string table) are replaced."""
    import xlsxwriter

    base = io.BytesIO()
    wb = xlsxwriter.Workbook(base)
    wb.add_worksheet("Big").write(0, 0, "placeholder")  # a string: the package gets a sharedStrings part
    wb.close()
    replace = {SHEET: sheet_xml, STRINGS: strings_xml}
    out = io.BytesIO()
    with zipfile.ZipFile(base) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, replace.get(info.filename) or zin.read(info.filename))
    return out.getvalue()


@pytest.fixture(scope="module")
def big_sheet_xml() -> bytes:
    return HEAD + b"".join(_row(r) for r in range(1, BIG_ROWS + 1)) + TAIL


@pytest.fixture(scope="module")
def big_xlsx(big_sheet_xml: bytes, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("xlsx") / "big.xlsx"
    path.write_bytes(_with_sheet(big_sheet_xml))
    return path


def test_big_sheet_without_dimension_is_cut_with_a_warning(big_xlsx: Path) -> None:
    data = big_xlsx.read_bytes()
    with zipfile.ZipFile(big_xlsx) as zf:
        head = zf.open(SHEET).read(4096)
        assert b"<dimension" not in head and zf.getinfo(SHEET).file_size > 25_000_000
    doc = extract(data, "big.xlsx", limits=Limits(max_rows_per_sheet=2000))
    assert doc.warnings == ["sheet Big cut at 2000 rows"]
    sheet = doc.structure["sheets"][0]
    assert sheet["rows"] == 2000 and sheet["columns"] == 4 and sheet["dimensions"] == "2000x4"
    assert sheet["header"] == ["1", "row 1", "1.5", "True"]
    assert sheet["firstRows"][0] == ["2", "row 2", "3", "False"]
    lines = doc.text.rstrip("\n").split("\n")
    assert lines[0] == "## Sheet: Big" and len(lines) == 2001
    assert lines[-1] == "2000 | row 2000 | 3000 | False"


def test_default_budget_keeps_20000_rows(big_xlsx: Path) -> None:
    doc = extract(big_xlsx.read_bytes(), "big.xlsx")
    assert doc.warnings == ["sheet Big cut at 20000 rows"]
    assert doc.structure["sheets"][0]["rows"] == 20_000
    assert doc.text.rstrip("\n").endswith("\n20000 | row 20000 | 30000 | False")


def test_rows_parsed_stay_at_the_budget(big_xlsx: Path) -> None:
    # The stream's own counter: how many <row> elements were parsed before the caller stopped.
    with XlsxStream(big_xlsx.read_bytes()) as book:
        (scan,) = book.sheets()
        assert book.declared_dimension(scan) is None
        kept = 0
        rows = book.rows(scan)
        last = None
        for values in rows:
            kept, last = kept + 1, values
            if kept == 500:
                break
        rows.close()
        assert scan.parsed_rows == 500
        assert last == [500, "row 500", 750, False]


def test_rows_past_the_budget_are_never_parsed(big_sheet_xml: bytes) -> None:
    # Broken XML from row 250,000 on: a reader that scans the whole sheet (openpyxl's
    # sizing pass did) fails as corrupt; a reader that stops at the budget never sees it.
    cut = big_sheet_xml.index(b'<row r="250000">')
    data = _with_sheet(big_sheet_xml[:cut] + b'<row r="250000"><c r="A250000"><v>1</v><<<broken')
    doc = extract(data, "truncated.xlsx", limits=Limits(max_rows_per_sheet=1000))
    assert doc.warnings == ["sheet Big cut at 1000 rows"]
    assert doc.structure["sheets"][0]["rows"] == 1000
    # ...while a budget reaching the broken part reports it as corrupt, without a traceback
    # (a small sheet here: parsing 250k rows just to reach the break would slow the suite).
    small = _with_sheet(big_sheet_xml[:big_sheet_xml.index(b'<row r="1500">')] + b"<row><<<broken")
    with pytest.raises(ReaderError) as err:
        extract(small, "truncated.xlsx", limits=Limits(max_rows_per_sheet=2000))
    assert err.value.code is ReaderCode.CORRUPT and "Traceback" not in str(err.value)


def test_stream_matches_openpyxl_full_load() -> None:
    """Value conversion is openpyxl's: compare with a normal (non-read-only) load of the same file."""
    import openpyxl
    import xlsxwriter

    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, {"date_1904": True})
    ws = wb.add_worksheet("Mixed")
    bold = wb.add_format({"bold": True})
    day = wb.add_format({"num_format": "yyyy-mm-dd"})
    ws.write_row(0, 0, ["text", 3, 2.5, True])
    ws.write_datetime(1, 0, dt.datetime(2026, 1, 4), day)
    ws.write_rich_string(1, 1, "plain ", bold, "bold", " tail")
    ws.write_formula(1, 2, "=B1*2", None, 6)
    ws.write(4, 5, "after a gap")  # rows 3-4 missing, columns B-E empty
    wb.add_worksheet("Second").write(0, 0, "x")
    wb.close()
    data = buf.getvalue()

    expected = {}
    full = openpyxl.load_workbook(io.BytesIO(data), data_only=True)
    for sheet in full.worksheets:
        expected[sheet.title] = [list(r) for r in sheet.iter_rows(values_only=True)]
    full.close()
    with XlsxStream(data) as book:
        got = {}
        for scan in book.sheets():
            rows = list(book.rows(scan))
            width = max(len(r) for r in rows)
            got[scan.title] = [r + [None] * (width - len(r)) for r in rows]
        assert all(not s.uncached_formulas for s in book.sheets())
    assert got["Mixed"][1][0] == dt.datetime(2026, 1, 4)
    assert got["Mixed"][1][1] == "plain bold tail"
    # openpyxl fills the missing rows 3-4; the stream yields only rows present in the XML
    assert got["Mixed"] == [r for r in expected["Mixed"] if any(v is not None for v in r)]
    assert got["Second"] == expected["Second"]


def test_declared_dimension_is_read_from_the_sheet_head(fixture_docs: Path) -> None:
    with XlsxStream((fixture_docs / "budget.xlsx").read_bytes()) as book:
        dims = {s.title: book.declared_dimension(s) for s in book.sheets()}
    assert dims["Expenses"] == "A1:D51"


def test_stream_closes_the_archive(fixture_docs: Path) -> None:
    book = XlsxStream((fixture_docs / "budget.xlsx").read_bytes())
    with book:
        archive = book._reader.archive
        assert archive.fp is not None
    assert archive.fp is None


def test_shared_strings_are_parsed_only_as_far_as_the_kept_rows_need() -> None:
    # 300k rows each pointing at its own shared string, in first-use order as writers store them.
    sheet = HEAD + b"".join(f'<row r="{r}"><c r="A{r}" t="s"><v>{r - 1}</v></c>'
                            f'<c r="B{r}"><v>{r}</v></c></row>'.encode()
                            for r in range(1, BIG_ROWS + 1)) + TAIL
    strings = SST_HEAD + b"".join(f"<si><t>label {i}</t></si>".encode() for i in range(BIG_ROWS)) + b"</sst>"
    data = _with_sheet(sheet, strings)
    doc = extract(data, "shared.xlsx", limits=Limits(max_rows_per_sheet=1000))
    assert doc.warnings == ["sheet Big cut at 1000 rows"]
    assert doc.text.rstrip("\n").endswith("\nlabel 999 | 1000")
    with XlsxStream(data) as book:
        (scan,) = book.sheets()
        rows = book.rows(scan)
        last = None
        for kept, values in enumerate(rows, 1):
            last = values
            if kept == 1000:
                break
        rows.close()
        assert last == ["label 999", 1000]
        assert book.shared_strings.parsed == 1000


def test_shared_string_text_matches_openpyxl() -> None:
    """Rich-text runs joined, phonetic runs left out, _x005F_ unescaped: as openpyxl's own reader does."""
    from openpyxl.reader.strings import read_string_table

    strings = (SST_HEAD
               + b"<si><t>plain</t></si>"
               + b"<si><r><rPr><b/></rPr><t>bold</t></r><r><t xml:space=\"preserve\"> and more</t></r></si>"
               + b"<si><t>\xe6\x9d\xb1\xe4\xba\xac</t><rPh sb=\"0\" eb=\"2\"><t>\xe3\x81\xa8\xe3\x81\x86</t></rPh></si>"
               + b"<si><t>a_x005F_x000D_b</t></si><si><t/></si></sst>")
    sheet = HEAD + b"".join(f'<row r="{i + 1}"><c r="A{i + 1}" t="s"><v>{i}</v></c></row>'.encode()
                            for i in range(5)) + TAIL
    with XlsxStream(_with_sheet(sheet, strings)) as book:
        (scan,) = book.sheets()
        got = [row[0] if row else None for row in book.rows(scan)]
    expected = read_string_table(io.BytesIO(strings))
    assert expected[1] == "bold and more" and expected[2] == "\u6771\u4eac"
    assert got[:4] == expected[:4] and got[4] in (None, "")


@pytest.mark.parametrize(("index", "why"), [(7, "holds 1"), (-1, "negative index")])
def test_shared_string_index_out_of_range_is_corrupt(index: int, why: str) -> None:
    sheet = HEAD + f'<row r="1"><c r="A1" t="s"><v>{index}</v></c></row>'.encode() + TAIL
    with pytest.raises(ReaderError) as err:
        extract(_with_sheet(sheet, SST_HEAD + b"<si><t>only</t></si></sst>"), "bad-index.xlsx")
    assert err.value.code is ReaderCode.CORRUPT and f"shared string #{index}" in str(err.value)
    assert why in str(err.value) and "do not retry" in str(err.value)


def test_missing_shared_string_part_is_corrupt() -> None:
    complete = _with_sheet(HEAD + b'<row r="1"><c r="A1" t="s"><v>0</v></c></row>' + TAIL)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(complete)) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            if info.filename != STRINGS:
                zout.writestr(info.filename, zin.read(info.filename))
    with pytest.raises(ReaderError) as err:
        extract(out.getvalue(), "no-strings.xlsx")
    assert err.value.code is ReaderCode.CORRUPT and "xl/sharedStrings.xml is missing" in str(err.value)
