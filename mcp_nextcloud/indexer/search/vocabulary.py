"""The index's vocabulary as grep asks it: which indexed words start with a prefix, cached per connection.

Apart from the query parser (query.py) and the word forms (wordforms.py), which both ask it: neither imports
the other for it.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any

import apsw

MAX_EXPANSION = 64       # indexed words a word may expand to (the first ones in alphabetical order)


# One connection's memo, shared by several lookups: the first item of a key names its kind ("starting", "langs",
# "embedded", ...) and each kind holds its own value type, which the reader declares where it reads (a
# heterogeneous map has no one value type short of a typed-key registry).
VocabMemo = dict[tuple[Any, ...], Any]


class _VocabularyCache:
    """Vocabulary answers of one connection, dropped whenever the index changed (PRAGMA data_version).

    A vocabulary lookup costs about a millisecond at 10k documents (fts5vocab
    opens every segment), and agents repeat and refine queries.
    """

    MAX_ENTRIES = 4096

    def __init__(self) -> None:
        # Keyed by the connection itself, held weakly: an id() is reused once a connection is gone, and a new
        # connection (to another index) starts at the same data_version, so id-keyed answers leaked across.
        self.by_con: weakref.WeakKeyDictionary[apsw.Connection, tuple[int, VocabMemo]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def of(self, con: apsw.Connection) -> VocabMemo:
        value = con.execute("PRAGMA data_version").fetchall()[0][0]
        version = value if isinstance(value, int) else -1
        with self._lock:
            held = self.by_con.get(con)
            if held is None or held[0] != version or len(held[1]) > self.MAX_ENTRIES:
                fresh: VocabMemo = {}
                self.by_con[con] = (version, fresh)
                return fresh
            return held[1]


_VOCAB = _VocabularyCache()


def words_starting(con: apsw.Connection, prefix: str, limit: int = MAX_EXPANSION) -> tuple[list[str], bool]:
    """Indexed words that start with `prefix` (itself first when indexed), at most `limit`; and if capped.

    fts5vocab with a range on `term` walks only the terms in the range; each
    row's counts cost a walk of that term's postings, so the LIMIT bounds it.
    """
    cache = _VOCAB.of(con)
    key = ("starting", prefix, limit)
    if key not in cache:
        rows = [r[0] for r in con.execute("SELECT term FROM chunks_vocab WHERE term >= ? AND term < ? LIMIT ?",
                                          [prefix, prefix + "\U0010ffff", limit + 1])]
        cache[key] = (rows[:limit], len(rows) > limit)
    answer: tuple[list[str], bool] = cache[key]
    return answer


COMPOUND_PART = 5        # letters each part of a compound has at least ("foot"+"ball", "vita"+"mine" are no compounds)
_LINKS = ("", "s", "es", "n", "en", "e")   # German linking letters between a compound's parts (Zufall-s-bytes)


def compound_of_indexed(con: apsw.Connection, word: str) -> tuple[str, str] | None:
    """The (head, tail) of `word` read as a compound of indexed words, or None: the head an indexed word
    (with a linking letter or two: "zufalls" + "bytes"), the tail the start of one ("kontext" + "manager").

    A German question names things by compounds the files may never hold whole ("Zufallsbytes",
    "Kontextmanager") while they hold each part; such a word is not a subject the files never mention.
    Both parts COMPOUND_PART letters or more; lookups are cached like every vocabulary answer.
    """
    for cut in range(COMPOUND_PART, len(word) - COMPOUND_PART + 1):
        tail = word[cut:]
        for link in _LINKS:
            head = word[:cut - len(link)]
            if len(head) < COMPOUND_PART or not word[:cut].endswith(link):
                continue
            first, _ = words_starting(con, head, 1)
            if first and first[0] == head and words_starting(con, tail, 1)[0]:
                return head, tail
    return None
