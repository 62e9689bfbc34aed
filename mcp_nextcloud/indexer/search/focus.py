"""A file about the query's words ranks above a long one that mentions them in a few places.

bm25 ranks chunks (~3k characters) and a file takes its best chunk's rank, so a whole book holding one
chapter on backups (debian-reference.de.txt: 1.3 M characters, a few hundred chunks) ranks with the
handbook's page on them, and, being the same book, once more as its PDF. A page about a subject holds its
words in many of its few chunks; a book in a few of its many. So within a tier each chunk's bm25 is scaled
by 1 + FOCUS x its file's focus: the share of the file's chunks that match (the matching chunks the scan
walked, over the file's characters in chunks of chunking.TARGET; at most 1). Like the name boost
(titles.py) it reorders within a tier, never across tiers.

Measured on the relevance set (benchmarks/test_relevance_bench.py, 48 keyword queries): nDCG@10 0.805 ->
0.857 and MRR 0.876 -> 0.933 (Recoll: 0.800, 0.867); FOCUS 0.1-0.5 all give 0.842-0.857, and both halves
of the set gain (even 0.795 -> 0.870, odd 0.815 -> 0.843).
"""
from __future__ import annotations

from collections import Counter

import apsw

from mcp_nextcloud.indexer.store.chunking import TARGET

FOCUS = 0.3


def _sizes(con: apsw.Connection) -> dict[int, int]:
    """Each file's characters, read once per index version (the vocabulary cache's life)."""
    from mcp_nextcloud.indexer.search.vocabulary import _VOCAB

    cache = _VOCAB.of(con)
    if ("sizes",) not in cache:
        cache[("sizes",)] = {int(i): int(c or 0) for i, c in con.execute("SELECT id, chars FROM docs")}
    sizes: dict[int, int] = cache[("sizes",)]
    return sizes


def factors(con: apsw.Connection, matching: Counter[int], fids: set[int]) -> dict[int, float]:
    """The bm25 factor of each of `fids` (1 + FOCUS x its focus) from `matching`, its matching chunks walked."""
    sizes = _sizes(con)
    return {fid: 1.0 + FOCUS * min(1.0, matching[fid] * TARGET / max(TARGET, sizes.get(fid, TARGET)))
            for fid in fids}
