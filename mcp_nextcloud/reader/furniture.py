"""Lines that are a page's furniture, not its text: navigation bars, footers, tables of contents and indexes.

Generated manuals open every page on a navigation bar ("Download the ebook", "Zurück", "Weiter"), end it on
a footer ("© Copyright", "Next topic") and list sections with dot leaders ("Functions . . . . 45") or page
lists ("mount, 12, 48-50"). The one owner of this line rule: find marks its matches on such lines
(reader/find.py), the search's passage choosers skip them (indexer/search/furniture.py, answer.py).
"""
from __future__ import annotations

import bisect
import re

_DOT_LEADER = re.compile(r"(?:\.\s?){4,}\s*[\divxlc]+\s*$|…\s*\d+\s*$", re.IGNORECASE)
_PAGE_REFS = re.compile(r"[\w)]\s*,?\s+\d{1,4}(?:\s*[,–-]\s*\d{1,4})+\s*$")
_NUMBERED = re.compile(r"^\s*(?:\d+\.)+\d*\.?\s+\S|^\s*[A-Z]\.\d+(?:\.\d+)*\.?\s+\S")
_NAVIGATION = frozenset({"next", "previous", "index", "modules", "navigation", "up", "home", "zurück", "weiter",
                         "précédent", "suivant", "previous topic", "next topic",
                         "table of contents", "download the ebook", "this page",
                         "report a bug", "show source", "|"})


def furniture(line: str) -> bool:
    """A navigation bar or footer line, or a table-of-contents or index line (dot leaders or page lists at
    its end). Cheap tests first: most lines of prose end with neither a digit nor a roman numeral."""
    ln = line.strip()
    if not ln:
        return False
    if ln[-1] in "»«" or ln[0] in "©«" or (ln.rstrip(" |") or ln).lower() in _NAVIGATION:
        return True      # a navigation bar or a page footer ("Python » 3.11 Documentation »", "© Copyright")
    if ln[-1].isdigit() or ln[-1] in "ivxlcIVXLC":
        tail = ln[-80:]      # the patterns sit at the line's end: long lines of prose cost no more
        return _DOT_LEADER.search(tail) is not None or _PAGE_REFS.search(tail) is not None
    return False


def numbered_heading(line: str) -> bool:
    """A short numbered heading ("5.2.1. Firewall", "A.3 Tools"): a table of contents is made of them."""
    ln = line.strip()
    return 0 < len(ln) < 90 and (ln[0].isdigit() or ln[1:2] == ".") and _NUMBERED.search(ln) is not None


# A listing line by its shape alone: an index entry ("shell, 226", "size, 89, 173") or a table-of-contents
# entry without dot leaders ("Splot 226", "I Gnuplot 21"). Such a line is also what a line of prose or code
# may look like, so it counts as a listing only among others of the kind (`listing_kind`).
_PAGES = r"\d{1,4}(?:\s*[-–]\s*\d{1,4})?"    # a page or a page range
_INDEX_LINE = re.compile(rf"^[^\d\s][^,]{{0,80}},\s*{_PAGES}(?:\s*,\s*{_PAGES})*$")
_TOC_LINE = re.compile(r"^[^\W\d_][^\n]{0,100}?[^\s\d]\s+\d{1,4}$")
_NEIGHBOURS = 2      # non-empty lines looked at each side of a line


def line_shape(line: str) -> tuple[str | None, bool]:
    """What a line looks like alone: ("toc" | "index" | "nav" | None, whether the shape is certain).

    Certain: dot leaders (toc), an entry with two or more page numbers (index), a navigation bar or
    footer (nav). Uncertain: one page number after a capitalised title (toc) or after a comma (index).
    """
    ln = line.strip()
    if not ln or not (ln[-1].isdigit() or ln[-1] in "»«ivxlcIVXLC" or ln[0] in "©«" or len(ln) < 24):
        return None, False
    if _DOT_LEADER.search(ln[-80:]):
        return "toc", True
    if _INDEX_LINE.match(ln):
        return "index", _PAGE_REFS.search(ln[-80:]) is not None
    if furniture(ln):
        return "nav", True
    if ln[0].isupper() and _TOC_LINE.match(ln):
        return "toc", False
    return None, False


def listing_kind(line: str, neighbours: list[str]) -> str | None:
    """Whether `line` belongs to a table of contents ("toc"), an index ("index") or a navigation bar or
    footer ("nav"), or is text (None). An uncertain shape counts among two or more `neighbours` (the
    non-empty lines around it) that have a listing shape too."""
    kind, certain = line_shape(line)
    return kind if kind is None or certain else _among(kind, neighbours)


def _among(kind: str, neighbours: list[str]) -> str | None:
    """`kind` when two or more of the `neighbours` have a listing shape too, else None."""
    return kind if sum(line_shape(n)[0] is not None for n in neighbours) >= 2 else None


def _line(text: str, starts: list[int], i: int) -> str:
    """Line i (0-based) of `text`, whose lines start at `starts`, without its line break."""
    return text[starts[i]:starts[i + 1] - 1 if i + 1 < len(starts) else len(text)]


def _neighbours(text: str, starts: list[int], index: int) -> list[str]:
    """Up to _NEIGHBOURS non-empty lines before and after line `index` (looking no further than 4 times that)."""
    out: list[str] = []
    for step in (-1, 1):
        i, found = index + step, 0
        while 0 <= i < len(starts) and found < _NEIGHBOURS and abs(i - index) <= 4 * _NEIGHBOURS:
            line = _line(text, starts, i)
            if line.strip():
                out.append(line)
                found += 1
            i += step
    return out


def listings_at(text: str, starts: list[int], offsets: list[int]) -> list[str | None]:
    """For each offset (ascending or not), the listing kind of its line (`listing_kind`), each line judged once;
    `starts`: where the lines of `text` start."""
    known: dict[int, str | None] = {}
    out: list[str | None] = []
    for offset in offsets:
        i = bisect.bisect_right(starts, offset) - 1
        if i not in known:   # the neighbours are read only for a line whose shape alone does not settle it
            kind, certain = line_shape(_line(text, starts, i))
            known[i] = kind if kind is None or certain else _among(kind, _neighbours(text, starts, i))
        out.append(known[i])
    return out
