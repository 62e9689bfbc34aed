"""The passage around a match: its sentence or line, bounded, cut at word boundaries (find and grep share it)."""
from __future__ import annotations

import re

MIN_PASSAGE = 60       # a passage shorter than this grows to the next sentence or line

# Where a sentence or a line ends: the passage is cut there when it can be.
_UNIT_END = re.compile(r"[.!?;:\u3002](?=\s)|\n")


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
