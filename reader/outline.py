"""outline: the small map of a document an agent reads before spending tokens on it.

Headings, bookmarks, slide titles or sheet names with offset, page and line
(so `page(doc, offset=entry.offset)` starts there), plus a format skeleton
(CSV header and first rows, JSON keys and types, sheet dimensions). Capped, and
says so when cut.
"""
from __future__ import annotations

import bisect
import csv
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any

from .document import Document, OutlineEntry

MAX_ENTRIES = 200
MAX_TITLE = 120
_SAMPLE_ROWS = 5
_JSON_PARSE_MAX = 5_000_000  # characters: a larger JSON keeps the extractor's skeleton only
_JSON_KEYS_MAX = 40
_JSON_DEPTH_MAX = 4

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
_SETEXT = re.compile(r"^(?P<title>[^\n#>\-=*].*)\n(?P<rule>=+|-+)[ \t]*$", re.M)
_FENCE = re.compile(r"^ {0,3}(```|~~~)", re.M)


@dataclass
class Outline:
    """Entries in text order, the format skeleton, and the document's size."""

    kind: str
    entries: list[OutlineEntry] = field(default_factory=list)
    structure: dict[str, Any] = field(default_factory=dict)
    truncated: bool = False
    total: int = 0          # entries in all (as every `total`: how many of what the answer lists exist)
    chars: int = 0          # the document's length in characters
    pages: int = 1
    page_unit: str = "page"
    hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        entries = []
        for e in self.entries:
            d: dict[str, Any] = {"title": e.title, "level": e.level, "offset": e.offset, "line": e.line}
            if e.page is not None:
                d["page"] = e.page
            entries.append(d)
        out: dict[str, Any] = {
            "kind": self.kind,
            "entries": entries,
            "truncated": self.truncated,
            "total": self.total,
            "chars": self.chars,
            "pages": self.pages,
            "pageUnit": self.page_unit,
        }
        if self.structure:
            out["structure"] = self.structure
        if self.hint:
            out["hint"] = self.hint
        return out


def _title(text: str) -> str:
    """One line, at most MAX_TITLE characters."""
    t = " ".join(text.split())
    return t if len(t) <= MAX_TITLE else t[: MAX_TITLE - 1] + "…"


def _fenced_ranges(text: str) -> list[tuple[int, int]]:
    """[start, end) of fenced code blocks, whose '#' lines are not headings."""
    marks = [m.start() for m in _FENCE.finditer(text)]
    ranges = [(marks[i], marks[i + 1]) for i in range(0, len(marks) - 1, 2)]
    if len(marks) % 2:
        ranges.append((marks[-1], len(text)))
    return ranges


def markdown_headings(text: str, *, setext: bool = True) -> list[OutlineEntry]:
    """ATX ('# Title') and setext ('Title' over '===') headings outside code fences."""
    fences = _fenced_ranges(text)

    def in_fence(pos: int) -> bool:
        return any(a <= pos < b for a, b in fences)

    found = [(m.start(), len(m.group(1)), m.group(2)) for m in _ATX.finditer(text) if not in_fence(m.start())]
    if setext:
        for m in _SETEXT.finditer(text):
            if not in_fence(m.start()) and m.group("title").strip():
                found.append((m.start(), 1 if m.group("rule")[0] == "=" else 2, m.group("title")))
    found.sort()
    return [OutlineEntry(title=_title(t), level=lvl, offset=off) for off, lvl, t in found]


def _page_entries(doc: Document) -> list[OutlineEntry]:
    """One entry per page / slide / sheet, titled by its first non-empty line."""
    entries = []
    bounds = list(doc.pages) + [len(doc.text)]
    for n, start in enumerate(doc.pages, 1):
        chunk = doc.text[start : bounds[n]]
        stripped = chunk.lstrip()
        first = stripped.split("\n", 1)[0] if stripped else ""
        offset = start + (len(chunk) - len(stripped))
        label = f"{doc.page_unit.capitalize()} {n}"
        entries.append(OutlineEntry(title=_title(f"{label}: {first}" if first else label), offset=offset, page=n))
    return entries


def _sheet_entries(doc: Document) -> list[OutlineEntry]:
    entries = []
    for sheet in doc.structure.get("sheets") or []:
        if isinstance(sheet, dict) and "name" in sheet:
            entries.append(OutlineEntry(title=_title(str(sheet["name"])), offset=int(sheet.get("offset") or 0)))
    return entries


def _csv_structure(text: str) -> dict[str, Any]:
    """Header, first rows and a row count from CSV/TSV text (the extractor may have done it already)."""
    head = text[:20_000]
    try:
        dialect = csv.Sniffer().sniff(head.split("\n", 1)[0] or ",", delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = []
    for row in csv.reader(io.StringIO(head), dialect):
        rows.append([_title(c) for c in row])
        if len(rows) > _SAMPLE_ROWS:
            break
    if not rows:
        return {}
    return {"header": rows[0], "rows": rows[1:], "rowCount": max(0, text.count("\n") + (not text.endswith("\n")) - 1)}


def json_skeleton(value: Any, depth: int = 0) -> Any:
    """Keys, types and array lengths of a JSON value, without its data."""
    if isinstance(value, dict):
        if depth >= _JSON_DEPTH_MAX:
            return f"object[{len(value)} keys]"
        out = {str(k): json_skeleton(v, depth + 1) for k, v in list(value.items())[:_JSON_KEYS_MAX]}
        if len(value) > _JSON_KEYS_MAX:
            out["…"] = f"{len(value) - _JSON_KEYS_MAX} more keys"
        return out
    if isinstance(value, list):
        if not value:
            return "array[0]"
        if depth >= _JSON_DEPTH_MAX:
            return f"array[{len(value)}]"
        return {f"array[{len(value)}]": json_skeleton(value[0], depth + 1)}
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string"}.get(type(value), type(value).__name__)


def _small(structure: dict[str, Any]) -> dict[str, Any]:
    """The extractor's skeleton with sample rows capped at five (it is meant to be small)."""
    out = dict(structure)
    if isinstance(out.get("rows"), list):
        out["rows"] = out["rows"][:_SAMPLE_ROWS]
    if isinstance(out.get("sheets"), list):
        out["sheets"] = [
            {**sh, "firstRows": sh["firstRows"][:_SAMPLE_ROWS]}
            if isinstance(sh, dict) and isinstance(sh.get("firstRows"), list) else sh
            for sh in out["sheets"][:MAX_ENTRIES]
        ]
    return out


def _structure(doc: Document) -> dict[str, Any]:
    if doc.structure:
        return _small(doc.structure)
    if doc.kind == "csv":
        return _csv_structure(doc.text)
    if doc.kind == "json" and len(doc.text) <= _JSON_PARSE_MAX:
        try:
            return {"skeleton": json_skeleton(json.loads(doc.text))}
        except ValueError:
            return {}
    return {}


def outline(doc: Document) -> Outline:
    """The document's outline: its own entries, else headings / pages / sheets derived from it."""
    if doc.outline:
        entries = [OutlineEntry(e.title, e.level, e.offset, e.page, e.line) for e in doc.outline]
    elif doc.kind in ("markdown", "text", "html", "docx", "odt"):
        # Extractors render headings of these formats as Markdown headings.
        entries = markdown_headings(doc.text, setext=doc.kind != "text")
    elif doc.kind in ("xlsx", "ods"):
        entries = _sheet_entries(doc) or _page_entries(doc)
    elif doc.kind in ("pdf", "pptx", "odp") or len(doc.pages) > 1:
        entries = _page_entries(doc)
    else:
        entries = []
    total_entries = len(entries)
    truncated = total_entries > MAX_ENTRIES
    entries = entries[:MAX_ENTRIES]
    line_starts = [0] + [m.end() for m in re.finditer("\n", doc.text)] if entries else [0]
    for e in entries:
        e.offset = max(0, min(e.offset, len(doc.text)))
        if e.page is None and len(doc.pages) > 1:
            e.page = doc.page_of(e.offset)
        if e.line is None:
            e.line = bisect.bisect_right(line_starts, e.offset)
    hint = None
    structure = _structure(doc)
    if truncated:
        hint = f"showing the first {MAX_ENTRIES} of {total_entries} entries: use find to reach a later section"
    elif not entries and structure:
        hint = ("no headings: `structure` shows the shape (header and first rows, or the key skeleton); "
                "use find to reach a value")
    elif not entries:
        hint = "no headings or pages to list: use find with a phrase, or read from offset 0"
    return Outline(
        kind=doc.kind,
        entries=entries,
        structure=structure,
        truncated=truncated,
        total=total_entries,
        chars=len(doc.text),
        pages=len(doc.pages),
        page_unit=doc.page_unit,
        hint=hint,
    )
