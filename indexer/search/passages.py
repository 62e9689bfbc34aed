"""Passages for grep hits: `reader.find` on one chunk, matches close together merged into one passage.

A passage is an exact slice of `Document.text` (`passage ==
text[passageOffset:passageOffset + len(passage)]`) carrying every match it
shows, so three matches within a line give one passage, not three copies of
the same two lines. A phrase query shows where the phrase (or a glued
variant) stands; an all-words query shows the places where its words are
closest together.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reader.document import Document
from reader.find import Match, find

from indexer.search.query import ParsedQuery

PASSAGES_PER_FILE = 3
CONTEXT = 120                # characters of context each side of a match
MAX_MATCHES = 9              # matches looked at per chunk for the passages shown
MAX_PASSAGE = 700            # a merged passage stops growing here: a new one starts
WORD_LIMIT = 200             # matches of one word read in a chunk when looking for the closest cluster


@dataclass
class Passage:
    """One place in a file: the first match (`offset`/`length`/`text`, page, line) and its context.

    `matches` lists every match the passage shows (the first included); all
    offsets index Document.text, so each is one files_read accepts.
    """

    offset: int
    length: int
    text: str
    passage: str
    passageOffset: int
    page: int
    line: int
    matches: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"offset": self.offset, "length": self.length, "text": self.text, "passage": self.passage,
                "passageOffset": self.passageOffset, "page": self.page, "line": self.line,
                "matches": self.matches}


@dataclass
class ChunkPassages:
    """The passages of one chunk, and whether the chunk holds matches that are not shown."""

    passages: list[Passage]
    found: int               # matches found (0: the query's form was not found in this text)
    more: bool               # matches beyond those shown


def _find_any(sub: Document, pq: ParsedQuery, words: bool = True):
    """reader.find with the query as typed, else its bare words, else the variant that hit in FTS.

    Punctuation is literal for reader.find but not for the word index, so a
    query like '"(AND) OR:' can hit in FTS and still need its bare words here.
    """
    tried = set()
    res = None
    # Last resort: the longest single word, so a hit always shows where it is.
    longest = sorted(pq.tokens, key=len, reverse=True)[:1] if words else []
    # reader.find matches whole words; a prefix query ("config*") must say so to it too.
    star = "*" if pq.prefix else ""
    for q in [pq.find_text, " ".join(pq.tokens), *(" ".join(v) for v in pq.variants), *longest]:
        if q in tried:
            continue
        tried.add(q)
        try:
            res = find(sub, q + star, limit=MAX_MATCHES, context=CONTEXT)
        except ValueError:  # nothing searchable in this form (only punctuation)
            continue
        if res.total:
            return res
    return res if res is not None else find(sub, " ".join(pq.tokens) + star, limit=MAX_MATCHES, context=CONTEXT)


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


def _word_matches(sub: Document, pq: ParsedQuery) -> tuple[list[Match], bool]:
    """Matches of each word, taken from the places where all of them are closest; (matches, more)."""
    per_word = []
    for q in pq.word_queries():
        try:
            per_word.append(find(sub, q, limit=WORD_LIMIT, context=CONTEXT).matches)
        except ValueError:  # a word with nothing searchable for reader.find
            per_word.append([])
    present = [ms for ms in per_word if ms]
    total = sum(len(ms) for ms in per_word)
    if not present:
        return [], False
    groups = _closest(present, PASSAGES_PER_FILE)
    if groups:
        chosen = [m for g in groups for m in g]
    else:  # the words are not all in this text: show where each one is
        chosen = [ms[0] for ms in present]
    # A word typed twice ("the the") finds the same match twice: show it once.
    chosen = sorted({(m.offset, m.length): m for m in chosen}.values(), key=lambda m: m.offset)[:MAX_MATCHES]
    return chosen, total > len(chosen)


def _merge(matches: list[Match], text: str, start: int, line: int, page_doc: Document) -> list[Passage]:
    """Matches in text order -> passages; a match whose context overlaps the previous passage joins it."""
    out: list[Passage] = []
    end = -1
    for m in sorted(matches, key=lambda m: m.offset):
        a, b = m.passage_offset, m.passage_offset + len(m.passage)
        item = {"offset": start + m.offset, "length": m.length, "text": m.text}
        if out and a <= end and max(b, end) - (out[-1].passageOffset - start) <= MAX_PASSAGE:
            last = out[-1]
            end = max(end, b)
            last.passage = text[last.passageOffset - start:end]
            last.matches.append(item)
            continue
        out.append(Passage(offset=start + m.offset, length=m.length, text=m.text, passage=m.passage,
                           passageOffset=start + a, page=page_doc.page_of(start + m.offset),
                           line=line + m.line - 1, matches=[item]))
        end = b
    return out


def chunk_passages(pq: ParsedQuery, start: int, line: int, text: str, pages: list[int], kind: str | None,
                   *, words: bool, fallback: bool = True) -> ChunkPassages:
    """Passages of the chunk text starting at Document offset `start` (on 1-based `line`).

    words=True: the query's words apart, where they are closest (an all-words
    hit). words=False: the phrase or a glued variant; with `fallback`, the
    longest word when neither is in this text, so a hit always shows a place.
    """
    sub = Document(text=text, kind=kind or "text")
    page_doc = Document(text="", kind=kind or "text", pages=pages or [0])
    if words:
        matches, more = _word_matches(sub, pq)
        found = len(matches)
    else:
        res = _find_any(sub, pq, fallback)
        matches, found = res.matches, res.total
        more = False
    passages = _merge(matches, text, start, line, page_doc)
    if len(passages) > PASSAGES_PER_FILE:
        more = True
        passages = passages[:PASSAGES_PER_FILE]
    shown = sum(len(p.matches) for p in passages)
    return ChunkPassages(passages=passages, found=found, more=more or found > shown)
