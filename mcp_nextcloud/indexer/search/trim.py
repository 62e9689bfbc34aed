"""A question's answer cut to the hits that stand (issue 36's precision budget): the fused ranking of
hybrid.py loses its weak tail, and an answer whose closest file is not close says so.

Two rules, calibrated on the even half of the relevance set (benchmarks/test_relevance_bench.py, halves)
and checked on the odd half; neither touches the first KEEP hits, so the top 3 stay what they were:

- a file holding some of the question's words that meaning did not find among its closest files (match
  "words", not the phrase) is shown only among the first WORDS_FIRST hits: on the relevance set 3 of 22
  such hits were right files; files not fully embedded cannot be judged and stay;
- past the first KEEP hits, a hit scoring GAP or more below the best one (score.py's scale) is left out.

The answer's note says how many were left out and how to see them (the words alone are a keyword query,
which lists every file holding them). An answer whose every hit only meaning found, the closest below
semantic.CLOSE, says "nothing close in meaning" (`loose`): measured on the relevance set, 4 of the 22
questions it does not hold and none of the 41 it answers.
"""
from __future__ import annotations

from collections.abc import Collection

from mcp_nextcloud.indexer.search import semantic
from mcp_nextcloud.indexer.search.picks import Pick

KEEP = 3            # the first hits of a question's answer are never left out
GAP = 0.15          # past KEEP, a hit this far below the best hit's score is left out (0.10-0.20 measured)
WORDS_FIRST = 2     # a question's words-only hit is shown among the first WORDS_FIRST hits only (1-3 measured)

LEFT_OUT = ("{n} weaker {files} left out: files holding some of the question's words that are not close to it "
            "in meaning, or scoring far below the best hit; search the key words alone (two words, or quote one) "
            "to list every file holding them")


def weaker(picks: list[Pick], scores: list[float], embedded: Collection[int]) -> tuple[list[Pick], int]:
    """The picks an answer shows, in order, and how many were left out (see the module docstring).

    `scores` are the picks' scores (hybrid.score_of); `embedded` the files whose every window is embedded.
    """
    kept: list[Pick] = []
    for pick, sc in zip(picks, scores, strict=True):
        words_only = pick.match == "words" and not pick.tier.phrase and pick.ranked.fid in embedded
        if (words_only and len(kept) >= WORDS_FIRST) or (len(kept) >= KEEP and sc < scores[0] - GAP):
            continue
        kept.append(pick)
    return kept, len(picks) - len(kept)


def loose(picks: list[Pick]) -> str | None:
    """The note of an answer whose every hit only meaning found and whose closest is below semantic.CLOSE."""
    if not picks or any(p.match != "meaning" for p in picks) or (picks[0].sim or 0.0) >= semantic.CLOSE:
        return None
    return (f"{semantic.NOTHING_CLOSE}: no file is clearly about this question (none holds its words); the nearest "
            "by meaning are shown with their low scores, and may be only loosely related")
