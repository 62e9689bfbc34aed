"""outline: the small map of a document an agent reads before spending tokens on it.

Headings, bookmarks, slide titles or sheet names with offset, page and line
(so `page(doc, offset=entry.offset)` starts there), plus a format skeleton
(CSV header and first rows, JSON keys and types, sheet dimensions). It fits a
byte budget (OUTLINE_BUDGET by default): top levels first, then the biggest
parts opened, deeper levels collapsed into counts; `offset` or `section` spends
the budget on the branch it points into (outline_branch.py); it says so when
anything is left out.
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
from .find import find
from .normalize import normalize_query
from .outline_branch import choose
from .outline_budget import fit_structure, json_bytes

# Bytes of compact JSON for the whole outline: it is read before anything else, so it stays small.
OUTLINE_BUDGET = 4096
_HINT_ROOM = 360  # bytes kept for the hint and the fields that announce a cut
MAX_SHEETS = 200
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
    """Entries in document order, the format skeleton, and the document's size."""

    kind: str
    total: int = 0
    pages: int = 1
    page_unit: str = "page"
    entry_count: int = 0                  # entries in the whole document
    entries: list[OutlineEntry] = field(default_factory=list)
    structure: dict[str, Any] = field(default_factory=dict)
    truncated: bool = False
    hint: str | None = None
    subsections: list[int] = field(default_factory=list)   # per entry: entries below it left out (collapsed)
    next_offset: int | None = None        # outline again from here for the entries after the ones shown

    def to_dict(self) -> dict[str, Any]:
        entries = [entry_dict(e, self.subsections[n] if n < len(self.subsections) else 0)
                   for n, e in enumerate(self.entries)]
        out: dict[str, Any] = {
            "kind": self.kind,
            "entries": entries,
            "truncated": self.truncated,
            # `total` as in every answer: how many of what it lists (entries) exist; `chars` is the length.
            "total": self.entry_count,
            "chars": self.total,
            "pages": self.pages,
            "pageUnit": self.page_unit,
        }
        if self.next_offset is not None:
            out["nextOffset"] = self.next_offset
        if self.structure:
            out["structure"] = self.structure
        if self.hint:
            out["hint"] = self.hint
        return out


def entry_dict(e: OutlineEntry, subsections: int = 0) -> dict[str, Any]:
    """One entry as sent: title, level, offset, line, page when the format has pages, collapsed count."""
    d: dict[str, Any] = {"title": e.title, "level": e.level, "offset": e.offset, "line": e.line}
    if e.page is not None:
        d["page"] = e.page
    if subsections:
        d["subsections"] = subsections
    return d


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
            for sh in out["sheets"][:MAX_SHEETS]
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


def _all_entries(doc: Document) -> list[OutlineEntry]:
    """Every entry of the document, offsets clamped, page and line filled in."""
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
    line_starts = [0] + [m.end() for m in re.finditer("\n", doc.text)] if entries else [0]
    for e in entries:
        e.offset = max(0, min(e.offset, len(doc.text)))
        if e.page is None and len(doc.pages) > 1:
            e.page = doc.page_of(e.offset)
        if e.line is None:
            e.line = bisect.bisect_right(line_starts, e.offset)
    return entries


def _titled(entries: list[OutlineEntry], section: str) -> int | None:
    """The entry titled `section` (case, accents and spacing aside): the same title, else one that starts
    with it, else one that holds it; the first in document order of the best kind."""
    wanted = normalize_query(section)
    if not wanted:
        return None
    titles = [normalize_query(e.title) for e in entries]
    for test in (str.__eq__, str.startswith, str.__contains__):
        found = next((i for i, t in enumerate(titles) if test(t, wanted)), None)
        if found is not None:
            return found
    return None


def _holding(entries: list[OutlineEntry], offset: int) -> int | None:
    """The entry nearest before `offset`; of several at that offset, the first (a parent is listed before
    the children that share its offset, and expanding it must include them). A PDF whose bookmarks point
    back to an earlier page has offsets out of order, so this is a scan, not a bisection."""
    best: int | None = None
    for i, e in enumerate(entries):
        if e.offset <= offset and (best is None or e.offset > entries[best].offset):
            best = i
    return best


def _focus(doc: Document, entries: list[OutlineEntry], offset: int | None, section: str | None) -> int | None:
    """Index of the entry to expand: titled `section` (else the one holding `section`'s best match in the
    text), or the one whose section holds `offset`."""
    if section is not None:
        titled = _titled(entries, section)
        if titled is not None:
            return titled
        found = find(doc, section, limit=1, context=0, ranked=True) if section.strip() else None
        if found is None or not found.matches:
            raise ValueError(f"no outline entry titled {section!r} and no match for it in the text: look at "
                             "the outline without a section first")
        offset = found.matches[0].offset
    if not offset or not entries:
        return None
    return _holding(entries, offset)


def _sheet_in_focus(structure: dict[str, Any], offset: int | None) -> dict[str, Any]:
    """With an offset, only the sheet that holds it: its header and rows get the whole budget."""
    sheets = structure.get("sheets")
    if not offset or not isinstance(sheets, list):
        return structure
    holding = [s for s in sheets if isinstance(s, dict) and int(s.get("offset") or 0) <= offset]
    return {**structure, "sheets": holding[-1:]} if holding else structure


def _hint(o: Outline, structure_cut: bool) -> str | None:
    parts = []
    if o.next_offset is not None:
        parts.append(f"showing {len(o.entries)} of {o.entry_count} entries: outline again with "
                     f"offset={o.next_offset} for the ones after these")
    if any(o.subsections):
        parts.append("'subsections' counts the entries collapsed under an entry: outline again with "
                     "offset=that entry's offset (or a hit's) to open its branch")
    if structure_cut:
        parts.append("structure shortened to fit (fewer sample rows, columns or keys): read the text for the rest")
    if parts:
        return "; ".join(parts)
    if not o.entries and o.structure:
        return ("no headings: `structure` shows the shape (header and first rows, or the key skeleton); "
                "use find to reach a value")
    if not o.entries:
        return "no headings or pages to list: use find with a phrase, or read from offset 0"
    return None


def outline(doc: Document, *, offset: int | None = None, section: str | None = None,
            budget: int = OUTLINE_BUDGET) -> Outline:
    """The document's outline within `budget` bytes of compact JSON.

    Its own entries (bookmarks, headings), else headings / pages / sheets
    derived from the text. `offset` (or a `section`: a title, else text found
    in the document) puts the branch holding it first: its path, subsections
    and siblings (outline_branch.py); entries that do not fit are counted in
    their nearest shown ancestor's `subsections`.
    """
    entries = _all_entries(doc)
    focus = _focus(doc, entries, offset, section)
    o = Outline(kind=doc.kind, total=len(doc.text), pages=len(doc.pages), page_unit=doc.page_unit,
                entry_count=len(entries))
    room = budget - json_bytes(o.to_dict()) - _HINT_ROOM
    sizes = [json_bytes(entry_dict(e)) + 1 for e in entries]
    # The skeleton gets what the entries leave, and at least half when they are many.
    structure, structure_cut = fit_structure(_sheet_in_focus(_structure(doc), offset),
                                             room - min(sum(sizes), room // 2))
    o.structure = structure
    room -= json_bytes(structure) + 14 if structure else 0
    while True:
        chosen = choose(entries, sizes.__getitem__, room, focus)
        o.entries = [entries[i] for i in chosen.shown]
        o.subsections = [chosen.hidden.get(i, 0) for i in chosen.shown]
        o.next_offset = entries[chosen.next_index].offset if chosen.next_index is not None else None
        o.truncated = o.next_offset is not None or structure_cut
        o.hint = _hint(o, structure_cut)
        over = json_bytes(o.to_dict()) - budget
        if over <= 0 or len(o.entries) <= 1:
            return o
        room -= over   # the hint took more than its room: choose again with less
