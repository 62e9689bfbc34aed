"""A German or French question word's likely English terms, for the keyword side of a cross-language question.

Why: the meaning model is weak across languages and no word of "Wie lese ich Umgebungsvariablen aus?"
occurs in the English page that answers it (os.environ); "environment variable" does. The words come from
bilingual dictionaries (dictionaries.py), optional like Tesseract: without them every answer here is [] and
status() says what to install. A word is looked up as given; a lowercase German word as a verb's or an
adjective's form ("lese" -> lesen, read: the question's "ich lese", not the noun "Lese"; "externes" -> extern);
else by its Snowball stem ("Umgebungsvariablen" -> Umgebungsvariable); else, in German, as a compound of known
words ("Kontextmanager" -> Kontext + Manager). Terms spelt like the word come first (cognates: "Kontext" ->
context before matrix).
Words and terms are folded as the index folds them (reader/normalize.fold_words).
"""
from __future__ import annotations

import difflib
import functools
import logging
import threading
from pathlib import Path

import apsw

from mcp_nextcloud.environment import user_dir
from mcp_nextcloud.indexer.search import dictionaries
from mcp_nextcloud.indexer.search.wordforms import _stemmer
from mcp_nextcloud.reader.normalize import fold_words

MAX_PER_WORD = 3         # English terms per question word: each one more is a term the keyword side ORs in
ADJECTIVE_ENDINGS = ("es", "en", "em", "er", "e")   # German adjective endings, longest first
MAX_STEM_GAP = 2         # a headword sharing the stem is this much longer or shorter at most (not "utilisateur")
COGNATE = 0.8           # difflib similarity of a word and an English term that makes the term a cognate
MIN_PART = 4             # a compound's parts are at least this long ("Zufallszahl": zufall + zahl)
MISSING = ("no bilingual dictionaries: German and French questions are not translated for English documents' "
           f"words; install them (Debian/Ubuntu: apt-get install {dictionaries.PACKAGES})")

_LOCK = threading.Lock()
_FAILED: dict[str, str] = {}   # a dictionary's index file -> why it could not be read (for status())
log = logging.getLogger(__name__)


def available(lang: str | None = None) -> bool:
    """Whether `lang`'s dictionary into English (any of them when None) is installed here."""
    langs = [lang] if lang else list(dictionaries.NAMES)
    return any(dictionaries.source(x) is not None for x in langs)


def status() -> str:
    """One line for status output: which languages are translated, from where, or what to install."""
    found = {lang: dictionaries.source(lang) for lang in dictionaries.NAMES}
    have = {lang: path for lang, path in found.items() if path is not None}
    if not have:
        return MISSING
    where = sorted({str(path.parent) for path in have.values()})
    failed = "".join(f"; {lang} unreadable ({_FAILED[str(path)]})" for lang, path in sorted(have.items())
                     if str(path) in _FAILED)
    return (f"question words translated into English from {', '.join(sorted(have))} "
            f"(FreeDict, {', '.join(where)}){failed}")


def ready(lang: str) -> bool:
    """Whether `lang`'s table is built, so a lookup costs microseconds. When it is not, its build starts in a
    background thread, once per process: the build takes seconds of CPU and ~260 MB, once per machine, and
    never on a question's way (that question is answered untranslated)."""
    index = dictionaries.source(lang)
    if index is None:
        return False
    if dictionaries.cache_file(index).exists():
        return True
    with _STARTED_LOCK:
        if lang not in _STARTED:
            _STARTED.add(lang)
            threading.Thread(target=prepare, args=(lang,), name=f"dictionary-{lang}", daemon=True).start()
    return False


_STARTED: set[str] = set()
_STARTED_LOCK = threading.Lock()


def prepare(lang: str | None = None) -> None:
    """Build the dictionaries' tables now (seconds, once per dictionary file), off a question's way."""
    for x in [lang] if lang else list(dictionaries.NAMES):
        _table(x)


def _table(lang: str) -> str | None:
    """The file of `lang`'s table (built first when it is not cached yet), or None without a dictionary."""
    return _table_in(lang, tuple(dictionaries.folders()), str(user_dir("cache")))


@functools.lru_cache(maxsize=64)
def _table_in(lang: str, folders: tuple[Path, ...], cache: str) -> str | None:
    # Cached per folders, as ocr.engine() is per process: a dictionary installed later is seen on restart,
    # and a lookup costs no file system call.
    index = dictionaries.source(lang)
    if index is None:
        return None
    path = dictionaries.cache_file(index)
    with _LOCK:   # one build per process; a second thread waits for it rather than parsing again
        if not path.exists():
            try:
                dictionaries.build(index, lang, path)
            except (OSError, EOFError, ValueError, KeyError, apsw.Error) as e:
                # A damaged dictionary or a full disk: said once (this answer is cached), never a failed search.
                _FAILED[str(index)] = f"{index.name}: {type(e).__name__}: {e}"[:200]
                log.warning("the %s dictionary is not used: %s", lang, _FAILED[str(index)])
                return None
    return str(path)


@functools.cache
def _open(path: str) -> apsw.Connection:
    # One read-only connection per table and process: apsw serialises its use across threads.
    return apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)


def _row(con: apsw.Connection, word: str) -> tuple[list[str], str] | None:
    for en, kind in con.execute("SELECT en, kind FROM words WHERE word = ?", (word,)):
        return str(en).split("|"), str(kind)
    return None


def _by_stem(con: apsw.Connection, word: str, lang: str, cased: bool) -> list[str]:
    """The terms of the headword sharing `word`'s stem that is its base form: a German noun's shortest noun
    ("Umgebungsvariablen" -> Umgebungsvariable), a lowercase German word's verb ("starte" -> starten, not
    Start or starts), else the headword closest in length."""
    stemmer = _stemmer(lang)
    if stemmer is None:
        return []
    rows = [r for r in con.execute("SELECT word, en, kind FROM words WHERE stem = ? LIMIT 32",
                                   (stemmer.stemWord(word),)) if abs(len(r[0]) - len(word)) <= MAX_STEM_GAP]
    if lang == "de" and cased:     # a German noun: its singular ("Zufallszahlen" -> random number)
        ranked = sorted(rows, key=lambda r: (r[2] != "n", len(r[0]), r[0]))
    else:                          # a lowercase German word: a verb's form first, a noun last
        verbal = lang == "de"
        ranked = sorted(rows, key=lambda r: (verbal and "v" not in r[2], verbal and r[2] == "n",
                                             abs(len(r[0]) - len(word)), len(r[0]), r[0]))
    return str(ranked[0][1]).split("|") if ranked else []


def _known(con: apsw.Connection, word: str, lang: str, cased: bool) -> list[str]:
    """`word`'s terms as a headword or by its stem, cognates first; [] when neither is known. A lowercase
    German word that is a noun headword is a verb or adjective form first ("lese": ich lese -> lesen, read;
    not "Lese")."""
    return _cognates_first(word, _terms(con, word, lang, cased))


def _cognates_first(word: str, terms: list[str]) -> list[str]:
    """`terms` with those spelt like `word` first: in technical words a cognate is the likely sense
    ("Kontext" -> context before matrix, "Format" -> format before size, "Konsole" -> console)."""
    def like(t: str) -> bool:
        return difflib.SequenceMatcher(None, word, t.replace("c", "k")).ratio() >= COGNATE or \
            difflib.SequenceMatcher(None, word, t).ratio() >= COGNATE
    return sorted(terms, key=lambda t: not like(t))


def _terms(con: apsw.Connection, word: str, lang: str, cased: bool) -> list[str]:
    """See _known (without the cognates' order)."""
    own = _row(con, word)
    if lang == "de" and not cased:
        if own is not None and own[1] != "n":
            return own[0]
        # An inflected adjective ("externes", "sichere"): its stem is not its base's ("extern" -> "ext").
        for ending in ADJECTIVE_ENDINGS:
            adj = _row(con, word[:-len(ending)]) if word.endswith(ending) and len(word) > len(ending) + 2 else None
            if adj is not None and "a" in adj[1]:
                return adj[0]
    elif own is not None:
        singular = _by_stem(con, word, lang, cased) if lang == "de" else []
        # A plural headword gives plural terms ("Zufallszahlen" -> random numbers): its singular's are
        # the base forms a word-start search also finds the plural with.
        return singular if singular and _plural(own[0][0], singular[0]) else own[0]
    return _by_stem(con, word, lang, cased)


def _plural(term: str, singular: str) -> bool:
    return term != singular and term in (singular + "s", singular + "es", singular[:-1] + "ies")


def _single(terms: list[str]) -> list[str]:
    return [t for t in terms if " " not in t]


def _compound(con: apsw.Connection, word: str, lang: str, limit: int) -> list[str]:
    """A German compound's terms: its longest known last part after a known first part (a linking 's'
    dropped: "Umgebungs|variable"), as "first last" phrases of their best one-word terms."""
    for cut in range(MIN_PART, len(word) - MIN_PART + 1):
        last = _single(_known(con, word[cut:], lang, cased=True))
        if not last:
            continue
        first = _single(_known(con, word[:cut], lang, cased=True))
        if not first and word[cut - 1] == "s" and cut - 1 >= MIN_PART:
            first = _single(_known(con, word[:cut - 1], lang, cased=True))
        if first:
            pairs = sorted(((a, b) for b in last[:2] for a in first[:2]),
                           key=lambda p: last.index(p[1]) + first.index(p[0]))
            return [f"{a} {b}" for a, b in pairs][:limit]
    return []


@functools.lru_cache(maxsize=4096)
def _english(table: str, word: str, lang: str, cased: bool, limit: int) -> tuple[str, ...]:
    con = _open(table)
    found = _known(con, word, lang, cased) or (_compound(con, word, lang, limit) if lang == "de" else [])
    return tuple(found[:limit])


def english_words(word: str, lang: str, limit: int = MAX_PER_WORD) -> list[str]:
    """The few likeliest English terms for a German ("de") or French ("fr") word, best first, folded as the
    index folds words; a term may be two words ("environment variable"). [] when the word is unknown or the
    language's dictionary is not installed. A capitalised German word is taken as a noun ("Lese" -> harvest),
    a lowercase one ending in -e may be a verb form ("lese" -> read)."""
    folded = fold_words(word)
    table = _table(lang) if lang in dictionaries.NAMES and len(folded) > 1 and " " not in folded else None
    return list(_english(table, folded, lang, word[:1].isupper(), limit)) if table else []


def translate_terms(words: list[str], lang: str, max_per_word: int = MAX_PER_WORD) -> dict[str, list[str]]:
    """{word: its English terms} for the words of `words` that have some (see english_words)."""
    out = {}
    for w in words:
        found = english_words(w, lang, max_per_word)
        if found:
            out[w] = found
    return out
