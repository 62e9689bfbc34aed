"""XLSX: one section (page) per sheet, a row budget per sheet, formula warnings.

Rows are streamed by xlsx_stream (openpyxl's parser, without openpyxl's
whole-sheet sizing pass), so the time spent is proportional to the rows kept,
not to the size of the sheet. Cells are joined with " | "; empty rows are
skipped. Formulas saved without cached values (openpyxl and other
non-computing writers) read as empty cells, and a warning says so.
"""
from __future__ import annotations

import contextlib
from typing import Any

from ..document import Document, Limits
from ..limits import Deadline
from ._common import PagedText
from .xlsx_stream import XlsxStream


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).replace("\n", " ")


def extract(data: bytes, name: str, limits: Limits) -> Document:
    deadline = Deadline(limits.max_seconds)
    out = PagedText()
    warnings: list[str] = []
    sheets: list[dict[str, Any]] = []
    formula_sheets: list[str] = []
    with XlsxStream(data, limits) as book:
        for scan in book.sheets():
            out.new_page()
            offset = out.heading(scan.title, 1, text=f"## Sheet: {scan.title}")
            header: list[str] = []
            first: list[list[str]] = []
            rows = columns = 0
            cut = False
            with contextlib.closing(book.rows(scan)) as stream:  # closing stops the sheet's inflation
                for values in stream:
                    if scan.parsed_rows % 1000 == 0:  # counts empty rows too: a sheet can be mostly gaps
                        deadline.check()
                    cells = [_cell(v) for v in values]
                    while cells and not cells[-1]:
                        cells.pop()
                    if not cells:
                        continue
                    if rows >= limits.max_rows_per_sheet:
                        cut = True
                        break
                    rows += 1
                    columns = max(columns, len(cells))
                    if not header:
                        header = cells
                    elif len(first) < 5:
                        first.append(cells)
                    out.line(" | ".join(cells))
            if cut:
                warnings.append(f"sheet {scan.title} cut at {limits.max_rows_per_sheet} rows")
            if scan.uncached_formulas:
                formula_sheets.append(scan.title)
            # The declared <dimension> when present; unsized sheets keep the counted size.
            dims = book.declared_dimension(scan) or f"{rows}x{columns}"
            sheets.append({"name": scan.title, "dimensions": dims, "rows": rows, "columns": columns,
                           "header": header, "firstRows": first, "offset": offset})
            out.line("")
    if formula_sheets:
        warnings.append("formulas without cached values in sheet(s) " + ", ".join(formula_sheets)
                        + ": their cells read as empty; open and re-save the file in a spreadsheet app")
    return out.build("xlsx", name, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
                     page_unit="sheet", structure={"sheets": sheets}, warnings=warnings, engine="openpyxl")
