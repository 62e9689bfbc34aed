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


class _FoldTable(dict[int, str]):
    """Code point -> folded string, filled lazily; usable with str.translate (C speed)."""

    def __missing__(self, ordinal: int) -> str:
        folded = _fold_char(chr(ordinal))
        self[ordinal] = folded
        return folded


_FOLD = _FoldTable()


class _WordTable(dict[int, str]):
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


class _CountTable(dict[int, str]):
    """Code point -> chr(number of characters it folds to), for str.translate."""

    def __missing__(self, ordinal: int) -> str:
        count = chr(min(len(_FOLD[ordinal]), 255))
        self[ordinal] = count
        return count


_COUNTS = _CountTable()
_EXPANDING = re.compile(rb"[\x02-\xff]")

# Every ASCII byte: deleting them from UTF-8 leaves only the non-ASCII characters.
_ASCII_BYTES = bytes(range(128))
# Above this many distinct non-ASCII characters (other scripts: Cyrillic, Greek,
# CJK), one str.translate beats one str.replace per distinct character.
_MAX_REPLACED = 24


def _non_ascii_chars(data: bytes) -> set[str]:
    """The distinct non-ASCII characters of UTF-8 `data` (C passes; no loop per character)."""
    return set(data.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass"))


class _FastFold:
    """`text.translate(table)` for a lazy fold table, without a dict lookup per character.

    Most extracted text is ASCII with a few distinct accented letters, so the
    fold runs as C passes: bytes.translate folds the ASCII bytes of the UTF-8
    form (multi-byte sequences contain no ASCII bytes, so they pass through),
    then one str.replace per distinct non-ASCII character. Text with many
    distinct non-ASCII characters (other scripts) falls back to str.translate.
    The byte tables are built from the lazy table itself, so every path gives
    the same result as `text.translate(table)`.
    """

    def __init__(self, table: dict[int, str]) -> None:
        self.table = table
        mapping = bytearray(range(256))   # bytes >= 0x80 (UTF-8 sequences) map to themselves
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

    def fold_bytes(self, text: str) -> tuple[bytes, bool]:
        """(folded UTF-8 with only the ASCII folded yet, whether non-ASCII characters remain)."""
        if text.isascii():
            return text.encode("ascii").translate(self.mapping, self.delete), False
        return text.encode("utf-8", "surrogatepass").translate(self.mapping, self.delete), True

    def finish(self, text: str, folded: str) -> str:
        """Fold the non-ASCII characters left in `folded` (ASCII already folded) as the table says."""
        pairs = []
        for ch in _non_ascii_chars(text.encode("utf-8", "surrogatepass")):
            out = self.table[ord(ch)]
            if out != ch:
                pairs.append((ch, out))
        if not pairs:
            return folded
        targets = {ch for ch, _ in pairs}
        # One replace per character is only the same as one translate when no
        # replacement produces a character another replacement would change.
        if len(pairs) > _MAX_REPLACED or any(c in targets for _, out in pairs for c in out):
            return folded.translate(self.table)   # folded ASCII characters are fixed points
        for ch, out in pairs:
            folded = folded.replace(ch, out)
        return folded

    def translate(self, text: str) -> str:
        """`text.translate(table)`, as C passes where possible."""
        data, mixed = self.fold_bytes(text)
        if not mixed:
            return data.decode("ascii")
        return self.finish(text, data.decode("utf-8", "surrogatepass"))


_FOLD_FAST = _FastFold(_FOLD)


def _ascii_counts(placeholders: bool) -> bytes:
    """bytes.translate table: ASCII character -> how many characters it folds to (0 or 1).

    With `placeholders`, control characters 0x0e..0x1b (which fold to nothing)
    stand for non-ASCII characters that fold to 2..15 characters instead.
    """
    table = bytearray(256)
    for c in range(128):
        table[c] = len(_FOLD[c])
    if placeholders:
        for k, c in enumerate(_COUNT_PLACEHOLDERS, start=2):
            table[c] = k
    return bytes(table)


_COUNT_PLACEHOLDERS = bytes(range(0x0E, 0x1C))
_NOT_PLACEHOLDERS = bytes(b for b in range(256) if b not in _COUNT_PLACEHOLDERS)
_COUNT_ASCII = _ascii_counts(placeholders=False)
_COUNT_PLACED = _ascii_counts(placeholders=True)


def _counts(text: str) -> bytes:
    """counts[i] = number of characters original character i folds to (see NormalizedText)."""
    if text.isascii():
        return text.encode("ascii").translate(_COUNT_ASCII)
    data = text.encode("utf-8", "surrogatepass")
    chars = _non_ascii_chars(data)
    # Replace each distinct non-ASCII character by an ASCII one with the same
    # count, then count with bytes.translate: only possible when the text holds
    # no placeholder of its own and few distinct characters.
    if len(chars) <= _MAX_REPLACED and not data.translate(None, _NOT_PLACEHOLDERS):
        subst = []
        for ch in chars:
            n = len(_FOLD[ord(ch)])
            if n > len(_COUNT_PLACEHOLDERS) + 1:
                break
            subst.append((ch, " " if n == 0 else "a" if n == 1 else chr(_COUNT_PLACEHOLDERS[n - 2])))
        else:
            for ch, rep in subst:
                text = text.replace(ch, rep)
            return text.encode("ascii").translate(_COUNT_PLACED)
    return text.translate(_COUNTS).encode("latin-1")


def _offsets_from_counts(counts: bytes) -> tuple[array[int], bool]:
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


class NormalizedText:
    """The folded search form of a text plus a map back to original offsets.

    `norm[k]` came from original character `offsets[k]`; `counts[i]` is how
    many characters of `norm` original character i folded to (0 dropped, 1,
    or more for ß, ligatures): the run-length (delta) encoding of `offsets`,
    which is what is serialised. `length` is the length of the original text
    (used to check a cached form still fits).
    """

    __slots__ = ("norm", "offsets", "length", "counts", "expanded", "_line_starts")

    def __init__(self, norm: str, offsets: array[int], length: int, counts: bytes = b"",
                 expanded: bool = False) -> None:
        self.norm = norm
        self.offsets = offsets
        self.length = length
        self.counts = counts
        # True when some character folded to several (ß -> ss, ﬁ -> fi): then two
        # matches in `norm` may fall in the same original character.
        self.expanded = expanded
        self._line_starts: list[int] | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NormalizedText) and (self.norm, self.offsets, self.length, self.counts) == (
            other.norm, other.offsets, other.length, other.counts)

    __hash__ = None  # type: ignore[assignment]  # mutable

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
    # Both passes run as C passes over lazily filled tables (_FastFold, _counts):
    # no Python loop per character (the map is built by C iterators too).
    norm = _FOLD_FAST.translate(text)
    counts = _counts(text)
    offsets, expanded = _offsets_from_counts(counts)
    if len(offsets) != len(norm):  # pragma: no cover - would be a bug in the fold tables
        raise AssertionError("normalize: offset map and folded text disagree")
    return NormalizedText(norm=norm, offsets=offsets, length=len(text), counts=counts, expanded=expanded)


def normalize_query(query: str) -> str:
    """The folded form of a query: the same folding as `normalize` ("NEW-APP" -> "newapp")."""
    return _FOLD_FAST.translate(query)


# Line-end hyphenation: a hyphen (or soft hyphen / U+FFFE, which pdfium emits
# at line ends) after a letter, then a line break: the word continues. The
# pattern starts at the hyphen (a character-set scan, far faster than a
# lookbehind tried at every position); the letter before it is checked on the
# few matches (`_join_hyphenation`). Compiled on first use (re caches it): a
# query or a page shown by the CLI never holds one, and compiling costs 0.2 ms.
_HYPHEN_CHARS = "-\u2010\u2011\u00ad\ufffe"
_LINE_END_HYPHEN = r"[-\u2010\u2011\u00ad\ufffe][ \t\u00a0]*\r?\n[ \t\u00a0\r\n]*"
_WORD_CHAR = re.compile(r"\w")
_WORDS_FAST = _FastFold(_WORDS)


def _join_hyphenation(text: str) -> str:
    """Remove every line-end hyphen that follows a word character, with the line break after it."""
    if "\n" not in text or not any(h in text for h in _HYPHEN_CHARS):
        return text  # the common case, in C-speed membership tests

    def join(m: re.Match[str]) -> str:
        # A match can only start at a hyphen and the rest of it is whitespace,
        # so skipping a rejected match never skips the start of another one.
        i = m.start()
        return "" if i and _WORD_CHAR.match(text, i - 1) else m.group()

    return re.sub(_LINE_END_HYPHEN, join, text)


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
    joined = _join_hyphenation(text)
    data, mixed = _WORDS_FAST.fold_bytes(joined)
    if not mixed:
        return _collapse_spaces(data.decode("ascii"))
    # Non-ASCII characters may fold to a space (NBSP) or to nothing (between two spaces): collapse after.
    return _collapse_spaces(_WORDS_FAST.finish(joined, data.decode("utf-8", "surrogatepass")))


def _collapse_spaces(folded: str) -> str:
    """Runs of " " as one, no leading or trailing one (the word table maps all whitespace to " ").

    Halving the runs with str.replace is C-speed and builds no list of words
    (split/join did, at a third of the speed).
    """
    while "  " in folded:
        folded = folded.replace("  ", " ")
    return folded.strip(" ")
