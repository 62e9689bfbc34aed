"""page: a budgeted slice of a document's text, cut where a reader would cut it.

A slice never splits a grapheme (a base character and its combining marks, a
CRLF, a surrogate pair, a ZWJ emoji sequence, a regional-indicator flag) and
prefers to end at a line boundary, then at a space, within the last fifth of
the budget. Following `nextOffset` from 0 covers the text exactly once.
"""
from __future__ import annotations

import unicodedata
from typing import Any, NamedTuple

from .document import Document

DEFAULT_PAGE_CHARS = 8_000
"""Characters returned when no limit is given: about 2,000 tokens, a readable chunk."""
MAX_PAGE_CHARS = 40_000
"""Largest slice; a larger limit is clamped (and the slice says so)."""
_PREFER_WINDOW = 0.2  # look for a line end / space in the last 20% of the budget

_ZWJ = "\u200d"


class Slice(NamedTuple):
    """`content` = `text[offset:offset + returned]`; `nextOffset` is None at the end of the text (immutable)."""

    content: str
    offset: int
    returned: int
    total: int
    truncated: bool
    next_offset: int | None
    page: int
    page_unit: str = "page"
    limit: int = DEFAULT_PAGE_CHARS
    clamped: bool = False
    hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "content": self.content,
            "offset": self.offset,
            "returned": self.returned,
            "total": self.total,
            "truncated": self.truncated,
            "nextOffset": self.next_offset,
            "page": self.page,
            "pageUnit": self.page_unit,
        }
        if self.clamped:
            d["clamped"] = True
            d["limit"] = self.limit
        if self.hint:
            d["hint"] = self.hint
        return d


def _is_extend(ch: str) -> bool:
    """Characters that attach to the one before (Grapheme_Cluster_Break Extend/SpacingMark, roughly)."""
    o = ord(ch)
    if 0xFE00 <= o <= 0xFE0F or 0x1F3FB <= o <= 0x1F3FF or 0xE0020 <= o <= 0xE007F or o == 0x200D:
        return True  # variation selectors, emoji skin tones, emoji tag sequences, ZWJ
    return unicodedata.category(ch) in ("Mn", "Me", "Mc")


def _is_regional(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def is_grapheme_boundary(text: str, i: int) -> bool:
    """True when cutting `text` at index `i` splits no grapheme cluster (a simplified UAX #29)."""
    if i <= 0 or i >= len(text):
        return True
    before, after = text[i - 1], text[i]
    if before == "\r" and after == "\n":
        return False
    if "\ud800" <= before <= "\udbff" and "\udc00" <= after <= "\udfff":
        return False  # a surrogate pair (only in text decoded with surrogatepass)
    if _is_extend(after):
        return False
    if before == _ZWJ:
        return False  # ZWJ emoji sequence: the ZWJ joins the next pictograph
    if _is_regional(before) and _is_regional(after):
        # Flags are pairs of regional indicators: cut only after an even count.
        k = i - 1
        while k >= 0 and _is_regional(text[k]):
            k -= 1
        return (i - 1 - k) % 2 == 0
    return True


def _cut(text: str, offset: int, end: int, limit: int) -> int:
    """Where to end a slice that cannot take everything: a line end, else a space, else `end`."""
    lo = max(offset + 1, end - int(limit * _PREFER_WINDOW))
    k = text.rfind("\n", lo, end)
    if k >= 0:
        return k + 1
    for k in range(end - 1, lo - 1, -1):
        if text[k].isspace():
            return k + 1
    return end


def page(doc: Document, offset: int = 0, limit: int = DEFAULT_PAGE_CHARS) -> Slice:
    """At most `limit` characters of `doc.text` from `offset`, cut at a clean boundary.

    Raises ValueError for a negative offset, an offset beyond the end (the
    message names the total length) or a limit below 1.
    """
    text = doc.text
    total = len(text)
    if offset < 0:
        raise ValueError(f"offset must be 0 or more, got {offset}")
    if offset > total:
        raise ValueError(
            f"offset {offset} is beyond the end of the text ({total} characters): use an offset below {total}"
        )
    if limit < 1:
        raise ValueError(f"limit must be at least 1 character, got {limit}")
    clamped = limit > MAX_PAGE_CHARS
    limit = min(limit, MAX_PAGE_CHARS)
    # An offset inside a grapheme (after "e", before its combining accent) starts
    # at that grapheme instead, so a slice never opens with a dangling mark; the
    # Slice reports the offset actually used.
    while offset > 0 and not is_grapheme_boundary(text, offset):
        offset -= 1
    end = offset + limit
    if end >= total:
        end = total
    else:
        end = _cut(text, offset, end, limit)
        # Step back to a grapheme boundary; a single cluster longer than the
        # budget is returned whole rather than split (the slice must progress).
        k = end
        while k > offset and not is_grapheme_boundary(text, k):
            k -= 1
        if k == offset:
            k = end
            while k < total and not is_grapheme_boundary(text, k):
                k += 1
        end = k
    next_offset = end if end < total else None
    hints = []
    if clamped:
        hints.append(f"limit clamped to the maximum of {MAX_PAGE_CHARS} characters")
    if next_offset is not None:
        left = total - end
        hints.append(
            f"{left} more characters: continue with offset={next_offset}; to reach a topic directly, "
            "use find with a phrase or the outline instead of paging through"
        )
    elif offset > 0 or total > 0:
        hints.append("end of the text")
    return Slice(
        content=text[offset:end],
        offset=offset,
        returned=end - offset,
        total=total,
        truncated=next_offset is not None,
        next_offset=next_offset,
        page=doc.page_of(offset),
        page_unit=doc.page_unit,
        limit=limit,
        clamped=clamped,
        hint="; ".join(hints) or None,
    )
