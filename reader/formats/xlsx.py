"""XLSX: openpyxl read-only, one section (page) per sheet, a row budget, formula warnings.

Cells are joined with " | "; empty rows are skipped. Formulas saved without
cached values (openpyxl and other non-computing writers) read as empty cells,
so the sheet XML is scanned for <f> elements without a <v> to say so.
"""
from __future__ import annotations

import io
import re
import zipfile
from typing import Any

from ..document import Document, Limits
from ..limits import Deadline, open_zip
from ._common import PagedText

# A formula cell whose value is absent or empty: <f>..</f></c>, <f>..</f><v></v></c>, <f .../></c>
_NO_CACHE = re.compile(rb"(?:</f>|<f\b[^>]*/>)\s*(?:<v\s*/>|<v>\s*</v>)?\s*</c>")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).replace("\n", " ")


def _has_uncached_formulas(zf: zipfile.ZipFile, member: str | None) -> bool:
    """Stream the sheet XML looking for a formula without a cached value (stops at the first)."""
    if not member:
        return False
    member = member.lstrip("/")
    try:
        with zf.open(member) as fh:
            tail = b""
            while chunk := fh.read(1 << 20):
                if _NO_CACHE.search(tail + chunk):
                    return True
                tail = chunk[-256:]
    except (KeyError, zipfile.BadZipFile, OSError):
        return False
    return False


def extract(data: bytes, name: str, limits: Limits) -> Document:
    import openpyxl

    zf = open_zip(data, limits, "xlsx")
    deadline = Deadline(limits.max_seconds)
    out = PagedText()
    warnings: list[str] = []
    sheets: list[dict[str, Any]] = []
    formula_sheets: list[str] = []
    wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        for ws in wb.worksheets:
            out.new_page()
            offset = out.heading(ws.title, 1, text=f"## Sheet: {ws.title}")
            header: list[str] = []
            first: list[list[str]] = []
            rows = columns = 0
            cut = False
            saw_empty = False  # an uncached formula reads as None; without any None there is none
            for seen, values in enumerate(ws.iter_rows(values_only=True), 1):
                if seen % 1000 == 0:  # counts empty rows too: a sparse sheet can be mostly gaps
                    deadline.check()
                saw_empty = saw_empty or None in values
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
                warnings.append(f"sheet {ws.title} cut at {limits.max_rows_per_sheet} rows")
            if saw_empty and _has_uncached_formulas(zf, getattr(ws, "_worksheet_path", None)):
                formula_sheets.append(ws.title)
            dims = f"{rows}x{columns}"
            try:
                dims = ws.calculate_dimension() if ws.max_row else dims
            except Exception:  # unsized sheets (no <dimension>) keep the counted size
                pass
            sheets.append({"name": ws.title, "dimensions": dims, "rows": rows, "columns": columns,
                           "header": header, "firstRows": first, "offset": offset})
            out.line("")
    finally:
        wb.close()
        zf.close()
    if formula_sheets:
        warnings.append("formulas without cached values in sheet(s) " + ", ".join(formula_sheets)
                        + ": their cells read as empty; open and re-save the file in a spreadsheet app")
    return out.build("xlsx", name, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
                     page_unit="sheet", structure={"sheets": sheets}, warnings=warnings, engine="openpyxl")
