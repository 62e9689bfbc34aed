"""find: every match of a query in a document, insensitive to case, accents and whitespace.

The query and the text are folded the same way (`reader.normalize`), so the
search itself is a substring search in the folded text; each match is mapped
back to `Document.text`, so `page(doc, offset=match.offset)` starts at the
match and every offset agrees with grep and outline.

Matches are whole words, like the index's: a match must start at a word
boundary in the original text and end at one, unless the query ends with `*`
(a prefix query: "install*" finds "Installation"). Whitespace inside the
match does not matter, which is what makes "new app" find "newapp" and the
reverse; without the boundaries, "here" would also find "The reader" and
"new app" would find "renew applications".
"""
from __future__ import annotations

import bisect
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from .document import Document
from .normalize import _SPACING_ACCENTS, NormalizedText, normalize, normalize_query

DEFAULT_LIMIT = 20
DEFAULT_CONTEXT = 160
MAX_CONTEXT = 2_000  # characters each side of a match; more would defeat the budget


@dataclass
class Match:
    """One match: where it is in `Document.text` and the passage around it.

    `passage` is exactly `text[passageOffset:passageOffset + len(passage)]`,
    cut at whitespace where possible.
    """

    offset: int
    length: int
    text: str
    passage: str
    passage_offset: int
    page: int
    line: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "length": self.length,
            "text": self.text,
            "passage": self.passage,
            "passageOffset": self.passage_offset,
            "page": self.page,
            "line": self.line,
        }


@dataclass
class FindResult:
    """Matches in text order; `total` counts all of them, `truncated` when more than `limit`."""

    query: str
    matches: list[Match] = field(default_factory=list)
    total: int = 0
    truncated: bool = False
    hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "query": self.query,
            "matches": [m.to_dict() for m in self.matches],
            "total": self.total,
            "truncated": self.truncated,
        }
        if self.hint:
            d["hint"] = self.hint
        return d


def normalized(doc: Document) -> NormalizedText:
    """The document's folded form: the cached one when it fits the text, else built once and stored.

    The cache may hold a NormalizedText or its `to_bytes()` form (as the
    indexer stores it); a damaged or stale one is rebuilt.
    """
    nt = doc._normalized
    if isinstance(nt, (bytes, bytearray, memoryview)):
        try:
            nt = NormalizedText.from_bytes(bytes(nt))
        except ValueError:
            nt = None
        doc._normalized = nt
    if not isinstance(nt, NormalizedText) or nt.length != len(doc.text):
        nt = normalize(doc.text)
        doc._normalized = nt
    return nt


def line_of(doc: Document, offset: int) -> int:
    """1-based line number of `offset` in `doc.text` (lines end at '\\n'); bisect on cached line starts."""
    return bisect.bisect_right(normalized(doc).line_starts(doc.text), offset)


def _passage(text: str, start: int, end: int, context: int) -> tuple[int, int]:
    """[a, b) around [start, end): `context` chars each side, trimmed to whole words where possible."""
    a = max(0, start - context)
    b = min(len(text), end + context)
    if a > 0:
        # Start after the first whitespace, so the passage does not open mid-word.
        for k in range(a, start):
            if text[k].isspace():
                a = k + 1
                break
    if b < len(text):
        for k in range(b - 1, end - 1, -1):
            if text[k].isspace():
                b = k
                break
    return a, b


def _is_word(ch: str) -> bool:
    return ch.isalnum() or unicodedata.combining(ch) > 0


def _base_before(text: str, end: int, start: int) -> str:
    """The last character before `end` that is not a combining mark (the letter a mark belongs to)."""
    k = end - 1
    while k > start and unicodedata.combining(text[k]):
        k -= 1
    return text[k]


def _word_before(text: str, i: int) -> bool:
    """Whether text[i - 1] belongs to a word (a spacing accent inside a word, as in "D`es", counts)."""
    k = i - 1
    while k >= 0 and unicodedata.combining(text[k]):
        k -= 1  # marks belong to the letter before them; a mark with no letter belongs to nothing
    if k < 0:
        return False
    ch = text[k]
    if ch.isalnum():
        return True
    return ch in _SPACING_ACCENTS and k >= 1 and text[k - 1].isalnum()


def _word_after(text: str, i: int) -> bool:
    """Whether text[i] belongs to a word (a spacing accent followed by a letter counts)."""
    ch = text[i]
    if _is_word(ch):
        return True
    return ch in _SPACING_ACCENTS and i + 1 < len(text) and _is_word(text[i + 1])


def _spans(nt: NormalizedText, text: str, q: str, prefix: bool) -> list[tuple[int, int]]:
    """Original [start, end) of the non-overlapping whole-word matches of `q`, in order."""
    norm, offsets = nt.norm, nt.offsets
    n, size, length = len(q), len(nt.norm), len(text)
    spans: list[tuple[int, int]] = []
    pos = 0
    while True:
        k = norm.find(q, pos)
        if k < 0:
            break
        start, end = offsets[k], offsets[k + n - 1] + 1
        # Combining marks after the last letter belong to it ("cafe" + U+0301).
        while end < length and unicodedata.combining(text[end]):
            end += 1
        # A match covers whole folded characters: "s" is not a match inside "ß" ("ss").
        if (k > 0 and offsets[k - 1] == start) or (
                not prefix and k + n < size and offsets[k + n] == offsets[k + n - 1]):
            pos = k + 1
            continue
        if (start > 0 and _is_word(text[start]) and _word_before(text, start)) or (
                not prefix and end < length and _is_word(_base_before(text, end, start)) and _word_after(text, end)):
            pos = k + 1  # inside a longer word: not a match here
            continue
        spans.append((start, end))
        pos = k + n
        # The next match must not start inside the last original character of this one.
        while pos < size and offsets[pos] < end:
            pos += 1
    return spans


def find(doc: Document, query: str, *, limit: int = DEFAULT_LIMIT, context: int = DEFAULT_CONTEXT) -> FindResult:
    """Every non-overlapping match of `query` in `doc`, the first `limit` with passages.

    Raises ValueError for an empty query or one with nothing searchable in it
    (only spaces, hyphens or accents), and for a negative limit or context.
    """
    if not query or not query.strip():
        raise ValueError("empty query: give the words or phrase to look for")
    if limit < 0:
        raise ValueError(f"limit must be 0 or more, got {limit}")
    if context < 0:
        raise ValueError(f"context must be 0 or more, got {context}")
    context = min(context, MAX_CONTEXT)
    stripped = query.strip()
    prefix = stripped.endswith("*")
    q = normalize_query(stripped.rstrip("*") if prefix else stripped)
    if not q:
        raise ValueError(
            f"query {query!r} has nothing to search for once spaces, hyphens and accents are ignored: "
            "give at least one letter, digit or symbol"
        )
    nt = normalized(doc)
    text = doc.text
    spans = _spans(nt, text, q, prefix)
    total = len(spans)
    result = FindResult(query=query, total=total, truncated=total > limit)
    if total == 0:
        result.hint = (
            f"no match for {query!r}: try fewer or other words (a distinctive word, a shorter phrase), "
            "or look at the outline to see how the document is organised"
        )
        return result
    starts = nt.line_starts(text)
    for start, end in spans[:limit]:
        a, b = _passage(text, start, end, context)
        result.matches.append(
            Match(
                offset=start,
                length=end - start,
                text=text[start:end],
                passage=text[a:b],
                passage_offset=a,
                page=doc.page_of(start),
                line=bisect.bisect_right(starts, start),
            )
        )
    if result.truncated:
        result.hint = (
            f"showing the first {len(result.matches)} of {total} matches: make the query more specific, "
            "or raise limit to see more"
        )
    return result
