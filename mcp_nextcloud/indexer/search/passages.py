"""Passages for grep hits: `reader.find` on one chunk, matches close together merged into one passage.

A passage is an exact slice of `Document.text` (`passage ==
text[passageOffset:passageOffset + len(passage)]`): the line or sentence
around the match (at most CONTEXT characters) carrying every match it shows,
so three matches within a line give one passage. A phrase tier shows where
the phrase (or a glued variant) stands; an all-words tier shows the places
where its words are closest together. Matches obey the tier's mode: at the
start of a word, or whole words only (never "here" inside "there").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from mcp_nextcloud.reader.document import Document
from mcp_nextcloud.reader.find import FindResult, Match, MatchMode, find, passage_bounds

from mcp_nextcloud.indexer.search.furniture import after_furniture
from mcp_nextcloud.indexer.search.query import Mode, ParsedQuery, QTerm, Tier


PASSAGES_PER_FILE = 1        # by default: the best one; `passages` asks for more (up to MAX_PASSAGES)
CONTEXT = 90                 # characters a passage holds at most (a line or a sentence)
SHORTEST = 40                # a sentence shorter than this takes the next one too
MAX_MATCHES = 9              # matches looked at per chunk for the passages shown
MAX_PASSAGE = 2 * CONTEXT    # a merged passage stops growing here: a new one starts
WORD_LIMIT = 200             # matches of one word read in a chunk when looking for the closest cluster


@dataclass(repr=False)
class Passage:
    """One place in a file: the passage text, where it starts, its page and line, and the matches it shows.

    `matches` lists every match the passage shows as {offset, length, text}; all
    offsets index Document.text, so each is one files_read accepts. In the
    answer (`to_dict`) a match is [offset, length]: its text is in the passage.
    """

    offset: int
    length: int
    text: str
    passage: str
    passageOffset: int
    page: int
    line: int
    matches: list[dict[str, Any]] = field(default_factory=list)
    ocr: float | None = None   # the passage is OCR text (a scanned page): the engine's confidence, 0..1

    def __repr__(self) -> str:
        return f"Passage(offset={self.offset}, page={self.page}, line={self.line}, passage={self.passage!r})"

    def to_dict(self) -> dict[str, Any]:
        d = {"passage": self.passage, "passageOffset": self.passageOffset, "page": self.page, "line": self.line,
             "matches": [[m["offset"], m["length"]] for m in self.matches]}
        if self.ocr is not None:
            d["ocr"] = {"confidence": self.ocr}
        return d


class ChunkPassages(NamedTuple):
    """The passages of one chunk, and whether the chunk holds matches that are not shown."""

    passages: list[Passage]
    found: int               # matches found (0: the query's form was not found in this text)
    more: bool               # matches beyond those shown


def _find(sub: Document, query: str, mode: MatchMode, limit: int = MAX_MATCHES,
          context: int = CONTEXT) -> FindResult | None:
    try:
        return find(sub, query, limit=limit, context=context, match=mode)
    except ValueError:  # nothing searchable in this form (only punctuation)
        return None


def _phrase_matches(sub: Document, pq: ParsedQuery, tier: Tier, fallback: bool) -> tuple[list[Match], int]:
    """The phrase as typed, else its bare words, else a glued variant; (matches, total found).

    With `fallback`, the longest word alone when none is in this text, so a hit always shows a place.
    """
    forms = [pq.phrase_text, " ".join(pq.tokens), *(" ".join(v) for v in pq.variants)]
    if fallback:
        forms += sorted(pq.tokens, key=len, reverse=True)[:1]
    tried: set[str] = set()
    for q in forms:
        if q in tried:
            continue
        tried.add(q)
        res = _find(sub, q, tier.mode, context=0)   # passages are made by _merge, after the choice
        if res is not None and res.total:
            return res.matches, res.total
    return [], 0


def _term_matches(sub: Document, term: QTerm, mode: Mode, limit: int, forms: bool = False) -> list[Match]:
    """Matches of one term: as typed (punctuation is literal for find), else its tokens as a phrase;
    in a word-forms tier, else its other forms (every one found, as whole words)."""
    for q in (term.text, " ".join(term.tokens)):
        res = _find(sub, q, term.find_mode(mode), limit, context=0)  # passages come after the choice
        if res is not None and res.total:
            return res.matches
    found: list[Match] = []
    for w in term.forms if forms else []:
        res = _find(sub, w, "whole_word", limit, context=0)
        found += res.matches if res is not None else []
    return found


def _closest(per_word: list[list[Match]], clusters: int) -> list[list[Match]]:
    """Up to `clusters` disjoint groups holding one match of every word, smallest span first.

    Minimum window over the matches of all words in text order (two
    pointers); after one is taken its matches are removed and the next is
    searched, so the groups shown are the places where the words are closest.
    """
    n_words = len(per_word)
    pool = sorted((m.offset, w, m) for w, ms in enumerate(per_word) for m in ms)
    out: list[list[Match]] = []
    while len(out) < clusters and pool:
        best: tuple[int, int, int] | None = None
        counts = [0] * n_words
        have = 0
        lo = 0
        for hi, (off, w, m) in enumerate(pool):
            counts[w] += 1
            have += counts[w] == 1
            while have == n_words:
                span = off + m.length - pool[lo][0]
                if best is None or span < best[0]:
                    best = (span, lo, hi)
                lw = pool[lo][1]
                counts[lw] -= 1
                have -= counts[lw] == 0
                lo += 1
        if best is None:
            break
        _, a, b = best
        out.append([m for _, _, m in pool[a:b + 1]])
        pool = pool[:a] + pool[b + 1:]
    return out


def _word_matches(sub: Document, pq: ParsedQuery, tier: Tier, clusters: int) -> tuple[list[Match], bool]:
    """Matches of each group (any of its terms), from the places where all groups are closest; (matches, more)."""
    per_group = []
    distinct = {tuple((t.text.lower(), t.exact) for t in g): g for g in pq.groups}.values()  # "the the": once
    limit = max(20, WORD_LIMIT // len(distinct))   # many words: fewer matches of each (cost grows with both)
    for g in distinct:
        found = [m for t in g for m in _term_matches(sub, t, tier.mode, limit, tier.forms)]
        per_group.append(sorted(found, key=lambda m: m.offset))
    present = [ms for ms in per_group if ms]
    total = sum(len(ms) for ms in per_group)
    if not present:
        return [], False
    groups = _closest(present, clusters)
    if groups:
        chosen = [m for g in groups for m in g]
    else:  # the words are not all in this text: show where each one is
        chosen = [ms[0] for ms in present]
    # A word typed twice ("the the") finds the same match twice: show it once.
    chosen = sorted({(m.offset, m.length): m for m in chosen}.values(), key=lambda m: m.offset)[:MAX_MATCHES]
    return chosen, total > len(chosen)


def _bounds(text: str, m: Match) -> tuple[int, int]:
    """The passage around a match: its sentence or line (reader.find.passage_bounds), reaching back no further
    than the page's furniture (furniture.py: a navigation bar above a heading); a passage that furniture left
    short (a heading) takes the text after it, up to CONTEXT characters cut at a space."""
    floor = after_furniture(text, m.offset, CONTEXT)
    a, b = passage_bounds(text[floor:], m.offset - floor, m.offset + m.length - floor, CONTEXT, SHORTEST)
    a, b = a + floor, b + floor
    if floor and b - a < SHORTEST and b < len(text):
        hi = min(len(text), a + CONTEXT)
        cut = text.rfind(" ", b, hi) if hi < len(text) else hi
        b = max(b, cut)
    return a, b


def _merge(matches: list[Match], text: str, start: int, line: int, page_doc: Document) -> list[Passage]:
    """Matches in text order -> passages; a match whose context overlaps the previous passage joins it."""
    out: list[Passage] = []
    end = -1
    for m in sorted(matches, key=lambda m: m.offset):
        a, b = _bounds(text, m)
        item = {"offset": start + m.offset, "length": m.length, "text": m.text}
        if out and a <= end and max(b, end) - (out[-1].passageOffset - start) <= MAX_PASSAGE:
            last = out[-1]
            end = max(end, b)
            last.passage = text[last.passageOffset - start:end]
            last.matches.append(item)
            continue
        out.append(Passage(offset=start + m.offset, length=m.length, text=m.text, passage=text[a:b],
                           passageOffset=start + a, page=page_doc.page_of(start + m.offset),
                           line=line + m.line - 1, matches=[item]))
        end = b
    return out


def chunk_passages(pq: ParsedQuery, tier: Tier, start: int, line: int, text: str, pages: list[int],
                   kind: str | None, per_file: int = PASSAGES_PER_FILE, *, fallback: bool = True) -> ChunkPassages:
    """Up to `per_file` passages of the chunk text starting at Document offset `start` (on 1-based `line`).

    A phrase tier shows the phrase or a glued variant (with `fallback`, the
    longest word when neither is in this text, so a hit always shows a
    place); another tier shows the query's words where they are closest.
    """
    sub = Document(text=text, kind=kind or "text")
    page_doc = Document(text="", kind=kind or "text", pages=pages or [0])
    if tier.phrase and pq.plain:
        matches, found = _phrase_matches(sub, pq, tier, fallback)
        more = False
    else:
        matches, more = _word_matches(sub, pq, tier, per_file)
        found = len(matches)
    passages = _merge(matches, text, start, line, page_doc)
    if len(passages) > per_file:
        more = True
        passages = passages[:per_file]
    shown = sum(len(p.matches) for p in passages)
    return ChunkPassages(passages=passages, found=found, more=more or found > shown)
