"""A file whose name says what the query asks for ranks higher: `sect.backup.html` for "backup".

bm25 ranks chunks (~3k characters) and a file takes its best chunk's rank, so a whole book that mentions a
word in passing often outranks the page about it. A person's file names carry the subject (a manual's
section pages, `json.html`, `firewall-setup.html`), so within a tier a file whose name holds the query's
words (at word starts, folded) has its bm25 scaled by 1 + NAME_BOOST x the share of the query's words in
its name. Measured on the relevance benchmark (benchmarks/test_relevance_bench.py).
"""
from __future__ import annotations

import re
from typing import Any, Callable

from mcp_nextcloud.reader.normalize import fold_words

NAME_BOOST = 2.0     # measured on the relevance set: 0.5 -> nDCG 0.756, 1.0 -> 0.784, 2.0 -> 0.805
MIN_WORD = 3
_WORDS = re.compile(r"[a-z0-9]+")


def _names(con: Any) -> dict[int, tuple[str, ...]]:
    """{file id: the folded words of its name}, read once per index version (the vocabulary cache's life)."""
    from mcp_nextcloud.indexer.search.vocabulary import _VOCAB

    cache = _VOCAB.of(con)
    if ("names",) not in cache:
        cache[("names",)] = {int(fid): tuple(_WORDS.findall(fold_words(str(path).rsplit("/", 1)[-1]).lower()))
                             for fid, path in con.execute("SELECT id, path FROM files")}
    names: dict[int, tuple[str, ...]] = cache[("names",)]
    return names


def boost(con: Any, tokens: list[str]) -> Callable[[set[int]], dict[int, float]] | None:
    """A function giving each of a set of file ids its bm25 factor (files not named: absent), or None."""
    words = sorted({t for t in tokens if len(t) >= MIN_WORD})
    if not words:
        return None
    names = _names(con)

    def factors(fids: set[int]) -> dict[int, float]:
        out: dict[int, float] = {}
        for fid in fids:
            named = names.get(fid, ())
            share = sum(1 for w in words if any(n.startswith(w) for n in named)) / len(words)
            if share:
                out[fid] = 1.0 + NAME_BOOST * share
        return out

    return factors
