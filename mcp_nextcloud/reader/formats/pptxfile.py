"""PPTX: slide by slide — title, text of (nested) groups, tables, speaker notes."""
from __future__ import annotations

import io
from typing import Any, Iterator

from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE

from ..document import Document, Limits
from ..limits import Deadline, open_zip
from ._common import PagedText


def _texts(shapes: Any, skip: Any = None) -> Iterator[str]:
    for shape in shapes:
        if skip is not None and shape.shape_id == skip:
            continue
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            yield from _texts(shape.shapes)
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            if shape.text_frame.text.strip():
                yield shape.text_frame.text
        elif getattr(shape, "has_table", False) and shape.has_table:
            for row in shape.table.rows:
                yield " | ".join(cell.text for cell in row.cells)


def extract(data: bytes, name: str, limits: Limits) -> Document:
    # python-pptx opens the zip itself and inflates whole members: hand it an honest stored copy.
    with open_zip(data, limits, "pptx") as zf:
        data = zf.materialize()
    deadline = Deadline(limits.max_seconds)
    prs = Presentation(io.BytesIO(data))
    out = PagedText()
    for number, slide in enumerate(prs.slides, 1):
        deadline.check()
        out.new_page()
        title_shape = slide.shapes.title
        title = (title_shape.text_frame.text.strip() if title_shape is not None else "") or f"Slide {number}"
        out.heading(title.replace("\n", " "), 1, text=f"## Slide {number}: {title}")
        skip = title_shape.shape_id if title_shape is not None else None
        for text in _texts(slide.shapes, skip):
            out.line(text)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                out.line(f"Notes: {notes.text}")
        out.line("")
    return out.build("pptx", name, "application/vnd.openxmlformats-officedocument.presentationml.presentation",
                     page_unit="slide", engine="python-pptx")
