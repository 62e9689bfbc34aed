"""The order of meaning hits with less of the language in it (issue 36, cross-language questions).

multilingual-e5-small places text of one language near other text of that language, whatever it is about:
a German question about Python drew German Debian pages above the English Python page it asked about
(semantic.py's "known limit"). Each language's vectors share a component (their mean), so removing a share of
it leaves more of the subject (Libovický, Rosa and Fraser 2020, "On the language neutrality of pre-trained
multilingual representations": centering per language). Here:

- a window's vector loses SHARE of the mean vector of its file's language's windows (files.lang, its first
  language; a language with fewer than MIN_WINDOWS windows, or none, uses the mean of all windows);
- a question's vector loses SHARE of the mean of all windows (a question is too short to tell its language);
- the cosine of the two (both normalised again) orders the windows and files.

These cosines order; the plain cosines still decide what is close (semantic.FLOOR, CLOSE and the score
scale were calibrated on them, and an index too small to have a language's mean has only them). Nothing
is stored: each row keeps its norm after the shift and its dot with the question's shift, so the centred
cosines come from the plain ones at the cost of one product with the few language means (no second matrix).

Measured on the relevance set (benchmarks/test_relevance_bench.py), the closest meaning files alone: the
answering file in the top 3 for 78 % of the 41 questions before, 85 % after (SHARE chosen on the even half:
0.81 -> 0.95; the held-out odd half 0.70 -> 0.75).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from mcp_nextcloud.indexer.store.schema import CHUNK_BITS

SHARE = 0.7          # of the mean taken away (0.4-0.8 measured: 0.5 -> top 3 0.81, 0.7 -> 0.85, 0.8 -> 0.83)
MIN_WINDOWS = 50     # a language with fewer windows has no mean of its own; an index with none is not centred
CLOSE = 0.40         # semantic.CLOSE's part on these cosines (0.40-0.50 measured: 0.45 fewer hits, one right file less)
MARGIN = 0.05        # files within this centred cosine of the first are kept (0.03-0.12 measured)


class Centering(NamedTuple):
    """What the centred cosines of an index's windows are computed from (one float per row, a few means)."""

    means: np.ndarray        # float32 (languages + 1, DIM): the overall mean first, then each language's
    row_mean: np.ndarray     # int (n,): each window's row of `means`
    norms: np.ndarray        # float32 (n,): |v - SHARE * its mean|
    dots: np.ndarray         # float32 (n,): v . shift
    shift: np.ndarray        # float32 (DIM,): SHARE * the overall mean, what a question's vector loses


def of(con: Any, ids: np.ndarray, vecs: np.ndarray) -> Centering | None:
    """The centering of these windows (rowids, normalised vectors), or None when no language has MIN_WINDOWS."""
    if not len(ids):
        return None
    langs = {int(fid): (lang or "").split(",")[0] for fid, lang in con.execute("SELECT id, lang FROM files")}
    owner_lang = np.array([langs.get(int(rid) >> CHUNK_BITS, "") for rid in ids.tolist()])
    means, row_mean = [vecs.mean(axis=0)], np.zeros(len(ids), dtype=np.int64)
    for lang in sorted(set(owner_lang.tolist()) - {""}):
        rows = owner_lang == lang
        if int(rows.sum()) >= MIN_WINDOWS:
            row_mean[rows] = len(means)
            means.append(vecs[rows].mean(axis=0))
    if len(means) == 1:
        return None
    table = np.asarray(means, dtype=np.float32)
    shift = (SHARE * table[0]).astype(np.float32)
    norms = np.linalg.norm(vecs - SHARE * table[row_mean], axis=1).astype(np.float32)
    return Centering(table, row_mean, np.where(norms == 0, 1.0, norms).astype(np.float32),
                     (vecs @ shift).astype(np.float32), shift)


def cosines(c: Centering | None, plain: np.ndarray, question: np.ndarray) -> np.ndarray:
    """The centred cosines of every window from their plain ones (`plain` = vecs @ question)."""
    if c is None:
        return plain
    shifted = question - c.shift
    size = float(np.linalg.norm(shifted)) or 1.0
    per_mean = c.means @ shifted
    # (v - a*mu) . (q - s) = v.q - v.s - a * mu.(q - s), over both norms
    return (plain - c.dots - SHARE * per_mean[c.row_mean]) / (size * c.norms)
