"""Spacing accents drawn over a letter (TeX's \\'e, \\`a, \\^o, \\"i, \\c c ...) put back on the letter.

TeX-made PDFs draw an accented letter as two glyphs: the accent (´ ` ^ ¨ ¸ ˇ ˚ ...)
and the bare letter, the accent shifted so that it sits over (or, for ¸ and ˛,
under) the letter. Text extraction then returns "pr´ef´erable" or "pre´fe´rable"
depending on the engine's ordering. `recompose` joins each such pair into the
composed character (NFC of letter + combining mark) — but only when the
geometry says so: the accent's horizontal centre lies inside the letter's box
and the two sit on the same line. A backtick or caret typed as text (shell
quoting "echo `date`", LilyPond "c'4^\\markup") stands beside its neighbour,
not over it, and is left alone.

Pure: it needs only the text and a way to ask for a character's box, so both
PDF engines (pypdfium2, pdfminer.six) and the property tests share it.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from typing import Callable

Box = tuple[float, float, float, float]  # left, bottom, right, top (PDF units, y up)

# Spacing accent -> the combining mark it stands for. Several code points per mark: fonts
# map TeX's accent glyphs to the Latin-1 forms, the modifier letters or plain ASCII.
SPACING_TO_COMBINING = {
    "\u00b4": "\u0301", "\u02ca": "\u0301", "\u02b9": "\u0301",   # ´ ˊ acute
    "`": "\u0300", "\u02cb": "\u0300",                              # ` ˋ grave
    "^": "\u0302", "\u02c6": "\u0302",                              # ^ ˆ circumflex
    "\u00a8": "\u0308",                                             # ¨ diaeresis
    "\u00b8": "\u0327",                                             # ¸ cedilla (under)
    "\u02c7": "\u030c",                                             # ˇ caron
    "\u02da": "\u030a",                                             # ˚ ring
    "~": "\u0303", "\u02dc": "\u0303",                              # ~ ˜ tilde
    "\u00af": "\u0304", "\u02c9": "\u0304",                         # ¯ ˉ macron
    "\u02d8": "\u0306",                                             # ˘ breve
    "\u02d9": "\u0307",                                             # ˙ dot above
    "\u02db": "\u0328",                                             # ˛ ogonek (under)
    "\u02dd": "\u030b",                                             # ˝ double acute
}
# TeX accents i and j without their dot (\'{\i}): the composed letter has the accent instead.
_DOTLESS = {"\u0131": "i", "\u0237": "j"}
_ACCENT = re.compile("[" + re.escape("".join(SPACING_TO_COMBINING)) + "]")


def has_accent_candidates(text: str) -> bool:
    """Whether `text` holds any spacing accent at all (the common case, no work, is decided here)."""
    return _ACCENT.search(text) is not None


def _sits_on(accent: Box, letter: Box) -> bool:
    """Whether the accent's horizontal centre is inside the letter's box, on the same line."""
    al, ab, ar, at = accent
    ll, lb, lr, lt = letter
    if not ll < (al + ar) / 2 < lr:
        return False
    height = max(lt - lb, at - ab)
    # a glyph further above or below than one glyph height belongs to another line
    return ab - lt <= height and lb - at <= height


@functools.lru_cache(maxsize=1024)
def _compose(letter: str, accent: str) -> str:
    base = _DOTLESS.get(letter, letter)
    return unicodedata.normalize("NFC", base + SPACING_TO_COMBINING[accent])


def _pairs(text: str, box: Callable[[int], Box | None]) -> dict[int, int]:
    """accent index -> index of the letter it sits on, decided by the boxes.

    Runs once per accent on every page of a PDF, so it asks for as few boxes
    as it can: none for an accent with no letter beside it, and it stops at
    the first neighbour the accent sits on (two adjacent letters' boxes do not
    both hold the accent's centre).
    """
    pairs: dict[int, int] = {}
    taken = -1  # scanning left to right, only the last letter taken can be a neighbour again
    n = len(text)
    # TeX draws the accent first; some engines sort it after the letter. An engine is consistent
    # within a page, so the side that matched last is tried first.
    sides = (1, -1)
    for match in _ACCENT.finditer(text):
        i = match.start()
        accent_box: Box | None = None
        for side in sides:
            j = i + side
            if j < 0 or j >= n or j == taken or not text[j].isalpha():
                continue
            if accent_box is None:
                accent_box = box(i)
                if accent_box is None:
                    break
            letter_box = box(j)
            if letter_box is not None and _sits_on(accent_box, letter_box):
                pairs[i] = taken = j
                sides = (side, -side)
                break
    return pairs


def recompose(text: str, box: Callable[[int], Box | None]) -> str:
    """`text` with every spacing accent drawn over a letter joined to that letter.

    `box(i)` gives the box of `text[i]` (or None when unknown: that character
    is then never joined). Characters that are not such pairs are kept as they
    are, in order; a pair becomes one composed character (or letter + combining
    mark when Unicode has no precomposed form) at the place of the first of the two.
    """
    if not has_accent_candidates(text):
        return text
    pairs = _pairs(text, box)
    if not pairs:
        return text
    out: list[str] = []
    last = 0
    for accent in sorted(pairs):
        letter = pairs[accent]
        first, second = min(accent, letter), max(accent, letter)
        out.append(text[last:first])
        out.append(_compose(text[letter], text[accent]))
        last = second + 1
    out.append(text[last:])
    return "".join(out)


# Typographic ligatures some engines keep as one character (pdfminer does; pdfium splits them).
LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
                           "\ufb05": "st", "\ufb06": "st"})


def leftover_artefacts(text: str) -> int:
    """Spacing accents next to a letter, ligature characters and PDFium's U+FFFE hyphen marks in `text`.

    A measure, not a repair: code samples legitimately hold "`d" or "^x", so a
    figure is meaningful compared with the same count on the intended text.
    """
    accents = sum(1 for m in _ACCENT.finditer(text)
                  if any(0 <= j < len(text) and text[j].isalpha() for j in (m.start() - 1, m.start() + 1)))
    return accents + sum(text.count(c) for c in "\ufb00\ufb01\ufb02\ufb03\ufb04\ufb05\ufb06\ufffe")
