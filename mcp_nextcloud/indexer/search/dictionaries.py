"""Bilingual dictionaries (FreeDict, dictd format) -> a compact table of headword -> English terms, cached on disk.

Why FreeDict from the distribution: like Tesseract, an optional extra a person installs with the system's
package manager (Debian/Ubuntu: `apt-get install dict-freedict-deu-eng dict-freedict-fra-eng`), free, and in
a plain format: `<name>.index` lines "headword TAB base64 offset TAB base64 length" into `<name>.dict.dz`
(gzip). The German one holds 520k entries in 100 MB of text: parsing it takes ~11 s and 260 MB, so it is
parsed once per dictionary file (its size and mtime) into a SQLite table of its 235k one-word headwords
(21 MB) under the user's cache folder, which a process then opens in a millisecond and asks per word in
tens of microseconds (translate.py).
"""
from __future__ import annotations

import gzip
import math
import os
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import apsw

from mcp_nextcloud.environment import environ, user_dir
from mcp_nextcloud.indexer.store.language import STOPWORDS
from mcp_nextcloud.reader.normalize import fold_words

DIRS_ENV = "MCP_NEXTCLOUD_DICTIONARIES"   # folders holding the dictionaries, ':'-separated, instead of the system's
SYSTEM_DIRS = ("/usr/share/dictd",)
NAMES = {"de": "freedict-deu-eng", "fr": "freedict-fra-eng"}   # the question's language -> the dictionary's name
PACKAGES = "dict-freedict-deu-eng dict-freedict-fra-eng"
KEPT = 6                 # terms kept per headword, best first (the caller takes fewer)
MAX_TERM_WORDS = 2       # "environment variable" is a term; "be the cause of" is a gloss
USAGE_SLICE = 4 << 20   # bytes of the dictionary whose example words are counted at once
CACHE_VERSION = 1        # bumped when the parsing or the ranking changes: old caches are then rebuilt

_B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}
# Inside a translation line: grammar <n>, domains [comp.], IPA /.../, remarks (...), cross references {...}.
_NOTES = re.compile(r"<[^>]*>|\[[^\]]*\]|/[^/]*/|\([^)]*\)|\{[^}]*\}")
_NUMBERED = re.compile(r"^\d+\.\s+")                       # fra-eng's senses: "1. imitate"
# Words of an item that are no part of the term: placeholders ("replace sth.") and abbreviations ("ed.").
_DROPPED = re.compile(r"(?<!\S)(?:\S+\.|sth|sb|one's|oneself)(?!\S)")
_NOT_TERMS = ("see:", "Synonym", "Note:", '"')          # lines after the translations: references, examples
# A verb's object or reflexive pronoun before it in a headword ("etw ersetzen", "sich verbinden"): the verb.
_OBJECTS = re.compile(r"^(?:(?:etw|jdn|jdm|jds|jdnetw|sich) )+")
_TERM = re.compile(rf"^[a-z]+(?: [a-z]+){{0,{MAX_TERM_WORDS - 1}}}$")
# A translation made of function words only ("une" -> a, one) would only widen the keyword side.
_ENGLISH_FUNCTION_WORDS = STOPWORDS["en"] | {"a", "an", "in", "one", "i", "me", "my", "we", "us", "he", "she",
                                             "him", "her", "his", "its", "them", "oneself", "yourself",
                                             "himself", "herself", "itself", "themselves", "ourselves"}


def folders() -> list[Path]:
    """Where dictionaries are looked for: MCP_NEXTCLOUD_DICTIONARIES when set, else the system's."""
    override = environ().get(DIRS_ENV, "").strip()
    return [Path(p) for p in override.split(os.pathsep) if p] if override else [Path(p) for p in SYSTEM_DIRS]


def source(lang: str) -> Path | None:
    """The `.index` file of `lang`'s dictionary into English (its `.dict.dz` beside it), or None."""
    name = NAMES.get(lang)
    if name is None:
        return None
    for folder in folders():
        index = folder / f"{name}.index"
        if index.is_file() and (folder / f"{name}.dict.dz").is_file():
            return index
    return None


def _number(text: str) -> int:
    n = 0
    for c in text:
        n = n * 64 + _B64[c]
    return n


def _body(index: Path) -> bytes:
    # In one call: gzip.open().read() grows its buffer by copies (twice the text's 100 MB at its peak).
    return gzip.decompress(index.with_name(index.name.replace(".index", ".dict.dz")).read_bytes())


def _fold(text: str) -> str:
    # fold_words' own result for ASCII text (most of the English side), at a tenth of its cost.
    return " ".join(text.lower().split()) if text.isascii() else fold_words(text)


def _entries(index: Path, body: bytes) -> Iterator[tuple[str, str]]:
    """(folded headword, entry text) of every one-word headword (phrases are not question words)."""
    with open(index, encoding="utf-8") as f:
        for line in f:
            head, _, rest = line.partition("\t")
            head = _OBJECTS.sub("", head)   # "etw ersetzen" is where ersetzen -> replace is
            if " " in head or head.startswith("00") or not rest:
                continue   # phrases, and the dictionary's own description (00-database-...)
            offset, _, length = rest.rstrip("\n").partition("\t")
            start = _number(offset)
            yield _fold(head), body[start:start + _number(length)].decode("utf-8", "replace")


def terms(entry: str) -> list[str]:
    """The English terms of one entry, in its order: the translation lines' items, notes stripped, folded."""
    out: list[str] = []
    for line in entry.split("\n")[1:]:   # line 0: the headword, its IPA and grammar
        if not line.strip() or line.startswith("   ") or line.lstrip().startswith(_NOT_TERMS):
            continue   # examples, synonyms, notes and references are indented or labelled
        for item in re.split(r"[,;]", _NOTES.sub(" ", _NUMBERED.sub("", line.strip()))):
            words = _fold(_DROPPED.sub(" ", item))
            words = words.removeprefix("to ") if words.startswith("to ") else words
            if _TERM.match(words):
                out.append(words)
    return out


_EXAMPLE = re.compile(rb'^ +".*?"  - (.*)$', re.M)   # an example line: "German"  - English


def english_usage(body: bytes) -> Counter[bytes]:
    """How often each English word occurs in the dictionary's examples: its own corpus of English (100 MB
    of examples tell "read" from "harvest" and "write" from "pen" without a word-frequency list)."""
    counts: Counter[bytes] = Counter()
    start = 0
    while start < len(body):   # in slices: the list of all its words at once took 300 MB
        end = body.find(b"\n", start + USAGE_SLICE) + 1 or len(body)
        counts.update(re.findall(rb"[a-z]+", b" ".join(_EXAMPLE.findall(body, start, end)).lower()))
        start = end
    return counts


# One entry of a headword, as much as ranking needs: its grammar and domain as bits (the entry's text is not
# kept: the German dictionary's is 100 MB, and a set per entry took 200 MB) and its English terms.
NOUN, VERB, ADJECTIVE, COMPUTING = 1, 2, 4, 8
_Sense = tuple[int, tuple[str, ...]]


def _sense(entry: str) -> _Sense:
    header, _, rest = entry.partition("\n")
    pos = set(re.findall(r"[a-z]+", (re.findall(r"<([^>]*)>", header) or [""])[0]))
    flags = (NOUN * ("n" in pos) | VERB * ("v" in pos) | ADJECTIVE * ("adj" in pos)
             | COMPUTING * ("[comp.]" in rest.partition("\n")[0]))
    return flags, tuple(terms(entry))


def _weight(flags: int, verb_too: bool) -> float:
    """How much one sense counts: a computing sense more (the documents searched are mostly a person's
    technical and office files: "Ausgabe" -> output before edition), a noun that is also a verb less (a
    nominalised verb's own senses are rare: "Lesen" -> picking, where "lesen" -> read)."""
    weight = 0.4 if verb_too and flags & NOUN and not flags & VERB else 1.0
    return weight + (1.0 if flags & COMPUTING else 0.0)


def _rank(senses: list[tuple[float, tuple[str, ...]]], common: Counter[bytes]) -> list[str]:
    """The terms of one headword's senses, best first: listed by more (and weightier) senses, commoner English
    (`common`: "read" before "harvest" for "lesen"), one word before two ("directory" before "file directory")."""
    score: dict[str, float] = defaultdict(float)
    for weight, sense in senses:
        for k, t in enumerate(dict.fromkeys(sense)):
            score[t] += weight * (1.0 if k == 0 else 0.7)   # a sense's first term is its main one

    def usage(t: str) -> float:   # a phrase is as common as its rarest word
        return min(math.log1p(common[w.encode()]) for w in t.split(" "))

    return sorted(score, key=lambda t: -(score[t] + 0.25 * usage(t) - 1.0 * t.count(" ")))


def _kind(senses: list[_Sense]) -> str:
    """What a headword can be: 'n' a noun only, else 'v' when it can be a verb and 'a' an adjective ("va",
    "a", "v"), '' none of these (an inflected form: "kopiert", "starts")."""
    if senses and all(flags & NOUN for flags, _ in senses):
        return "n"
    return ("v" if any(flags & VERB for flags, _ in senses) else "") + \
        ("a" if any(flags & ADJECTIVE for flags, _ in senses) else "")


def parse(index: Path) -> dict[str, tuple[list[str], str]]:
    """{folded headword: (its English terms best first, its kind: _kind)} of one dictionary."""
    body = _body(index)
    common = english_usage(body)
    by_head: dict[str, list[_Sense]] = defaultdict(list)
    for head, entry in _entries(index, body):
        by_head[head].append(_sense(entry))
    del body
    out: dict[str, tuple[list[str], str]] = {}
    for head, senses in by_head.items():
        kind = _kind(senses)
        weighted = [(_weight(flags, "v" in kind), found) for flags, found in senses if found]
        ranked = [t for t in _rank(weighted, common) if not set(t.split(" ")) <= _ENGLISH_FUNCTION_WORDS]
        if ranked:
            out[head] = (ranked[:KEPT], kind)
    return out


def cache_file(index: Path) -> Path:
    """Where the table of the dictionary `index` is kept: named by the file's size and mtime, so an
    upgraded dictionary (or a new parsing, CACHE_VERSION) gets a new table."""
    st = index.stat()
    return user_dir("cache") / "dictionaries" / f"{index.stem}-{st.st_size}-{st.st_mtime_ns}-v{CACHE_VERSION}.db"


def build(index: Path, lang: str, path: Path) -> None:
    """Parse `index` and write its table to `path` (whole or not at all: written aside, then renamed)."""
    from mcp_nextcloud.indexer.search.wordforms import _stemmer

    stemmer = _stemmer(lang)
    table = parse(index)
    heads = list(table)
    stems = stemmer.stemWords(heads) if stemmer is not None else heads
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        con = apsw.Connection(str(aside))
        with con:
            con.execute("CREATE TABLE words(word TEXT PRIMARY KEY, stem TEXT NOT NULL, en TEXT NOT NULL,"
                        " kind TEXT NOT NULL) WITHOUT ROWID")
            con.executemany("INSERT INTO words VALUES (?, ?, ?, ?)", ((h, s, "|".join(table[h][0]), table[h][1])
                                                                      for h, s in zip(heads, stems, strict=True)))
            con.execute("CREATE INDEX by_stem ON words(stem)")
        con.close()
        os.replace(aside, path)
    finally:
        aside.unlink(missing_ok=True)   # a failed build leaves nothing behind
