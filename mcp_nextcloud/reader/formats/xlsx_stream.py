"""Stream the rows of an xlsx workbook without ever scanning a whole sheet up front.

openpyxl's read-only mode sizes every worksheet when the workbook is loaded:
ReadOnlyWorksheet._get_size -> parse_dimensions, which, for a sheet without a
<dimension> element, parses the ENTIRE sheet XML before the first row is
returned (a 31 MB sheet took ~10 s even though only 20k rows were kept). This
module keeps openpyxl's own parsing (shared strings, inline strings, numbers,
booleans, dates from the cell style's number format, the 1904 epoch) but wires
the pieces together itself, so:

- the declared <dimension> is read from the sheet's head only (stops at <sheetData>);
- rows are parsed lazily, one <row> at a time, and the caller stops at its budget;
- formulas without a cached value are noticed in the rows actually parsed, instead
  of by a second pass over the whole sheet.

It relies on openpyxl 3.1 internals (ExcelReader's steps, WorkSheetParser);
tests/reader/test_extract_xlsx_large.py fails loudly if those change.
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any, Generator

from defusedxml.ElementTree import iterparse
from openpyxl.reader.excel import ExcelReader
from openpyxl.styles.stylesheet import apply_stylesheet
from openpyxl.utils.cell import get_column_letter, range_boundaries
from openpyxl.worksheet._reader import WorkSheetParser
from openpyxl.xml.constants import SHARED_STRINGS, SHEET_MAIN_NS

from ..document import DEFAULT_LIMITS, Limits, ReaderCode, ReaderError
from ..limits import open_zip

_FORMULA = f"{{{SHEET_MAIN_NS}}}f"
_DIMENSION = f"{{{SHEET_MAIN_NS}}}dimension"
_SHEET_DATA = f"{{{SHEET_MAIN_NS}}}sheetData"
_INLINE = f"{{{SHEET_MAIN_NS}}}is"
_T = f"{{{SHEET_MAIN_NS}}}t"
_RUN = f"{{{SHEET_MAIN_NS}}}r"
_VALUE = f"{{{SHEET_MAIN_NS}}}v"
_SI = f"{{{SHEET_MAIN_NS}}}si"


def _inline_text(el: Any) -> str:
    """The text of an <is> element: its plain <t> plus each rich-text run's <t> (phonetic runs left out).

    Same result as openpyxl's Text.from_tree(el).content, without building a
    descriptor-validated object per cell (that was a quarter of the parse time).
    """
    parts = [child.text or "" for child in el if child.tag == _T]
    for run in el.iter(_RUN):
        parts.extend(t.text or "" for t in run if t.tag == _T)
    return "".join(parts)


class _LazyStrings:
    """The shared-string table, parsed only as far as the highest index asked for.

    openpyxl reads the whole table up front (300k strings took ~5 s); writers
    store strings in order of first use, so a sheet cut at its row budget needs
    only the beginning of the table.
    """

    def __init__(self, src: Any | None) -> None:
        self._src = src
        self._it = iterparse(src) if src is not None else None
        self._strings: list[str] = []

    def __getitem__(self, index: int) -> str:
        while index >= len(self._strings) and self._it is not None:
            self._advance()
        if not 0 <= index < len(self._strings):
            why = "a negative index" if index < 0 else f"the table holds {len(self._strings)}"
            raise ReaderError(
                f"corrupt XLSX file: a cell refers to shared string #{index} but {why}", "ask for a fresh copy",
                code=ReaderCode.CORRUPT)
        return self._strings[index]

    def _advance(self) -> None:
        """Parse the next <si> (or close the stream at the end of the table)."""
        for _event, node in self._it or ():
            if node.tag == _SI:
                # same text as openpyxl's read_string_table, including its x005F_ unescaping
                self._strings.append(_inline_text(node).replace("x005F_", ""))
                node.clear()
                return
        self.close()

    @property
    def parsed(self) -> int:
        """How many strings have been parsed so far."""
        return len(self._strings)

    def close(self) -> None:
        """Stop parsing and close the zip member (idempotent)."""
        self._it = None
        if self._src is not None:
            self._src.close()
            self._src = None


@dataclass
class SheetScan:
    """One worksheet and what streaming it has seen so far.

    `parsed_rows` counts <row> elements parsed (empty ones included), so it shows
    how much of the sheet was actually read; `uncached_formulas` turns true when a
    parsed cell holds a formula whose cached value is missing or empty.
    """

    title: str
    path: str
    parsed_rows: int = 0
    uncached_formulas: bool = False


class _RowParser(WorkSheetParser):  # type: ignore[misc]   # openpyxl ships no types
    """openpyxl's sheet parser, also noting formula cells that read as empty."""

    def __init__(self, src: Any, scan: SheetScan, **kw: Any) -> None:
        super().__init__(src, **kw)
        self.scan = scan

    def parse_cell(self, element: Any) -> dict[str, Any]:
        if element.get("t") == "inlineStr":
            inline = element.find(_INLINE)
            if inline is not None:
                # Hand openpyxl the text as a formula-string result ("str": kept as is) so it
                # does not build a rich Text object; the element is discarded after the row anyway.
                element.set("t", "str")
                element.remove(inline)
                for old in element.findall(_VALUE):
                    element.remove(old)
                value = element.makeelement(_VALUE, {})
                value.text = _inline_text(inline)
                element.append(value)
        cell: dict[str, Any] = super().parse_cell(element)
        # data_only: a formula's value is its cached <v>; none (or empty) means the
        # writer never computed it, so the cell reads as blank and we must say so.
        if cell["value"] is None and not self.scan.uncached_formulas and element.find(_FORMULA) is not None:
            self.scan.uncached_formulas = True
        return cell


class XlsxStream:
    """An xlsx workbook opened for row streaming; use as a context manager (closes the zip).

    Loading reads only the package manifest, workbook and styles: no worksheet
    XML is touched until `rows()` is iterated, and shared strings are parsed on
    demand (`shared_strings.parsed` tells how many).
    """

    def __init__(self, data: bytes, limits: Limits = DEFAULT_LIMITS) -> None:
        # Every member openpyxl reads (manifest, workbook, styles, sheets, shared strings) goes through the
        # capped archive: inflated in bounded steps, never past the declared sizes or the total budget.
        archive = open_zip(data, limits, "xlsx")
        try:
            self._reader = ExcelReader(io.BytesIO(data), read_only=True, data_only=True)
        except BaseException:
            archive.close()
            raise
        self._reader.archive.close()
        self._reader.archive = archive
        self.shared_strings = _LazyStrings(None)
        try:
            self._reader.read_manifest()
            part = self._reader.package.find(SHARED_STRINGS)
            if part is not None:
                path = part.PartName[1:]
                if path not in self._reader.valid_files:
                    raise ReaderError(f"corrupt XLSX file: {path} is missing", "ask for a fresh copy",
                                      code=ReaderCode.CORRUPT)
                self.shared_strings = _LazyStrings(self._reader.archive.open(path))
            self._reader.read_workbook()
            apply_stylesheet(self._reader.archive, self._reader.wb)
        except BaseException:
            self.close()
            raise
        self._wb = self._reader.wb

    def __enter__(self) -> XlsxStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the shared-string stream and the archive (idempotent)."""
        self.shared_strings.close()
        self._reader.archive.close()

    def sheets(self) -> list[SheetScan]:
        """The worksheets in workbook order (chartsheets and dangling references skipped)."""
        valid = set(self._reader.valid_files)
        out: list[SheetScan] = []
        for sheet, rel in self._reader.parser.find_sheets():
            if rel.target in valid and "chartsheet" not in rel.Type:
                out.append(SheetScan(title=sheet.name, path=rel.target))
        return out

    def declared_dimension(self, scan: SheetScan) -> str | None:
        """The sheet's <dimension> as "A1:D51", read from the XML head; None when absent or open-ended.

        Parsing stops at <sheetData> (the dimension comes before it), so the cost
        does not depend on how many rows the sheet holds.
        """
        with self._reader.archive.open(scan.path) as src:
            for _event, el in iterparse(src, events=("start",)):
                if el.tag == _SHEET_DATA:
                    return None
                if el.tag == _DIMENSION:
                    try:
                        min_col, min_row, max_col, max_row = range_boundaries(el.get("ref") or "")
                    except (ValueError, TypeError):
                        return None
                    if not (max_col and max_row):
                        return None
                    return f"{get_column_letter(min_col or 1)}{min_row or 1}:{get_column_letter(max_col)}{max_row}"
        return None

    def rows(self, scan: SheetScan) -> Generator[list[Any], None, None]:
        """Yield each <row> of the sheet as a list of cell values (column A first, gaps as None).

        Lazy: stop iterating (and close the generator) at your budget and the rest
        of the sheet is never inflated or parsed. Rows missing from the XML are not
        yielded; a row without cells yields an empty list.
        """
        with self._reader.archive.open(scan.path) as src:
            parser = _RowParser(src, scan, shared_strings=self.shared_strings, data_only=True,
                                epoch=self._wb.epoch, date_formats=self._wb._date_formats,
                                timedelta_formats=self._wb._timedelta_formats)
            for _idx, cells in parser.parse():
                scan.parsed_rows += 1
                if not cells:
                    yield []
                    continue
                values: list[Any] = [None] * max(c["column"] for c in cells)
                for cell in cells:
                    if cell["column"] >= 1:
                        values[cell["column"] - 1] = cell["value"]
                yield values
