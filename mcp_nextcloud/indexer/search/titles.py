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

NAME_BOOST = 1.0
MIN_WORD = 3
_WORDS = re.compile(r"[a-z0-9]+")


def boost(con: Any, tokens: list[str]) -> Callable[[set[int]], dict[int, float]] | None:
    """A function giving each of a set of file ids its bm25 factor (files not named: absent), or None."""
    words = sorted({t for t in tokens if len(t) >= MIN_WORD})
    if not words:
        return None
    known: dict[int, float] = {}

    def factors(fids: set[int]) -> dict[int, float]:
        todo = [f for f in fids if f not in known]
        for k in range(0, len(todo), 500):
            part = todo[k:k + 500]
            marks = ",".join("?" * len(part))
            for fid, path in con.execute(f"SELECT id, path FROM files WHERE id IN ({marks})", part):
                name = str(path).rsplit("/", 1)[-1]
                named = _WORDS.findall(fold_words(name).lower())
                share = sum(1 for w in words if any(n.startswith(w) for n in named)) / len(words)
                known[int(fid)] = 1.0 + NAME_BOOST * share
        return {f: known[f] for f in fids if known.get(f, 1.0) != 1.0}

    return factors
