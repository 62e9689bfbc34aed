"""The passage of a meaning hit: the place in the file that answers the question, not the head of a window.

Meaning finds a file by its best embedded windows (semantic.py: a window heads one chunk in three), but
the best window is often a table of contents, an index or a navigation bar (they name every subject),
and the answer lies further on. So, for each meaning hit:

1. its best windows (semantic.WINDOWS_PER_FILE, by cosine) are re-scored: a window whose text reads as a
   table of contents, an index or dot-leader lines (`looks_like_toc`) loses TOC_PENALTY, so it is chosen
   only when no better text was embedded;
2. in the region that window stands for (its chunk and the chunks up to the next embedded one), the spans
   (paragraphs, cut at SPAN characters) are scored by the question's words (folded, at word starts, longer
   words weighing more; identifiers such as "JSON" or "Samba" bridge languages; weighing them by rarity
   instead answered fewer questions of the relevance set, 22-24 of 41 against 26), each span
   further into the region a little less (SPAN_DECAY: the text that introduces a subject comes before the
   text that details it): the best span that is not table-of-contents text is the passage;
3. with no word of the question in the region (a question in another language), the passage is the first
   span of the window that is not table-of-contents text.

Every passage is an exact slice of Document.text at an offset files_read accepts.
"""
from __future__ import annotations

import bisect
import re
import zlib
from typing import Iterator, NamedTuple

import apsw

from mcp_nextcloud.indexer.search.furniture import furniture, numbered_heading
from mcp_nextcloud.indexer.search.passages import Passage
from mcp_nextcloud.indexer.store.schema import CHUNK_BITS
from mcp_nextcloud.reader.document import Document

TOC_PENALTY = 0.03       # cosine a table-of-contents window loses (e5 cosines of related text differ by ~0.01-0.05)
LEXICAL = 0.01           # cosine a question word (weight 1) in a span is worth
REGION_CHUNKS = 2        # a window's region: its chunk and the next (the answer starts within ~6k characters)
WINDOWS = 2              # a file's best windows re-scored (each region is read: a few ms for a page of hits)
SPAN = 600               # characters a candidate span holds at most
SPAN_DECAY = 0.003       # cosine each span further into a region loses: a region's earlier text introduces what
                         # its later text details (0.0001-0.01 measured on the relevance set: 0.003 best)
MIN_WORD = 4             # shorter question words are not looked for (articles, "les", "und", "how")
ANSWER_PASSAGE = 300     # characters a question's passage shows at most: a sentence or two, whole
FIRST_PASSAGE = 800      # ... and the first hit's: the answer an agent reads first, a few sentences or a command
                         # with its example (relevance set, answering span inside the passage: 180 characters
                         # 5/41, 300: 5/41, 500: 9/41, 800: 13/41; each further call costs the agent more)

_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"[.!?:](?=\s)|\n\s*\n")
_IDENT = re.compile(r"\b[A-Z][A-Za-z0-9]*[A-Z0-9][A-Za-z0-9]*\b|\b[A-Z][a-z]+[A-Z]\w*")


def _marked(line: str) -> bool:
    """A line of a table of contents or an index (furniture.py): navigation, dot leaders or page lists at its
    end, or a short numbered heading."""
    return furniture(line) or numbered_heading(line)


def _toc(flags: list[bool], lengths: list[int]) -> bool:
    """The table-of-contents rule over the non-empty lines of a piece (see looks_like_toc)."""
    n = len(flags)
    if n < 3:
        return n > 0 and all(flags)
    short = sum(1 for k in lengths if k < 40)
    return sum(flags) * 5 >= n * 2 or (short * 4 >= n * 3 and n >= 6)


def looks_like_toc(text: str) -> bool:
    """Whether `text` reads as a table of contents, a back-of-book index or a list of section links.

    Counted per non-empty line: dot leaders ending in a page number ("Functions . . . . 45"), index entries
    ending in page lists ("mount, 12, 48-50"), short numbered headings ("5.2.1. Firewall"), navigation bars
    and footers ("Library »", "next", "© Copyright"). Two lines in five of those, or three short lines in
    four, make a table of contents.
    """
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return _toc([_marked(ln) for ln in lines], [len(ln) for ln in lines])


class Span(NamedTuple):
    start: int       # offset in the region text
    end: int
    toc: bool        # reads as a table of contents


def _lines(text: str, start: int) -> Iterator[tuple[int, str]]:
    """(offset, line) of text[start:], a line longer than SPAN cut at spaces into pieces of about SPAN."""
    pos = start
    for line in text[start:].splitlines(keepends=True):
        while len(line) > SPAN:
            cut = line.rfind(" ", SPAN // 2, SPAN)
            cut = cut + 1 if cut != -1 else SPAN
            yield pos, line[:cut]
            pos, line = pos + cut, line[cut:]
        yield pos, line
        pos += len(line)


def _spans(text: str, start: int) -> list[Span]:
    """Paragraph-like spans of text[start:] (a blank line ends one; at most about SPAN characters), each with
    its table-of-contents verdict (also when only its head, the lines its passage shows, reads as one: a
    span opening on a navigation bar or a list of sections, prose after it); every line is looked at once."""
    out: list[Span] = []
    flags: list[bool] = []
    lengths: list[int] = []
    a = None
    head = 0
    end = start
    for pos, line in _lines(text, start):
        body = line.strip()
        if body:
            if a is None:
                a = pos + len(line) - len(line.lstrip())
            flags.append(_marked(body))
            lengths.append(len(body))
            head += pos < a + ANSWER_PASSAGE
        end = pos + len(line)
        if a is not None and (not body or end - a >= SPAN):
            out.append(Span(a, end, _toc(flags, lengths) or _marked_head(flags[:head])))
            a, flags, lengths, head = None, [], [], 0
    if a is not None:
        out.append(Span(a, end, _toc(flags, lengths) or _marked_head(flags[:head])))
    return out


def _marked_head(flags: list[bool]) -> bool:
    """A span's head (the lines its passage shows) of navigation, dot-leader or numbered-heading lines, two
    in five or more of three lines at least: the passage would open on them even if prose follows."""
    return len(flags) >= 3 and sum(flags) * 5 >= len(flags) * 2


def _weights(question: str) -> dict[str, float]:
    """The question's words (lower case, cut to 8 letters: a word start) with a weight: longer words and
    identifiers ("JSON", "SQLite", "IPv6": they cross languages) weigh more."""
    weights: dict[str, float] = {}
    for w in _WORD.findall(question.lower()):
        if len(w) >= MIN_WORD and not w.isdigit():
            key = w[:8]
            weights[key] = max(weights.get(key, 0.0), min(3.0, len(w) / 4))
    for w in _IDENT.findall(question):
        key = w.lower()[:8]
        weights[key] = weights.get(key, 1.0) + 1.5
    return weights


def _found(text: str, start: int, weights: dict[str, float]) -> list[tuple[int, str]]:
    """(offset, word) of each question word at a word start in text[start:], in text order (str.find: C speed)."""
    low = text.lower()
    out: list[tuple[int, str]] = []
    for w in weights:
        pos = low.find(w, start)
        while pos != -1:
            if pos == 0 or not low[pos - 1].isalnum():
                out.append((pos, w))
            pos = low.find(w, pos + len(w))
    out.sort()
    return out


def _lexical(found: list[tuple[int, str]], sp: Span, weights: dict[str, float]) -> float:
    """The weights of the distinct question words found inside the span (`found` is in text order)."""
    lo = bisect.bisect_left(found, (sp.start, ""))
    hi = bisect.bisect_left(found, (sp.end, ""))
    return sum(weights.get(w, 0.0) for w in {w for _, w in found[lo:hi]})


class Region(NamedTuple):
    rid: int          # the window's chunk rowid
    start: int        # Document.text offset of `text`
    line: int         # 1-based line of `start`
    text: str         # the window's chunk and the chunks after it, up to REGION_CHUNKS
    window: int       # offset of the window's start in `text`
    length: int       # the window's length


def _regions(con: apsw.Connection, windows: list[tuple[int, int, int, int]]) -> dict[int, Region]:
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


def choose(con: apsw.Connection, question: str, windows: list[tuple[int, float]], pages: list[int],
           size: int = ANSWER_PASSAGE) -> Chosen | None:
    """The passage answering `question` among a file's best `windows` [(rowid, cosine)], or None.

    The first WINDOWS windows are re-scored; when their regions hold nothing but tables of contents, the
    file's further windows (up to semantic.WINDOWS_PER_FILE) are read before settling for one.
    """
    weights = _weights(question)
    regions: dict[int, Region] = {}
    for part in (windows[:WINDOWS], windows[WINDOWS:]):
        regions |= _read(con, part)
        best = _best(part, regions, weights)
        if best is not None:
            return Chosen(best[1].rid, _passage(best[1], best[2], pages, size))
    if not regions:
        return None
    # Nothing but tables of contents: the best window's head, as before.
    reg = regions.get(windows[0][0]) or next(iter(regions.values()))
    return Chosen(reg.rid, _passage(reg, Span(reg.window, min(len(reg.text), reg.window + reg.length), True), pages,
                                    size))


def _read(con: apsw.Connection, windows: list[tuple[int, float]]) -> dict[int, Region]:
    from mcp_nextcloud.indexer.store import vectors

    if not windows:
        return {}
    rows = vectors.window_rows(con, [rid for rid, _ in windows])
    return _regions(con, [(rid, *rows[rid]) for rid, _ in windows if rid in rows])


def _best(windows: list[tuple[int, float]], regions: dict[int, Region],
          weights: dict[str, float]) -> tuple[float, Region, Span] | None:
    """The best span of the windows' regions that is not table-of-contents text (None: there is none)."""
    best: tuple[float, Region, Span] | None = None
    for rid, sim in windows:
        reg = regions.get(rid)
        if reg is None:
            continue
        spans = _spans(reg.text, reg.window)
        found = _found(reg.text, reg.window, weights)
        # The window's cosine (less when its head reads as a table of contents), then the question's words;
        # the first prose span of a window stands for it when no word is found.
        base = sim - (TOC_PENALTY if looks_like_toc(reg.text[reg.window:reg.window + reg.length]) else 0.0)
        for k, sp in enumerate(spans):
            if sp.toc:
                continue
            value = base + LEXICAL * _lexical(found, sp, weights) - SPAN_DECAY * k
            if best is None or value > best[0]:
                best = (value, reg, sp)
    return best


def _passage(reg: Region, sp: Span, pages: list[int], size: int) -> Passage:
    """The passage from the span's start: `size` characters at most, on into the spans after it (the answer
    often follows the sentence that names its subject), ending at a sentence end, else at a space."""
    end = min(len(reg.text), sp.start + size)
    if end < len(reg.text):
        ends = [m.end() for m in _SENTENCE_END.finditer(reg.text, min(sp.end, end), end)]
        cut = ends[-1] if ends else reg.text.rfind(" ", sp.start + size // 2, end)
        end = max(cut, sp.start + 1) if cut != -1 else end
    text = reg.text[sp.start:end].rstrip()
    offset = reg.start + sp.start
    line = reg.line + reg.text.count("\n", 0, sp.start)
    page = Document(text="", kind="text", pages=pages or [0]).page_of(offset)
    return Passage(offset=offset, length=len(text), text=text, passage=text, passageOffset=offset, page=page,
                   line=line, matches=[])


def extend(p: Passage, text: str, start: int, size: int = ANSWER_PASSAGE) -> None:
    """A question's word passage carried on to the end of the sentences after it, `size` characters at most
    (`text` is the chunk the passage was cut from, starting at offset `start`): the words of a question name
    its subject, and the answer follows them."""
    a = p.passageOffset - start
    b = a + len(p.passage)
    if a < 0 or b > len(text) or b - a >= size:
        return
    limit = min(len(text), a + size)
    ends = [m.end() for m in _SENTENCE_END.finditer(text, b, limit)]
    end = ends[-1] if ends else b
    if end > b:
        p.passage = text[a:end].rstrip()
