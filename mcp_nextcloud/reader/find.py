"""find: every match of a query in a document, insensitive to case, accents and whitespace.

The query and the text are folded the same way (`reader.normalize`), so the
search itself is a substring search in the folded text, like a PDF viewer's
Ctrl-F: "propriété" finds "propriétés", "new app" finds "newapp" and the
reverse, and "here" finds "there" too. Each match says whether it is a whole
word (`wholeWord`); `match="word_start"` keeps only the matches that begin a
word and `match="whole_word"` only whole words (grep uses them). Each match
is mapped back to `Document.text`, so `page(doc, offset=match.offset)` starts
at the match and every offset agrees with grep and outline.

A passage is the sentence or line around the match (widened to at least
MIN_PASSAGE characters, bounded by `context` characters in all); a match that
lies in the previous match's passage shares it (`passage` omitted in its
dict), so five close matches cost one passage.
"""
from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Literal

from .document import Document
from .normalize import _SPACING_ACCENTS, NormalizedText, normalize, normalize_query

MatchMode = Literal["substring", "word_start", "whole_word"]

DEFAULT_LIMIT = 20
DEFAULT_CONTEXT = 240  # characters a passage holds at most (match included)
MIN_PASSAGE = 60       # a passage shorter than this grows to the next sentence or line
MAX_CONTEXT = 2_000    # more would defeat the budget
MATCH_MODES = ("substring", "word_start", "whole_word")

# Where a sentence or a line ends: the passage is cut there when it can be.
_UNIT_END = re.compile(r"[.!?;:\u3002](?=\s)|\n")


@dataclass(slots=True, repr=False)
class Match:
    """One match: where it is in `Document.text` and the passage around it.

    `passage` is exactly `text[passageOffset:passageOffset + len(passage)]`.
    `shared` is true when the match lies in the previous match's passage: its
    dict then leaves the passage out (the previous one shows it).
    """

    offset: int
    length: int
    text: str
    passage: str
    passage_offset: int
    page: int
    line: int
    whole_word: bool = True
    shared: bool = False

    def __repr__(self) -> str:
        return f"Match(offset={self.offset}, length={self.length}, text={self.text!r}, page={self.page})"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"offset": self.offset, "length": self.length, "text": self.text}
        if not self.shared:
            d["passage"] = self.passage
            d["passageOffset"] = self.passage_offset
        d.update(page=self.page, line=self.line, wholeWord=self.whole_word)
        return d


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


def _cut_left(text: str, lo: int, start: int) -> int:
    """The first word start at or after `lo` (not past `start`): a passage does not open mid-word."""
    if lo <= 0:
        return 0
    for k in range(lo, start):
        if text[k].isspace():
            return k + 1
    return lo


def _cut_right(text: str, end: int, hi: int) -> int:
    """The last word end at or before `hi` (not before `end`)."""
    if hi >= len(text):
        return len(text)
    for k in range(hi - 1, end - 1, -1):
        if text[k].isspace():
            return k
    return hi


def passage_bounds(text: str, start: int, end: int, budget: int, shortest: int = MIN_PASSAGE) -> tuple[int, int]:
    """[a, b) around [start, end): the sentence or line of the match, at least `shortest`, at most `budget`.

    Unit ends (sentence punctuation, line breaks) are looked for within
    `budget` characters each side; the passage takes the nearest on each side
    and widens to the next ones while shorter than `shortest`. Without one,
    or when the unit is too long, the side is cut at whitespace so the whole
    passage stays within `budget` with the match roughly centred.
    """
    room = max(0, budget - (end - start))
    lo, hi = max(0, start - room), min(len(text), end + room)
    lefts = [lo + m.end() for m in _UNIT_END.finditer(text[lo:start])][::-1]
    rights = [end + m.end() for m in _UNIT_END.finditer(text[end:hi])]
    a = lefts[0] if lefts else (0 if lo == 0 else None)
    b = rights[0] if rights else (len(text) if hi == len(text) else None)
    li = ri = 0
    while a is not None and b is not None and b - a < shortest:
        if li + 1 < len(lefts) and (ri + 1 >= len(rights) or start - a <= b - end):
            li += 1
            a = lefts[li]
        elif ri + 1 < len(rights):
            ri += 1
            b = rights[ri]
        else:
            break
    half = room // 2
    if a is None or start - a > half:   # no unit start near enough: centre the cut on the match
        a = _cut_left(text, max(0, start - max(half, room - ((b or hi) - end))), start)
    if b is None or b - a > budget:
        b = _cut_right(text, end, min(len(text), a + max(budget, end - a)))
    while a < start and text[a].isspace():
        a += 1
    while b > end and text[b - 1].isspace():
        b -= 1
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


def starts_word(text: str, start: int) -> bool:
    """Whether a match at `start` begins a word (or is not a word character at all)."""
    return not (start > 0 and _is_word(text[start]) and _word_before(text, start))


def ends_word(text: str, start: int, end: int) -> bool:
    """Whether a match [start, end) ends a word (or its last character is not a word character)."""
    return not (end < len(text) and _is_word(_base_before(text, end, start)) and _word_after(text, end))


Span = tuple[int, int, bool]   # original [start, end) and whether it is a whole word


def _spans(nt: NormalizedText, text: str, q: str, mode: MatchMode) -> list[Span]:
    """The non-overlapping matches of `q` in text order, filtered by `mode`."""
    norm, offsets = nt.norm, nt.offsets
    n, size, length = len(q), len(nt.norm), len(text)
    spans: list[Span] = []
    pos = 0
    while True:
        k = norm.find(q, pos)
        if k < 0:
            break
        start, end = offsets[k], offsets[k + n - 1] + 1
        # Combining marks after the last letter belong to it ("cafe" + U+0301).
        while end < length and unicodedata.combining(text[end]):
            end += 1
        # A match starts at a whole folded character: "s" is not a match at the second half of "ß" ("ss").
        if k > 0 and offsets[k - 1] == start:
            pos = k + 1
            continue
        first = starts_word(text, start)
        whole = first and ends_word(text, start, end) and not (k + n < size and offsets[k + n] == offsets[k + n - 1])
        if (mode == "word_start" and not first) or (mode == "whole_word" and not whole):
            pos = k + 1
            continue
        spans.append((start, end, whole))
        pos = k + n
        # The next match must not start inside the last original character of this one.
        while pos < size and offsets[pos] < end:
            pos += 1
    return spans


def _folded_query(query: str) -> str:
    """The folded form of `query` ('*' at the end is accepted and means nothing more: find is a substring search)."""
    if not query or not query.strip():
        raise ValueError("empty query: give the words or phrase to look for")
    stripped = query.strip()
    q = normalize_query(stripped.rstrip("*") or stripped)
    if not q:
        raise ValueError(
            f"query {query!r} has nothing to search for once spaces, hyphens and accents are ignored: "
            "give at least one letter, digit or symbol"
        )
    return q


def _matches(doc: Document, nt: NormalizedText, spans: list[Span], context: int) -> list[Match]:
    """Matches with passages; one inside the previous passage shares it (the passage widens to hold it)."""
    text = doc.text
    starts = nt.line_starts(text)
    out: list[Match] = []
    owner: Match | None = None
    for start, end, whole in spans:
        m = Match(offset=start, length=end - start, text=text[start:end], passage="", passage_offset=start,
                  page=doc.page_of(start), line=bisect.bisect_right(starts, start), whole_word=whole)
        if context == 0:  # offsets only (grep picks its matches first, then makes their passages)
            out.append(m)
            continue
        if owner is not None:
            a0, b0 = owner.passage_offset, owner.passage_offset + len(owner.passage)
            if start < b0 and (end <= b0 or end - a0 <= 2 * context):
                if end > b0:  # close enough: widen the owner's passage to the end of this match's unit
                    b = min(passage_bounds(text, start, end, context)[1], a0 + 2 * context)
                    owner.passage = text[a0:max(end, b)]
                m.passage, m.passage_offset, m.shared = owner.passage, a0, True
                out.append(m)
                continue
        a, b = passage_bounds(text, start, end, context)
        m.passage, m.passage_offset = text[a:b], a
        owner = m
        out.append(m)
    _resync_shared(out)
    return out


def _resync_shared(matches: list[Match]) -> None:
    """Shared matches carry their owner's final passage (an owner may widen after they were made)."""
    owner: Match | None = None
    for m in matches:
        if not m.shared:
            owner = m
        elif owner is not None:
            m.passage, m.passage_offset = owner.passage, owner.passage_offset


def find(doc: Document, query: str, *, limit: int = DEFAULT_LIMIT, context: int = DEFAULT_CONTEXT,
         match: MatchMode = "substring") -> FindResult:
    """Every non-overlapping match of `query` in `doc` (in text order), the first `limit` with passages.

    `context` bounds a passage (characters, match included; 0: no passages,
    only where the matches are). `match` is
    "substring" (default), "word_start" or "whole_word". Raises ValueError
    for an empty query or one with nothing searchable in it (only spaces,
    hyphens or accents), and for a negative limit or context.
    """
    if limit < 0:
        raise ValueError(f"limit must be 0 or more, got {limit}")
    if context < 0:
        raise ValueError(f"context must be 0 or more, got {context}")
    if match not in MATCH_MODES:
        raise ValueError(f"match must be one of {', '.join(MATCH_MODES)}, got {match!r}")
    q = _folded_query(query)
    context = min(context, MAX_CONTEXT)
    nt = normalized(doc)
    spans = _spans(nt, doc.text, q, match)
    total = len(spans)
    result = FindResult(query=query, total=total, truncated=total > limit)
    if total == 0:
        result.hint = (
            f"no match for {query!r}: try fewer or other words (a distinctive word, a shorter phrase), "
            "or look at the outline to see how the document is organised"
        )
        return result
    result.matches = _matches(doc, nt, spans[:limit], context)
    if result.truncated:
        result.hint = (
            f"showing the first {len(result.matches)} of {total} matches: make the query more specific, "
            "or raise limit to see more"
        )
    return result
