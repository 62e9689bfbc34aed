"""Lines that are a page's furniture, not its text: navigation bars, footers, tables of contents and indexes.

Generated manuals open every page on a navigation bar ("Download the ebook", "Zurück", "Weiter"), end it on
a footer ("© Copyright", "Next topic") and list sections with dot leaders ("Functions . . . . 45") or page
lists ("mount, 12, 48-50"). The passage chooser of a meaning hit (answer.py) never picks such text while
better exists, and a word hit's passage (passages.py) does not reach back into it for context: the passage
of "Datensicherung" on the handbook's page is its heading and first sentence, not the navigation bar above.
"""
from __future__ import annotations

from mcp_nextcloud.reader.furniture import furniture, numbered_heading

__all__ = ["after_furniture", "furniture", "numbered_heading"]   # the line rule is owned by reader/furniture.py


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
