"""Cut a document's text into FTS rows (pages, or ~3k-character pieces cut at whitespace).

Chunk rows are what make grep passages cheap: a hit names the chunk, and
`reader.find` then runs on that chunk's few thousand characters instead of a
whole document. Page boundaries are preferred cut points, so a chunk rarely
straddles two pages.
"""
from __future__ import annotations

import bisect
from typing import NamedTuple

from mcp_nextcloud.indexer.store.schema import MAX_CHUNKS

TARGET = 3000
MIN_CHUNK = 1500
MAX_CHUNK = 4000


class Chunk(NamedTuple):
    seq: int
    start: int      # offset of the chunk in Document.text
    line: int       # 1-based line number of `start`
    text: str


def _cut(text: str, start: int, pages: list[int], target: int, lo: int, hi: int) -> int:
    """End offset of the chunk starting at `start` (exclusive)."""
    n = len(text)
    if n - start <= hi:
        return n
    # A page boundary within [start+lo, start+hi] closest to the target wins.
    i = bisect.bisect_left(pages, start + lo)
    best = None
    while i < len(pages) and pages[i] <= start + hi:
        if best is None or abs(pages[i] - start - target) < abs(best - start - target):
            best = pages[i]
        i += 1
    if best is not None:
        return best
    # Otherwise the last line break, then the last space, before the limit.
    for sep in ("\n", " ", "\t"):
        j = text.rfind(sep, start + lo, start + hi)
        if j != -1:
            return j + 1
    return start + hi


def chunk_text(text: str, pages: list[int] | None = None) -> list[Chunk]:
    """Split `text` into chunks covering it exactly, in order (at most MAX_CHUNKS)."""
    if not text:
        return [Chunk(0, 0, 1, "")]
    # Very long texts get bigger chunks so the rowid space (16 bits) suffices.
    scale = max(1.0, len(text) / (TARGET * (MAX_CHUNKS - 16)))
    target, lo, hi = int(TARGET * scale), int(MIN_CHUNK * scale), int(MAX_CHUNK * scale)
    pages = sorted(p for p in (pages or []) if 0 < p < len(text))
    out: list[Chunk] = []
    start, line = 0, 1
    while start < len(text):
        end = _cut(text, start, pages, target, lo, hi)
        piece = text[start:end]
        out.append(Chunk(len(out), start, line, piece))
        line += piece.count("\n")
        start = end
    return out
