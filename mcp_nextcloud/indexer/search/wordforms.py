"""Word forms: the indexed words that share a query word's Snowball stem ("running" -> "runs", "run").

Why at query time, over the vocabulary: the index keeps its C tokenizer
(a Python stemming tokenizer would cut the build rate ~10x, see the apsw
notes) and an index built before word forms needs no rebuild. A query word
is stemmed in each language the index's documents are in (files.lang,
indexer/store/language.py; every supported language when some files
predate detection); the indexed words starting with the stem's longest
prefix shared with the word are read from the vocabulary (at most
FORM_SCAN) and those with the same stem in one of those languages are its
forms. grep ranks them in a tier of their own after the word-start tiers,
so a query's former hits keep their places and forms only add hits.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from mcp_nextcloud.indexer.store.language import STEMMERS

if TYPE_CHECKING:   # types only
    import apsw

MIN_STEM = 3        # a shared prefix shorter than this would read half the vocabulary
FORM_SCAN = 400     # indexed words read per stem prefix (alphabetical); forms past it are missed
MAX_FORMS = 24      # forms kept per word (each is a term FTS5 ORs in)
ENABLED = True      # read at call time: the benchmark times grep with and without word forms in one run


class StemmerLike(Protocol):
    """What we use of PyStemmer's Stemmer.Stemmer (the package ships no type information)."""

    def stemWord(self, word: str) -> str: ...   # noqa: N802 - PyStemmer's names

    def stemWords(self, words: Sequence[str]) -> list[str]: ...   # noqa: N802


@functools.cache
def _stemmer(lang: str) -> StemmerLike | None:
    """The Snowball stemmer of `lang`, or None when PyStemmer is not installed (word forms then off)."""
    try:
        import Stemmer
    except ImportError:
        return None
    stemmer: StemmerLike = Stemmer.Stemmer(STEMMERS[lang], 0)   # maxCacheSize 0: we cache per query ourselves
    return stemmer


def available() -> bool:
    """Whether word forms can be matched here (PyStemmer installed)."""
    return _stemmer("en") is not None


def index_languages(con: apsw.Connection) -> list[str]:
    """The stemmer languages of the index's documents; all of them while a file predates detection.

    A file indexed before schema v5 has lang NULL and may be in any language;
    a file whose text had no clear language has '' and adds none.
    """
    from mcp_nextcloud.indexer.search.vocabulary import _VOCAB

    cache = _VOCAB.of(con)
    if ("langs",) not in cache:
        found = {r[0] for r in con.execute("SELECT DISTINCT lang FROM files WHERE status='indexed'")}
        named = {lang for value in found if value for lang in value.split(",")}   # "en,fr": a bilingual file
        cache[("langs",)] = sorted(STEMMERS) if None in found else sorted(named & STEMMERS.keys())
    langs: list[str] = cache[("langs",)]
    return langs


def stems(word: str, langs: list[str]) -> dict[str, str]:
    """{language: stem of `word`} for each language whose stemmer is installed."""
    out = {}
    for lang in langs:
        st = _stemmer(lang)
        if st is not None:
            out[lang] = st.stemWord(word)
    return out


def _shared_prefix(word: str, stem: str) -> str:
    n = 0
    while n < min(len(word), len(stem)) and word[n] == stem[n]:
        n += 1
    return word[:n]


def forms_of(con: apsw.Connection, word: str, langs: list[str]) -> list[str]:
    """Indexed words other than `word` with its stem in one of `langs` (at most MAX_FORMS); cached like the
    vocabulary (until the index changes): stemming FORM_SCAN words per language costs ~1 ms."""
    from mcp_nextcloud.indexer.search.vocabulary import _VOCAB

    cache = _VOCAB.of(con)
    key = ("forms", word, tuple(langs))
    if key not in cache:
        cache[key] = _forms(con, word, langs)
    found: list[str] = cache[key]
    return found


def _forms(con: apsw.Connection, word: str, langs: list[str]) -> list[str]:
    from mcp_nextcloud.indexer.search.vocabulary import words_starting

    by_lang = stems(word, langs)
    if not by_lang:
        return []
    # One letter less than the stem shares with the word: stemmers rewrite a stem's last letter
    # ("happy" -> "happi", "burying" -> "buri"), so the forms may not start with the whole stem.
    shared = min((_shared_prefix(word, s) for s in by_lang.values()), key=len)
    prefix = shared[:-1] if len(shared) > MIN_STEM else shared
    if len(prefix) < MIN_STEM:
        return []
    candidates, _ = words_starting(con, prefix, FORM_SCAN)
    out: list[str] = []
    for lang, stem in by_lang.items():
        others = [w for w in candidates if w != word and w not in out]
        st = _stemmer(lang)
        if st is None:      # not reached: stems() names only the languages whose stemmer is installed
            continue
        for w, s in zip(others, st.stemWords(others), strict=True):
            if s == stem:
                out.append(w)
    return sorted(out, key=lambda w: (len(w), w))[:MAX_FORMS]


def add_forms(con: apsw.Connection, pq: Any) -> None:   # a query.ParsedQuery (query.py imports this module)
    """Fill `forms` of every unquoted one-token term of the query (negated terms keep their own forms)."""
    if not ENABLED:
        return
    langs = index_languages(con)
    for g in pq.groups:
        for t in g:
            if t.exact or len(t.tokens) != 1 or len(t.tokens[0]) < MIN_STEM:
                continue
            known = set(t.words or [])
            t.forms = [w for w in forms_of(con, t.tokens[0], langs) if w not in known]
