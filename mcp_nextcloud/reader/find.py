"""find: every match of a query in a document, insensitive to case, accents and whitespace.

The query and the text are folded the same way (`reader.normalize`), so the
search itself is a substring search in the folded text, like a PDF viewer's
Ctrl-F: "propriété" finds "propriétés", "new app" finds "newapp" and the
reverse, and "here" finds "there" too. A match crosses a line break only where
the query separates words there too ("linear models" across "linear\nmodels")
or where the line ends on a hyphen after a letter ("isosur-\nface"): the break
between two lines is not a word glued by the PDF ("splot" is not in "s\nplot").
Each match says whether it is a whole word (`kind` "word") or part of one
("part"), and `in` marks one on a table-of-contents, index or navigation line
(reader/furniture.py; offset-only finds, context=0, skip that); `ranked=True`
lists whole words in the body text first, then parts of words, then those
listing lines. `match="word_start"` keeps only
the matches that begin a word and `match="whole_word"` only whole words (grep
uses them). Each match is mapped back to `Document.text`, so
`page(doc, offset=match.offset)` starts at the match and every offset agrees
with grep and outline.

A passage is the sentence or line around the match (widened to at least
MIN_PASSAGE characters, bounded by `context` characters in all); a match that
lies in the previous match's passage shares it (`passage` omitted in its
dict), so five close matches cost one passage.
"""
from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Literal

from .document import Document
from .furniture import listings_at
from .normalize import _HYPHEN_CHARS, _SPACING_ACCENTS, NormalizedText, normalize, normalize_query
from .passage import MIN_PASSAGE, passage_bounds

__all__ = ["MIN_PASSAGE", "FindResult", "Match", "MatchMode", "find", "line_of", "normalized", "passage_bounds"]

MatchMode = Literal["substring", "word_start", "whole_word"]

DEFAULT_LIMIT = 20
DEFAULT_CONTEXT = 240  # characters a passage holds at most (match included)
MAX_CONTEXT = 2_000    # more would defeat the budget
MATCH_MODES = ("substring", "word_start", "whole_word")

# Where a query separates words: a match may cross a line break of the text there.
_QUERY_GAP = re.compile(r"[\s\-\u2010\u2011]+")
_LINE_HYPHENS = _HYPHEN_CHARS + "\x02"   # pdfium marks a soft hyphen at a line end with U+0002 too


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
    listing: str | None = None   # "toc", "index" or "nav" when the match is on such a line

    def __repr__(self) -> str:
        return f"Match(offset={self.offset}, length={self.length}, text={self.text!r}, page={self.page})"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"offset": self.offset, "length": self.length, "text": self.text}
        if not self.shared:
            d["passage"] = self.passage
            d["passageOffset"] = self.passage_offset
        d.update(page=self.page, line=self.line, kind="word" if self.whole_word else "part")
        if self.listing:
            d["in"] = self.listing
        return d


@dataclass
class FindResult:
    """Matches in text order; `total` counts all of them, `truncated` when more than `limit`."""

    query: str
    matches: list[Match] = field(default_factory=list)
    total: int = 0
    truncated: bool = False
    hint: str | None = None
    kinds: dict[str, int] | None = None   # ranked finds: matches per kind ("word", "part", "toc", "index", "nav")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "query": self.query,
            "matches": [m.to_dict() for m in self.matches],
            "total": self.total,
            "truncated": self.truncated,
        }
        if self.kinds:
            d["kinds"] = self.kinds
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


def _hyphenated(text: str, newline: int) -> bool:
    """Whether the line ending at `newline` ends on a hyphen right after a letter (the word goes on)."""
    i = newline - 1
    while i > 0 and text[i] in " \t\r\u00a0":
        i -= 1
    return i > 0 and text[i] in _LINE_HYPHENS and text[i - 1].isalnum()


def _crosses_lines_well(text: str, offsets: Any, k: int, n: int, start: int, end: int, query: str) -> bool:
    """Whether every line break inside the match [start, end) (folded [k, k + n)) is one it may cross: where
    the query separates words too, or a line-end hyphenation."""
    nl = text.find("\n", start, end)
    while nl >= 0:
        if bisect.bisect_right(offsets, nl, k, k + n) - k not in _query_gaps(query) and not _hyphenated(text, nl):
            return False
        nl = text.find("\n", nl + 1, end)
    return True


def _spans(nt: NormalizedText, text: str, q: str, mode: MatchMode, query: str = "") -> list[Span]:
    """The non-overlapping matches of `q` (`query` folded) in text order, filtered by `mode`; where `query`
    separates words are the only places besides hyphenations where a match may cross a line break."""
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
        if text.find("\n", start, end) >= 0 and not _crosses_lines_well(text, offsets, k, n, start, end, query):
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


def _folded_query(query: str) -> tuple[str, str]:
    """The folded form of `query` ('*' at the end is accepted and means nothing more: find is a substring
    search), and the query as searched (stripped, without that '*'), for `_query_gaps`."""
    if not query or not query.strip():
        raise ValueError("empty query: give the words or phrase to look for")
    stripped = query.strip()
    stripped = stripped.rstrip("*") or stripped
    q = normalize_query(stripped)
    if not q:
        raise ValueError(
            f"query {query!r} has nothing to search for once spaces, hyphens and accents are ignored: "
            "give at least one letter, digit or symbol"
        )
    return q, stripped


@functools.lru_cache(maxsize=64)
def _query_gaps(query: str) -> frozenset[int]:
    """Positions in the folded `query` where it separates words (a space or a hyphen before them): asked
    only of a match that crosses a line break, so a query pays for it only then."""
    gaps, at = set(), 0
    for word in _QUERY_GAP.split(query)[:-1]:
        at += len(normalize_query(word))
        gaps.add(at)
    return frozenset(gaps)


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


def _listings(doc: Document, nt: NormalizedText, spans: list[Span]) -> list[str | None]:
    """Per span, "toc" / "index" / "nav" when its line is one of those (furniture.listing_kind), else None."""
    return listings_at(doc.text, nt.line_starts(doc.text), [start for start, _end, _whole in spans])


def _ranked(doc: Document, nt: NormalizedText, spans: list[Span]) -> tuple[list[int], list[str | None], dict[str, int]]:
    """Span indices in rank order (whole words in the body text, then parts of words, then listing lines,
    text order within each), each span's listing kind, and the count of matches of each kind."""
    listings = _listings(doc, nt, spans)
    order = sorted(range(len(spans)), key=lambda i: (listings[i] is not None, not spans[i][2], i))
    kinds: dict[str, int] = {}
    for (_s, _e, whole), listing in zip(spans, listings, strict=True):
        key = listing or ("word" if whole else "part")
        kinds[key] = kinds.get(key, 0) + 1
    return order, listings, kinds


def _ranked_matches(doc: Document, nt: NormalizedText, spans: list[Span], chosen: list[int],
                    listings: list[str | None], context: int) -> list[Match]:
    """The matches of the `chosen` spans (in rank order): passages made in text order (close ones share one),
    then put in rank order; a match whose passage's owner no longer comes right before it shows it again."""
    in_text = sorted(chosen)
    made = dict(zip(in_text, _matches(doc, nt, [spans[i] for i in in_text], context), strict=True))
    out: list[Match] = []
    for i in chosen:
        m = made[i]
        m.listing = listings[i]
        if m.shared and not (out and out[-1].passage_offset == m.passage_offset):
            m.shared = False
        out.append(m)
    return out


def find(doc: Document, query: str, *, limit: int = DEFAULT_LIMIT, context: int = DEFAULT_CONTEXT,
         match: MatchMode = "substring", ranked: bool = False, start: int = 0) -> FindResult:
    """Every non-overlapping match of `query` in `doc` at or after `start`, the first `limit` with passages.

    In text order, or with `ranked` whole words in the body text first, then
    parts of words, then table-of-contents, index and navigation lines (text
    order within each; each match says its kind). `context` bounds a passage
    (characters, match included; 0: no passages, only where the matches
    are). `match` is "substring" (default), "word_start" or "whole_word".
    Raises ValueError for an empty query or one with nothing searchable in
    it (only spaces, hyphens or accents), and for a negative limit or context.
    """
    if limit < 0:
        raise ValueError(f"limit must be 0 or more, got {limit}")
    if context < 0:
        raise ValueError(f"context must be 0 or more, got {context}")
    if match not in MATCH_MODES:
        raise ValueError(f"match must be one of {', '.join(MATCH_MODES)}, got {match!r}")
    q, searched = _folded_query(query)
    context = min(context, MAX_CONTEXT)
    nt = normalized(doc)
    spans = _spans(nt, doc.text, q, match, searched)
    if start:
        spans = spans[bisect.bisect_left(spans, (start, 0, False)):]
    total = len(spans)
    result = FindResult(query=query, total=total, truncated=total > limit)
    if total == 0:
        result.hint = (
            f"no match for {query!r}: try fewer or other words (a distinctive word, a shorter phrase), "
            "or look at the outline to see how the document is organised"
        )
        return result
    if ranked:
        order, listings, result.kinds = _ranked(doc, nt, spans)
        result.matches = _ranked_matches(doc, nt, spans, order[:limit], listings, context)
    else:
        result.matches = _matches(doc, nt, spans[:limit], context)
        if context:   # an answer someone reads says which matches are on listing lines (grep's scans need not)
            for m, listing in zip(result.matches, _listings(doc, nt, spans[:limit]), strict=True):
                m.listing = listing
    if result.truncated:
        result.hint = (
            f"showing the {'best' if ranked else 'first'} {len(result.matches)} of {total} matches: make the "
            "query more specific, or raise limit to see more"
        )
    return result
