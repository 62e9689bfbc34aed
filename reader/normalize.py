"""The search form of a text: folded once per document, mapped back to original offsets.

Text extracted from real PDFs is full of artefacts (glued or split words,
accents emitted as separate spacing characters, ligatures, soft hyphens, line-end
hyphenation). `normalize` folds all of them away so `find` is a plain substring
search, and keeps, for every character of the folded form, the offset of the
original character it came from, so every match maps back to `Document.text`.

The folding is per character and context-free, which is what makes it
consistent between a document and a query: the fold of any substring of a text
is a substring of the fold of the text. Per character:

- whitespace of every kind (incl. NBSP, CR), control characters, format
  characters (soft hyphen U+00AD, zero-width space/joiners, BOM), U+FFFE/U+FFFF,
  hyphens (``-``, U+2010, U+2011), combining marks, spacing accents
  (´ ` ¨ ˆ ˜ ¸ ˇ ˘ ˙ ˚ ˛ ˝ ¯ ^ and the modifier-letter forms U+02C6..U+02DF)
  are dropped;
- letters are decomposed (NFKD: ligatures ﬁ→fi, ﬂ→fl, fullwidth forms), their
  combining marks dropped, and case-folded; Latin letters without a
  decomposition go through unidecode (ß→ss, æ→ae, ø→o, ł→l, œ→oe);
- everything else (other punctuation, digits, non-Latin scripts) is kept,
  case-folded.
"""
from __future__ import annotations

import bisect
import re
import struct
import unicodedata
import zlib
from array import array
from dataclasses import dataclass, field
from itertools import compress

from unidecode import unidecode

# Bump when the folding changes: cached forms of another version are refused.
NORMALIZE_VERSION = 1
_MAGIC = b"NT"

# ASCII characters that fold to themselves (after lower-casing): everything
# printable except the dropped ones: '-' (hyphen), '^' and '`' (spacing accents).
_ASCII_KEEP = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) not in "-^`")

_HYPHENS = frozenset("-\u2010\u2011")
# Spacing accents PDFs emit next to letters, incl. modifier-letter forms.
_SPACING_ACCENTS = frozenset("\u00b4`\u00a8^\u00b8\u00af\u02dc\u02c7\u02d8\u02d9\u02da\u02db\u02dd") | frozenset(
    chr(c) for c in range(0x02C6, 0x02E0)
)
_NONCHARS = frozenset("\ufffe\uffff")


def _dropped(ch: str) -> bool:
    """True when `ch` never takes part in a match (see module docstring)."""
    if ch in _HYPHENS or ch in _SPACING_ACCENTS or ch in _NONCHARS or ch.isspace():
        return True
    cat = unicodedata.category(ch)
    # Cc control, Cf format (soft hyphen, zero-width, BOM), Mn/Me/Mc marks, Sk modifier symbols.
    return cat in ("Cc", "Cf", "Mn", "Me", "Mc", "Sk")


def _fold_char(ch: str) -> str:
    """The folded form of one character: '' when dropped, else one or more characters."""
    if ch in _ASCII_KEEP:
        return ch.lower()
    if _dropped(ch):
        return ""
    base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not _dropped(c))
    if not base.isascii() and unicodedata.name(ch, "").startswith("LATIN"):
        # Latin letters without a decomposition (ß, æ, ø, ł, œ, đ, þ).
        base = unidecode(base)
    out = base.casefold()
    if not out.isascii():
        # casefold may decompose again (e.g. İ -> i̇): drop marks it produced.
        out = "".join(c for c in unicodedata.normalize("NFKD", out) if not _dropped(c))
    # Whatever a transliteration produced must itself be a kept character.
    return "".join(c for c in out if not _dropped(c))


class _FoldTable(dict):
    """Code point -> folded string, filled lazily; usable with str.translate (C speed)."""

    def __missing__(self, ordinal: int) -> str:
        folded = _fold_char(chr(ordinal))
        self[ordinal] = folded
        return folded


_FOLD = _FoldTable()


class _WordTable(dict):
    """Like _FoldTable, but whitespace becomes a space and hyphens stay word separators."""

    def __missing__(self, ordinal: int) -> str:
        ch = chr(ordinal)
        if ch.isspace():
            folded = " "
        elif ch in _HYPHENS:
            folded = "-"
        else:
            folded = _FOLD[ordinal]
        self[ordinal] = folded
        return folded


_WORDS = _WordTable()


class _CountTable(dict):
    """Code point -> chr(number of characters it folds to), for str.translate."""

    def __missing__(self, ordinal: int) -> str:
        count = chr(min(len(_FOLD[ordinal]), 255))
        self[ordinal] = count
        return count


_COUNTS = _CountTable()
_EXPANDING = re.compile(rb"[\x02-\xff]")


class _AsciiPath:
    """bytes.translate tables equal to a lazy table on ASCII: the C fast path for ASCII runs.

    Built from the lazy table itself, so both paths always give the same result.
    """

    def __init__(self, table: dict) -> None:
        self.table = table
        mapping = bytearray(range(256))
        delete = bytearray()
        for c in range(128):
            folded = table[c]
            if folded == "":
                delete.append(c)
            elif len(folded) == 1 and folded.isascii():
                mapping[c] = ord(folded)
            else:  # pragma: no cover - ASCII never folds to several characters
                raise AssertionError(f"ASCII {c} folds to {folded!r}")
        self.mapping = bytes(mapping)
        self.delete = bytes(delete)

    def translate(self, text: str) -> str:
        """`text.translate(table)`, with ASCII runs done by bytes.translate."""
        if text.isascii():
            return text.encode("ascii").translate(self.mapping, self.delete).decode("ascii")
        parts = _NON_ASCII_SPLIT.split(text)
        for k in range(0, len(parts), 2):
            parts[k] = parts[k].encode("ascii").translate(self.mapping, self.delete).decode("ascii")
        for k in range(1, len(parts), 2):
            parts[k] = parts[k].translate(self.table)
        return "".join(parts)


# Splitting on non-ASCII runs (captured) alternates ASCII and non-ASCII parts.
_NON_ASCII_SPLIT = re.compile(r"([^\x00-\x7f]+)")
_FOLD_FAST = _AsciiPath(_FOLD)
_COUNTS_FAST = _AsciiPath(_COUNTS)


def _offsets_from_counts(counts: bytes) -> tuple[array, bool]:
    """norm index -> original index, from the per-character fold counts (C-speed iterators)."""
    offsets = array("I", compress(range(len(counts)), counts))
    expansions = [(m.start(), counts[m.start()]) for m in _EXPANDING.finditer(counts)]
    if not expansions:
        return offsets, False
    # Rare (ß, ligatures): splice the repeats in; `offsets` is sorted, so bisect finds each.
    out = array("I")
    done = 0
    for pos, n in expansions:
        k = bisect.bisect_left(offsets, pos)
        out.extend(offsets[done : k + 1])
        out.extend([pos] * (n - 1))
        done = k + 1
    out.extend(offsets[done:])
    return out, True


@dataclass
class NormalizedText:
    """The folded search form of a text plus a map back to original offsets.

    `norm[k]` came from original character `offsets[k]`; `counts[i]` is how
    many characters of `norm` original character i folded to (0 dropped, 1,
    or more for ß, ligatures): the run-length (delta) encoding of `offsets`,
    which is what is serialised. `length` is the length of the original text
    (used to check a cached form still fits).
    """

    norm: str
    offsets: array
    length: int
    counts: bytes = b""
    # True when some character folded to several (ß -> ss, ﬁ -> fi): then two
    # matches in `norm` may fall in the same original character.
    expanded: bool = False
    _line_starts: list[int] | None = field(default=None, repr=False, compare=False)

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        """Map a match [start, end) in `norm` to [start, end) in the original text.

        The original span covers whole characters: a match ending inside the
        fold of ß ("ss") still covers the whole ß.
        """
        if not 0 <= start < end <= len(self.norm):
            raise ValueError(f"span [{start}, {end}) is outside the normalised text of length {len(self.norm)}")
        return self.offsets[start], self.offsets[end - 1] + 1

    def line_starts(self, text: str) -> list[int]:
        """Offsets where each line of `text` starts ('\\n' ends a line); computed once."""
        if self._line_starts is None:
            starts = [0]
            starts.extend(m.end() for m in re.finditer("\n", text))
            self._line_starts = starts
        return self._line_starts

    def to_bytes(self) -> bytes:
        """Compact serialisation: a header, then zlib over the UTF-8 form and the fold counts.

        The counts are mostly 1 with a 0 at each space, which zlib compresses
        to a few bits per character.
        """
        norm_bytes = self.norm.encode("utf-8", "surrogatepass")  # lone surrogates survive
        header = struct.pack(_HEADER, _MAGIC, NORMALIZE_VERSION, self.length, len(self.norm), len(norm_bytes))
        return header + zlib.compress(norm_bytes + self.counts, 6)

    @classmethod
    def from_bytes(cls, data: bytes) -> "NormalizedText":
        """Inverse of `to_bytes`; ValueError on another version or damaged data (rebuild then)."""
        size = struct.calcsize(_HEADER)
        try:
            magic, version, length, count, nbytes = struct.unpack(_HEADER, data[:size])
        except struct.error as exc:
            raise ValueError("not a serialised NormalizedText: too short; rebuild it with normalize()") from exc
        if magic != _MAGIC or version != NORMALIZE_VERSION:
            raise ValueError(f"serialised NormalizedText of another version ({version}); rebuild it with normalize()")
        try:
            payload = zlib.decompress(data[size:])
        except zlib.error as exc:
            raise ValueError("damaged serialised NormalizedText; rebuild it with normalize()") from exc
        if len(payload) != nbytes + length:
            raise ValueError("damaged serialised NormalizedText (wrong size); rebuild it with normalize()")
        try:
            norm = payload[:nbytes].decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as exc:
            raise ValueError("damaged serialised NormalizedText (bad UTF-8); rebuild it with normalize()") from exc
        counts = payload[nbytes:]
        offsets, expanded = _offsets_from_counts(counts)
        if len(norm) != count or len(offsets) != count:
            raise ValueError("damaged serialised NormalizedText (length mismatch); rebuild it with normalize()")
        return cls(norm=norm, offsets=offsets, length=length, counts=counts, expanded=expanded)


_HEADER = "<2sBIII"


def normalize(text: str) -> NormalizedText:
    """Fold `text` for search and keep the map back to original offsets (see module doc)."""
    # Both passes are str.translate over lazily filled tables: C speed, no
    # Python loop per character (the map is built by C iterators too).
    norm = _FOLD_FAST.translate(text)
    counts = _COUNTS_FAST.translate(text).encode("latin-1")
    offsets, expanded = _offsets_from_counts(counts)
    if len(offsets) != len(norm):  # pragma: no cover - would be a bug in the fold tables
        raise AssertionError("normalize: offset map and folded text disagree")
    return NormalizedText(norm=norm, offsets=offsets, length=len(text), counts=counts, expanded=expanded)


def normalize_query(query: str) -> str:
    """The folded form of a query: the same folding as `normalize` ("NEW-APP" -> "newapp")."""
    return _FOLD_FAST.translate(query)


# Line-end hyphenation: a hyphen (or soft hyphen / U+FFFE, which pdfium emits
# at line ends) after a letter, then a line break: the word continues.
_LINE_END_HYPHEN = re.compile(r"(?<=\w)[-\u2010\u2011\u00ad\ufffe][ \t\u00a0]*\r?\n[ \t\u00a0\r\n]*")
_SPACES = re.compile(r" {2,}")
_WORDS_FAST = _AsciiPath(_WORDS)


def fold_words(text: str) -> str:
    """Fold `text` like `normalize` but keep word boundaries, for a word index (FTS5).

    Exactly: line-end hyphenation is joined ("expres-\\nsion" -> "expression");
    every whitespace run becomes one space (leading/trailing spaces removed);
    hyphens stay as "-" (the unicode61 tokenizer splits on them: "well-known"
    -> "well", "known"); every other character is folded as in `normalize`
    (case, accents, ligatures, ß->ss; spacing accents, soft hyphens and
    zero-width characters dropped, so "propri´et´es" -> "proprietes").
    Use it on both indexed text and queries so grep and find agree on words.
    """
    joined = _LINE_END_HYPHEN.sub("", text)
    return _SPACES.sub(" ", _WORDS_FAST.translate(joined)).strip()
