"""OpenDocument (ODT, ODS, ODP): zip + content.xml parsed with defusedxml.

ODT: headings (text:h with outline-level) and paragraphs; ODS: one section per
sheet with " | "-joined rows and a row budget; ODP: one slide per draw:page,
titled by its title frame, with speaker notes.
"""
from __future__ import annotations

from typing import Any

from defusedxml import ElementTree as ET

from ..document import Document, Limits, ReaderCode, ReaderError
from ..limits import Deadline, open_zip, read_member
from ._common import PagedText

NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
}
MIMES = {"odt": "application/vnd.oasis.opendocument.text",
         "ods": "application/vnd.oasis.opendocument.spreadsheet",
         "odp": "application/vnd.oasis.opendocument.presentation"}
MAX_REPEAT = 64  # a repeated empty cell / row is expanded at most this much (files repeat 1M blank rows)


def q(prefix: str, tag: str) -> str:
    return f"{{{NS[prefix]}}}{tag}"


T_P, T_H, T_S, T_TAB, T_BR = q("text", "p"), q("text", "h"), q("text", "s"), q("text", "tab"), q("text", "line-break")
TABLE, ROW, CELL = q("table", "table"), q("table", "table-row"), q("table", "table-cell")
COVERED = q("table", "covered-table-cell")


def inline(el: Any) -> str:
    """The text of a paragraph, honouring text:s (spaces), text:tab and text:line-break."""
    parts = [el.text or ""]
    for child in el:
        if child.tag == T_S:
            parts.append(" " * int(child.get(q("text", "c"), "1") or 1))
        elif child.tag == T_TAB:
            parts.append("\t")
        elif child.tag == T_BR:
            parts.append("\n")
        else:
            parts.append(inline(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _blocks(el: Any, out: PagedText) -> None:
    """Walk block content in order: headings, paragraphs, lists, tables, frames."""
    for child in el:
        if child.tag == T_H:
            title = inline(child).strip()
            if title:
                out.heading(title, int(child.get(q("text", "outline-level"), "1") or 1))
        elif child.tag == T_P:
            text = inline(child)
            if text.strip():
                out.line(text)
        elif child.tag == TABLE:
            for row in _rows(child, Limits()):
                out.line(" | ".join(row))
        else:
            _blocks(child, out)


def _rows(table: Any, limits: Limits) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in table.iter(ROW):
        cells: list[str] = []
        for cell in row:
            if cell.tag not in (CELL, COVERED):
                continue
            text = "\n".join(inline(p) for p in cell.iter(T_P)).replace("\n", " ")
            repeat = int(cell.get(q("table", "number-columns-repeated"), "1") or 1)
            cells.extend([text] * min(repeat, MAX_REPEAT))
        while cells and not cells[-1]:
            cells.pop()
        if not cells:
            continue
        repeat = int(row.get(q("table", "number-rows-repeated"), "1") or 1)
        for _ in range(min(repeat, MAX_REPEAT)):
            rows.append(cells)
        if len(rows) > limits.max_rows_per_sheet:
            break
    return rows


def _ods(body: Any, out: PagedText, limits: Limits, deadline: Deadline) -> tuple[list[dict[str, Any]], list[str]]:
    sheets: list[dict[str, Any]] = []
    warnings: list[str] = []
    for table in body.iter(TABLE):
        deadline.check()
        name = table.get(q("table", "name"), f"Sheet {len(sheets) + 1}")
        out.new_page()
        offset = out.heading(name, 1, text=f"## Sheet: {name}")
        rows = _rows(table, limits)
        if len(rows) > limits.max_rows_per_sheet:
            rows = rows[: limits.max_rows_per_sheet]
            warnings.append(f"sheet {name} cut at {limits.max_rows_per_sheet} rows")
        for row in rows:
            out.line(" | ".join(row))
        out.line("")
        columns = max((len(r) for r in rows), default=0)
        sheets.append({"name": name, "dimensions": f"{len(rows)}x{columns}", "rows": len(rows),
                       "columns": columns, "header": rows[0] if rows else [], "firstRows": rows[1:6],
                       "offset": offset})
    return sheets, warnings


def _odp(body: Any, out: PagedText, deadline: Deadline) -> None:
    for number, page in enumerate(body.iter(q("draw", "page")), 1):
        deadline.check()
        out.new_page()
        title_frame = None
        title = ""
        for frame in page.iter(q("draw", "frame")):
            if frame.get(q("presentation", "class")) == "title":
                title_frame = frame
                title = " ".join(inline(p).strip() for p in frame.iter(T_P)).strip()
                break
        title = title or page.get(q("draw", "name")) or f"Slide {number}"
        out.heading(title, 1, text=f"## Slide {number}: {title}")
        notes = page.find(q("presentation", "notes"))
        for child in page:
            if child is not notes and child is not title_frame:
                _blocks([child], out)
        if notes is not None:
            text = "\n".join(inline(p) for p in notes.iter(T_P) if inline(p).strip())
            if text:
                out.line(f"Notes: {text}")
        out.line("")


def extract(data: bytes, name: str, limits: Limits) -> Document:
    zf = open_zip(data, limits, "odf")
    try:
        names = zf.namelist()
        small = "mimetype" in names and zf.getinfo("mimetype").file_size < 200
        declared = read_member(zf, "mimetype", "odf") if small else b""
        kind = {v: k for k, v in MIMES.items()}.get(declared.decode("ascii", "replace").strip())
        kind = kind or name.rsplit(".", 1)[-1].lower()  # no mimetype member: trust the extension
        content = read_member(zf, "content.xml", kind)
    finally:
        zf.close()
    if kind not in MIMES:
        raise ReaderError(f"unsupported OpenDocument type in {name!r}", "only odt, ods and odp are read",
                          code=ReaderCode.UNSUPPORTED)
    root = ET.fromstring(content)
    body = root.find(q("office", "body"))
    if body is None:
        raise ReaderError(f"corrupt {kind.upper()} file: content.xml has no body", "ask for a fresh copy",
                          code=ReaderCode.CORRUPT)
    deadline = Deadline(limits.max_seconds)
    out = PagedText()
    structure: dict[str, Any] = {}
    warnings: list[str] = []
    unit = "section"
    if kind == "ods":
        structure["sheets"], warnings = _ods(body, out, limits, deadline)
        unit = "sheet"
    elif kind == "odp":
        _odp(body, out, deadline)
        unit = "slide"
    else:
        _blocks(body, out)
    return out.build(kind, name, MIMES[kind], page_unit=unit, structure=structure, warnings=warnings,
                     engine="odf-xml")
