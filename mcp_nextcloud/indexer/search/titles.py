"""A file whose name or title says what the query asks for ranks higher: `sect.backup.html` for "backup".

bm25 ranks chunks (~3k characters) and a file takes its best chunk's rank, so a whole book that mentions a
word in passing often outranks the page about it. A person's file names carry the subject (a manual's
section pages, `json.html`, `firewall-setup.html`), and so does a document's title, its first top-level
heading (files.title), in the document's own language where the name is not ("14.2. Firewall oder Paketfilter"
in sect.firewall-packet-filtering.html). So within a tier a file whose name or title holds the query's
words (at word starts, folded) has its bm25 scaled by 1 + NAME_BOOST x the share of the query's words in
them. Measured on the relevance benchmark (benchmarks/test_relevance_bench.py): the title took nDCG@10
0.857 -> 0.872 and MRR 0.933 -> 0.951.
"""
from __future__ import annotations

import bisect
import re
from collections import Counter
from typing import Callable, NamedTuple

import apsw

from mcp_nextcloud.reader.normalize import fold_words

NAME_BOOST = 2.0     # relevance set nDCG: 0.5 -> 0.756, 1.0 -> 0.784, 2.0 -> 0.805; with focus.py 0.822, 0.852, 0.857
MIN_WORD = 3
_WORDS = re.compile(r"[a-z0-9]+")


class _NameWords(NamedTuple):
    """The folded words of every file's name and title, sorted, with the files each is in (prefix lookups)."""

    words: list[str]
    files: dict[str, frozenset[int]]


def _name_words(con: apsw.Connection) -> _NameWords:
    """Read once per index version (the vocabulary cache's life)."""
    from mcp_nextcloud.indexer.search.vocabulary import _VOCAB

    cache = _VOCAB.of(con)
    if ("names",) not in cache:
        files: dict[str, set[int]] = {}
        for fid, path, title in con.execute("SELECT id, path, title FROM files"):
            said = f"{str(path).rsplit('/', 1)[-1]} {title or ''}"
            for word in _WORDS.findall(fold_words(said).lower()):
                files.setdefault(word, set()).add(int(fid))
        cache[("names",)] = _NameWords(sorted(files), {w: frozenset(f) for w, f in files.items()})
    named: _NameWords = cache[("names",)]
    return named


def _named_with(names: _NameWords, word: str) -> set[int]:
    """The files with a name word starting with `word`: a bisect into the sorted words, not a walk of every file
    (at 10k files the walk was 40 % of a one-word grep)."""
    out: set[int] = set()
    i = bisect.bisect_left(names.words, word)
    while i < len(names.words) and names.words[i].startswith(word):
        out |= names.files[names.words[i]]
        i += 1
    return out


def boost(con: apsw.Connection, tokens: list[str]) -> Callable[[set[int]], dict[int, float]] | None:
    """A function giving each of a set of file ids its bm25 factor (files not named: absent), or None."""
    words = sorted({t for t in tokens if len(t) >= MIN_WORD})
    if not words:
        return None
    names = _name_words(con)
    shares: Counter[int] = Counter()
    for w in words:
        shares.update(_named_with(names, w))
    if not shares:
        return None
    factor = {fid: 1.0 + NAME_BOOST * n / len(words) for fid, n in shares.items()}

    def factors(fids: set[int]) -> dict[int, float]:
        return {fid: factor[fid] for fid in fids & factor.keys()}

    return factors
