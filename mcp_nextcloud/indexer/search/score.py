"""The `score` every grep hit carries: one 0-1 scale, higher is closer, so an agent can compare hits.

- A hit holding the query's words scores 0.5 to 1: the band of the tier it matched in (the phrase as
  whole words is the top band; word starts, scattered words, other forms and rarer words lower ones),
  raised within the band by its bm25 (saturating: bm25 / (bm25 + BM25_HALF)).
- A hit related in meaning only scores 0.3 at the meaning floor (semantic.FLOOR: below it nothing is
  shown) up to 0.8 for a near paraphrase (cosine TOP and above).
- A hit found both ways takes the higher of its two scores plus BOTH_BONUS (at most 1).
Down a page scores never rise: a hit fused below another keeps at most that one's score.
"""
from __future__ import annotations

BM25_HALF = 5.0       # bm25 at which a hit is halfway up its band (typical bm25 of a real corpus: 1-15)
MEANING_LOW, MEANING_HIGH = 0.3, 0.8
TOP = 0.90            # cosine of a near paraphrase with multilingual-e5-small
BOTH_BONUS = 0.1


def words(tier: int, tiers: int, bm25: float) -> float:
    """The score of a word hit found in tier `tier` (0 = best) of `tiers`, with FTS5's bm25 (lower is better)."""
    b = max(0.0, -bm25)
    band = max(0, tiers - 1 - tier) + b / (b + BM25_HALF)
    return 0.5 + 0.5 * band / max(1, tiers)


def meaning(sim: float, floor: float) -> float:
    """The score of a meaning hit of cosine `sim` (floor -> MEANING_LOW, TOP -> MEANING_HIGH)."""
    span = max(1e-6, TOP - floor)
    x = min(1.0, max(0.0, (sim - floor) / span))
    return MEANING_LOW + (MEANING_HIGH - MEANING_LOW) * x


def both(word_score: float, meaning_score: float) -> float:
    return min(1.0, max(word_score, meaning_score) + BOTH_BONUS)


def non_increasing(scores: list[float]) -> list[float]:
    """Scores down a page, each at most the one above it (fusion may rank a lower score higher); 3 decimals."""
    out: list[float] = []
    for s in scores:
        out.append(round(min(s, out[-1]) if out else s, 3))
    return out
