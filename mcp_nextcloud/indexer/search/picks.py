"""The ranked files grep hands between its stages: a pick per file, and the ranking of one query."""
from __future__ import annotations

from typing import Any, NamedTuple

from mcp_nextcloud.indexer.search.query import Tier
from mcp_nextcloud.indexer.search.rank import Ranked, Scan


class Pick(NamedTuple):
    """A ranked file and the tier it was found in."""

    ranked: Ranked
    tier: Tier
    chunks: int = 1              # matching chunks of the file its tier's scan saw (2+: `more` needs no probe)
    match: str | None = None     # hybrid answers: "words", "meaning" (no tier match: a window's passage) or "both"
    band: int = 0                # the index of its tier among the query's tiers (0: the best)
    sim: float | None = None     # hybrid answers: the cosine of its best window, when meaning found it
    windows: tuple[tuple[int, float], ...] = ()   # a meaning hit's best windows (rowid, cosine): answer.py
    query: Any = None            # the ParsedQuery its tier belongs to when not the answer's (crossing.py)


class Ranking(NamedTuple):
    picks: list[Pick]
    total: int
    estimate: bool
    windowed: bool               # only the newest RANK_WINDOW matching chunks of a tier were ranked
    broad: Scan                  # the broadest tier's scan: every hit's chunks are in it
    notes: list[str]
    tiers: int = 1               # how many tiers the query has (score.words' bands)
