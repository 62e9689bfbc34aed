"""The passage of a meaning hit: the place in the file that answers the question, not the head of a window.

Meaning finds a file by its best embedded windows (semantic.py: a window heads one chunk in three), but
the best window is often a table of contents, an index or a navigation bar (they name every subject),
and the answer lies further on. So, for each meaning hit:

1. its best windows (semantic.WINDOWS_PER_FILE, by cosine) are re-scored: a window whose text reads as a
   table of contents, an index or dot-leader lines (`looks_like_toc`) loses TOC_PENALTY, so it is chosen
   only when no better text was embedded;
2. in the region that window stands for (its chunk and the chunks up to the next embedded one), the spans
   (paragraphs, cut at SPAN characters) are scored by the question's words (folded, at word starts, rarer
   and longer words weighing more; identifiers such as "JSON" or "Samba" bridge languages): the best span
   that is not table-of-contents text is the passage;
3. with no word of the question in the region (a question in another language), the passage is the first
   span of the window that is not table-of-contents text.

Every passage is an exact slice of Document.text at an offset files_read accepts.
"""
from __future__ import annotations

import re
import zlib
from typing import Any, NamedTuple

from mcp_nextcloud.indexer.search.passages import MAX_PASSAGE, Passage
from mcp_nextcloud.indexer.store.schema import CHUNK_BITS
from mcp_nextcloud.reader.document import Document
from mcp_nextcloud.reader.normalize import fold_words

TOC_PENALTY = 0.03       # cosine a table-of-contents window loses (e5 cosines of related text differ by ~0.01-0.05)
REGION_CHUNKS = 3        # a window stands for its chunk and the next two (embed_windows.CHUNKS_PER_WINDOW)
SPAN = 600               # characters a candidate span holds at most
MIN_WORD = 3             # shorter question words are not looked for (articles, "le", "in")

_DOT_LEADER = re.compile(r"(?:\.\s?){4,}\s*[\divxlc]+\s*$|…\s*\d+\s*$", re.IGNORECASE)
_PAGE_REFS = re.compile(r"[\w)]\s*,?\s+\d{1,4}(?:\s*[,–-]\s*\d{1,4})+\s*$")
_NUMBERED = re.compile(r"^\s*(?:\d+\.)+\d*\.?\s+\S|^\s*[A-Z]\.\d+(?:\.\d+)*\.?\s+\S")
_WORD = re.compile(r"\w+")


def looks_like_toc(text: str) -> bool:
    """Whether `text` reads as a table of contents, a back-of-book index or a list of section links.

    Counted per non-empty line: dot leaders ending in a page number ("Functions . . . . 45"), index entries
    ending in page lists ("mount, 12, 48-50"), short numbered headings ("5.2.1. Firewall"). Two lines in
    five of those, or three short lines in four, make a table of contents.
    """
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) < 3:
        return bool(lines) and all(_DOT_LEADER.search(ln) for ln in lines)
    marked = sum(1 for ln in lines if _DOT_LEADER.search(ln) or _PAGE_REFS.search(ln)
                 or (_NUMBERED.search(ln) and len(ln) < 90))
    short = sum(1 for ln in lines if len(ln) < 40)
    return marked * 5 >= len(lines) * 2 or (short * 4 >= len(lines) * 3 and len(lines) >= 6)


class Span(NamedTuple):
    start: int       # offset in the region text
    end: int


def _spans(text: str, start: int) -> list[Span]:
    """Paragraph-like spans of text[start:], each at most SPAN characters (cut at a line end or a space)."""
    out: list[Span] = []
    pos = start
    n = len(text)
    while pos < n:
        while pos < n and text[pos].isspace():
            pos += 1
        if pos >= n:
            break
        para = text.find("\n\n", pos)
        end = min(n if para == -1 else para, pos + SPAN)
        if end < n and end - pos >= SPAN:
            cut = max(text.rfind("\n", pos + SPAN // 3, end), text.rfind(" ", pos + SPAN // 3, end))
            end = cut if cut > pos else end
        out.append(Span(pos, end))
        pos = end
    return out


def _weights(question: str) -> dict[str, float]:
    """The question's words (folded) with a weight: longer words and identifiers weigh more."""
    out: dict[str, float] = {}
    for w in _WORD.findall(fold_words(question)):
        if len(w) >= MIN_WORD:
            out[w[:8]] = max(out.get(w[:8], 0.0), min(3.0, len(w) / 4) + (1.0 if any(c.isdigit() for c in w) else 0))
    for w in re.findall(r"\b[A-Z][A-Za-z0-9]*[A-Z0-9][A-Za-z0-9]*\b|\b[A-Z][a-z]+[A-Z]\w*", question):
        key = fold_words(w)[:8]
        out[key] = out.get(key, 1.0) + 1.5        # JSON, SQLite, IPv6: identifiers cross languages
    return out


def _lexical(text: str, weights: dict[str, float]) -> float:
    """The weights of the question's words found in `text` at word starts (each word counted once)."""
    if not weights:
        return 0.0
    found = {w[:8] for w in _WORD.findall(fold_words(text)) if len(w) >= MIN_WORD}
    starts = {f[:k] for f in found for k in range(MIN_WORD, min(8, len(f)) + 1)}
    return sum(wt for w, wt in weights.items() if w in starts)


class Region(NamedTuple):
    rid: int          # the window's chunk rowid
    start: int        # Document.text offset of `text`
    line: int         # 1-based line of `start`
    text: str         # the window's chunk and the chunks after it, up to REGION_CHUNKS
    window: int       # offset of the window's start in `text`
    length: int       # the window's length


def _regions(con: Any, windows: list[tuple[int, int, int, int]]) -> dict[int, Region]:
    """{window rowid: Region} for windows given as (rowid, start, length, line), in two queries."""
    ids = sorted({w[0] + k for w in windows for k in range(REGION_CHUNKS)})
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    chunks = {int(i): (int(s), int(ln), zlib.decompress(b).decode("utf-8")) for i, s, ln, b in
              con.execute(f"SELECT id, start, line, body FROM chunks WHERE id IN ({marks})", ids)}
    out: dict[int, Region] = {}
    for rid, start, length, _line in windows:
        head = chunks.get(rid)
        if head is None or not head[0] <= start <= head[0] + len(head[2]):
            continue
        parts = [head[2]]
        for k in range(1, REGION_CHUNKS):
            nxt = chunks.get(rid + k)
            if nxt is None or (rid + k) >> CHUNK_BITS != rid >> CHUNK_BITS:
                break
            parts.append(nxt[2])
        out[rid] = Region(rid, head[0], head[1], "".join(parts), start - head[0], length)
    return out


class Chosen(NamedTuple):
    rid: int
    passage: Passage


def choose(con: Any, question: str, windows: list[tuple[int, float]], pages: list[int]) -> Chosen | None:
    """The passage answering `question` among a file's best `windows` [(rowid, cosine)], or None."""
    from mcp_nextcloud.indexer.store import vectors

    rows = vectors.window_rows(con, [rid for rid, _ in windows])
    regions = _regions(con, [(rid, *rows[rid]) for rid, _ in windows if rid in rows])
    if not regions:
        return None
    weights = _weights(question)
    best: tuple[float, Region, Span] | None = None
    for rid, sim in windows:
        reg = regions.get(rid)
        if reg is None:
            continue
        head = reg.text[reg.window:reg.window + reg.length]
        toc = looks_like_toc(head)
        for k, sp in enumerate(_spans(reg.text, reg.window)):
            piece = reg.text[sp.start:sp.end]
            if looks_like_toc(piece):
                continue
            # The window's cosine (less when it reads as a table of contents), then the question's words;
            # the first prose span of a window stands for it when no word is found.
            value = sim - (TOC_PENALTY if toc else 0.0) + 0.01 * _lexical(piece, weights) - 0.0001 * k
            if best is None or value > best[0]:
                best = (value, reg, sp)
    if best is None:   # nothing but tables of contents: the best window's head, as before
        rid = windows[0][0]
        reg = regions.get(rid) or next(iter(regions.values()))
        best = (0.0, reg, Span(reg.window, min(len(reg.text), reg.window + reg.length)))
    return Chosen(best[1].rid, _passage(best[1], best[2], pages))


def _passage(reg: Region, sp: Span, pages: list[int]) -> Passage:
    end = min(sp.end, sp.start + MAX_PASSAGE)
    if end < sp.end:
        cut = reg.text.rfind(" ", sp.start + MAX_PASSAGE // 2, end)
        end = cut if cut != -1 else end
    text = reg.text[sp.start:end].rstrip()
    offset = reg.start + sp.start
    line = reg.line + reg.text.count("\n", 0, sp.start)
    page = Document(text="", kind="text", pages=pages or [0]).page_of(offset)
    return Passage(offset=offset, length=len(text), text=text, passage=text, passageOffset=offset, page=page,
                   line=line, matches=[])
