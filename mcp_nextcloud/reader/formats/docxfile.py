"""DOCX: paragraphs and tables in document order; Heading N / Title styles become the outline."""
from __future__ import annotations

import io
import re

import docx
from docx.table import Table

from ..document import Document, Limits
from ..limits import open_zip
from ._common import PagedText

_HEADING = re.compile(r"^(?:Heading|Titre|Überschrift)\s*(\d)$", re.IGNORECASE)


def _level(style_name: str) -> int | None:
    if style_name == "Title":
        return 1
    m = _HEADING.match(style_name.strip())
    return int(m.group(1)) if m else None


def extract(data: bytes, name: str, limits: Limits) -> Document:
    # python-docx opens the zip itself and inflates whole members: hand it an honest stored copy.
    with open_zip(data, limits, "docx") as zf:
        data = zf.materialize()
    document = docx.Document(io.BytesIO(data))
    out = PagedText()
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            for row in block.rows:
                out.line(" | ".join(cell.text.replace("\n", " ") for cell in row.cells))
            continue
        text = block.text
        style = block.style.name if block.style is not None else ""
        level = _level(style or "")
        if level and text.strip():
            out.heading(text.strip(), level)
        elif text.strip():
            out.line(text)
    return out.build("docx", name, "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                     page_unit="section", engine="python-docx")
