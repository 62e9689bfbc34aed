"""The order of meaning hits with less of the language in it (issue 36, cross-language questions).

multilingual-e5-small places text of one language near other text of that language, whatever it is about:
a German question about Python drew German Debian pages above the English Python page it asked about
(semantic.py's "known limit"). Each language's vectors share a component (their mean), so removing a share of
it leaves more of the subject (Libovický, Rosa and Fraser 2020, "On the language neutrality of pre-trained
multilingual representations": centering per language). Here:

- a window's vector loses SHARE of the mean vector of its file's language's windows (files.lang, its first
  language). A language with fewer than MIN_WINDOWS windows has no mean of its own: one the model's reference
  means know (REFERENCE, see below) is given the index's mean moved by how far that language's reference
  mean lies from the reference means of the index's own mix of languages; any other, or none, uses the
  mean of all windows;
- a question's vector loses SHARE of the mean of all windows (a question is too short to tell its language);
- the cosine of the two (both normalised again) orders the windows and files.

These cosines order; the plain cosines still decide what is close (semantic.FLOOR, CLOSE and the score
scale were calibrated on them, and an index too small to have a language's mean has only them). Nothing
is stored: each row keeps its norm after the shift and its dot with the question's shift, so the centred
cosines come from the plain ones at the cost of one product with the few language means (no second matrix).

Measured on the relevance set (benchmarks/test_relevance_bench.py), the closest meaning files alone: the
answering file in the top 3 for 78 % of the 41 questions before, 85 % after (SHARE chosen on the even half:
0.81 -> 0.95; the held-out odd half 0.70 -> 0.75).

The reference means (REFERENCE, written by `python3 -m benchmarks.language_means`) are the mean window
vectors per language of the relevance corpus (1,550 Debian and Python documents in English, German and
French): a property of the model, not of an index. An index of a few German and French notes beside many
English files (issue 24's recall corpus: 5 + 5 files, English the only language with its own mean) kept the
language in their vectors, and a German question drew them above the English file answering it: recall@10
there 22 of 30 without the reference means, 27 with them. Held out (reference means from the relevance
corpus's files of even id; its odd ones with German and French cut under MIN_WINDOWS, 20 random draws):
the answering file in the top 3 by centred cosine 472 -> 499 of 760. The paper's centroids come from a
reference corpus too. An index where no language has MIN_WINDOWS is still not centred, and the relevance
set's languages all have their own means, so its figures do not move.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import NamedTuple

import apsw
import numpy as np
from numpy.typing import NDArray

from mcp_nextcloud.indexer.store.schema import CHUNK_BITS

SHARE = 0.7          # of the mean taken away (0.4-0.8 measured: 0.5 -> top 3 0.81, 0.7 -> 0.85, 0.8 -> 0.83)
MIN_WINDOWS = 50     # a language with fewer windows has no mean of its own; an index with none is not centred
CLOSE = 0.40         # semantic.CLOSE's part on these cosines (0.40-0.50 measured: 0.45 fewer hits, one right file less)
MARGIN = 0.05        # files within this centred cosine of the first are kept (0.03-0.12 measured)
REFERENCE = Path(__file__).with_name("language_means.npz")   # the model's reference means (module docstring)
ALL = "_all"         # REFERENCE's mean of every window, what a window of a language it does not know counts as


class Centering(NamedTuple):
    """What the centred cosines of an index's windows are computed from (one float per row, a few means)."""

    means: NDArray[np.float32]     # float32 (languages + 1, DIM): the overall mean first, then each language's
    row_mean: NDArray[np.int64]    # int (n,): each window's row of `means`
    norms: NDArray[np.float32]     # float32 (n,): |v - SHARE * its mean|
    dots: NDArray[np.float32]      # float32 (n,): v . shift
    shift: NDArray[np.float32]     # float32 (DIM,): SHARE * the overall mean, what a question's vector loses


def of(con: apsw.Connection, ids: NDArray[np.int64], vecs: NDArray[np.float32],
       known: dict[str, NDArray[np.float32]] | None = None) -> Centering | None:
    """The centering of these windows (rowids, normalised vectors), or None when no language has MIN_WINDOWS.

    `known`: the reference means by language and ALL (default: the model's, REFERENCE)."""
    if not len(ids):
        return None
    owner_lang = window_languages(con, ids)
    means, row_mean = [vecs.mean(axis=0)], np.zeros(len(ids), dtype=np.int64)
    few = []
    for lang in sorted(set(owner_lang.tolist()) - {""}):
        rows = owner_lang == lang
        if int(rows.sum()) >= MIN_WINDOWS:
            row_mean[rows] = len(means)
            means.append(vecs[rows].mean(axis=0))
        else:
            few.append(lang)
    if len(means) == 1:
        return None
    ref = reference() if known is None else known
    for lang, mean in _borrowed_means(means[0], owner_lang, few, ref).items():
        row_mean[owner_lang == lang] = len(means)
        means.append(mean)
    table = np.asarray(means, dtype=np.float32)
    shift = (SHARE * table[0]).astype(np.float32)
    norms = np.linalg.norm(vecs - SHARE * table[row_mean], axis=1).astype(np.float32)
    return Centering(table, row_mean, np.where(norms == 0, 1.0, norms).astype(np.float32),
                     (vecs @ shift).astype(np.float32), shift)


def window_languages(con: apsw.Connection, ids: NDArray[np.int64]) -> NDArray[np.str_]:
    """The language of each window's file (its first, files.lang; "" for none), by window rowid."""
    langs = {int(fid): (lang or "").split(",")[0] for fid, lang in con.execute("SELECT id, lang FROM files")}
    return np.array([langs.get(int(rid) >> CHUNK_BITS, "") for rid in ids.tolist()])


def _borrowed_means(overall: NDArray[np.float32], owner_lang: NDArray[np.str_], few: list[str],
                    ref: dict[str, NDArray[np.float32]]) -> dict[str, NDArray[np.float32]]:
    """{language: its estimated mean} for the languages of `few` the reference knows: the index's mean, moved
    from the reference mean of the index's mix of languages (each window counted as its language's reference
    mean, or ALL's) to the language's own reference mean."""
    known = [lang for lang in few if lang in ref]
    if not known or ALL not in ref:
        return {}
    langs, counts = np.unique(owner_lang, return_counts=True)
    table = np.array([ref.get(str(lang), ref[ALL]) for lang in langs.tolist()], dtype=np.float64)
    mix = (counts @ table) / len(owner_lang)
    return {lang: (overall + ref[lang] - mix).astype(np.float32) for lang in known}


@functools.lru_cache(maxsize=1)
def reference() -> dict[str, NDArray[np.float32]]:
    """The model's reference means ({} when the file is missing or made for another model than embedding's)."""
    from mcp_nextcloud.indexer.embedding import MODEL_NAME

    try:
        with np.load(REFERENCE) as data:
            if str(data["model"]) != MODEL_NAME:
                return {}
            return {key: data[key].astype(np.float32) for key in data.files if key != "model"}
    except (OSError, KeyError, ValueError):
        return {}


def cosines(c: Centering | None, plain: NDArray[np.float32], question: NDArray[np.float32]) -> NDArray[np.float32]:
    """The centred cosines of every window from their plain ones (`plain` = vecs @ question)."""
    if c is None:
        return plain
    shifted = question - c.shift
    size = float(np.linalg.norm(shifted)) or 1.0
    per_mean = c.means @ shifted
    # (v - a*mu) . (q - s) = v.q - v.s - a * mu.(q - s), over both norms
    return (plain - c.dots - SHARE * per_mean[c.row_mean]) / (size * c.norms)
