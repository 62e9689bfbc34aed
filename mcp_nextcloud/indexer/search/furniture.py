"""Lines that are a page's furniture, not its text: navigation bars, footers, tables of contents and indexes.

Generated manuals open every page on a navigation bar ("Download the ebook", "Zurück", "Weiter"), end it on
a footer ("© Copyright", "Next topic") and list sections with dot leaders ("Functions . . . . 45") or page
lists ("mount, 12, 48-50"). The passage chooser of a meaning hit (answer.py) never picks such text while
better exists, and a word hit's passage (passages.py) does not reach back into it for context: the passage
of "Datensicherung" on the handbook's page is its heading and first sentence, not the navigation bar above.
"""
from __future__ import annotations

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


def after_furniture(text: str, at: int, reach: int) -> int:
    """Where a passage for the match at `at` may start reaching back from: 0, or the start of the line after
    the last furniture line that ends within `reach` characters before the match's own line."""
    line_start = text.rfind("\n", 0, at) + 1
    floor = 0
    pos = max(0, line_start - reach)
    while pos < line_start:
        end = text.find("\n", pos, line_start)
        if end == -1:
            break
        if furniture(text[pos:end]):
            floor = end + 1
        pos = end + 1
    return floor
