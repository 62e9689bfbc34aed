"""A question's answer: the keyword ranking fused with meaning (semantic.py), each hit scored (score.py).

Files holding the words as the phrase lead in keyword order; the rest is fused by reciprocal rank fusion
(with the FUSED closest meaning hits). Meaning hits below the floor are left out (semantic.FLOOR, or
ABSENT_FLOOR when the question names a word no indexed text holds), at most MEANING_ONLY files that only
meaning found are shown (`meaning_only`), and the question's word hits that no window of theirs brings
near it are left out (`_related_words`); the fused list then loses its weak tail (trim.py: words-only hits
after the first two, hits past the third far below the best); an identifier in the question boosts the files
holding it; with nothing close the answer says so. Figures: benchmarks/test_relevance_bench.py.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import apsw

from mcp_nextcloud.indexer.search import score, semantic, trim
from mcp_nextcloud.indexer.search.picks import Pick, Ranking
from mcp_nextcloud.indexer.search.query import ParsedQuery, Tier
from mcp_nextcloud.indexer.search.rank import Ranked, files_matching

IDENTIFIER_CAP = 5_000   # chunks walked to find the files holding a question's identifiers
FUSED = 10               # the closest meaning hits fused with the word ranking (a file further down is no support)
MEANING_ONLY = 3         # files only meaning found, shown per answer at most (meaning_only)
WEAK_MARGIN = 0.06       # files meaning ranks this much behind the margin are shown after the answer, as weaker
WEAK_SHOWN = 4           # at most this many of them (their passages cost ~300 bytes each)
WEAKER = ("hits from {first} on ({n}) are weaker: related in meaning only, less closely than those above; "
          "each has its score")
# A question's answer is ranked this deep whatever page is asked (deeper when one page asks for more): its
# pages are slices of one list. Ranked to each page's end, the fusion and the cut were rebuilt per page, so
# pages repeated files, skipped others and offered a next page forever (issue 36).
QUESTION_DEPTH = 10      # the default page: the first page of ten is the whole answer


def question_depth(limit: int) -> int:
    """How deep a question's answer is ranked for pages of `limit` hits (the same for every page)."""
    return max(QUESTION_DEPTH, limit)

if TYPE_CHECKING:
    from mcp_nextcloud.indexer.store.index import Index


def score_of(pick: Pick, tiers: int) -> float:
    """The hit's place on score.py's 0-1 scale."""
    if pick.match == "meaning" and pick.sim is not None:
        return score.meaning(pick.sim, semantic.FLOOR)
    w = score.words(pick.band, tiers, pick.ranked.best)
    return score.both(w, score.meaning(pick.sim, semantic.FLOOR)) if pick.sim is not None else w


MEANING_COUNTED = 50     # files meaning ranks for a hybrid total (semantic.py keeps only the close ones)
MEANING_TIER = Tier("", False, "word_start")   # a meaning hit matched no keyword tier (its passage is its window)


class FusedAnswer(Protocol):
    """What the fusion says on grep's answer (grep.py's GrepResult; not imported: grep imports this module)."""

    mode: str
    meaning: dict[str, Any] | None
    meaning_warnings: list[str]
    nearest_only: bool


def with_meaning(index: "Index", con: apsw.Connection, pq: ParsedQuery, ranking: Ranking, filt: str,
                 fargs: Sequence[apsw.SQLiteValue], want: int, result: FusedAnswer) -> Ranking:
    """The keyword ranking fused with the files found by meaning (semantic.py); the answer says how much it covered.

    No model here, or no vectors yet: the keyword ranking as is, with a warning saying so.
    """
    from mcp_nextcloud.indexer.embedding import ModelUnavailable

    cover = semantic.coverage(con)
    result.mode = "hybrid"
    result.meaning = cover.to_dict()
    try:
        # Past the page too (up to MEANING_COUNTED files): the total and `truncated` count what meaning found.
        absent = semantic.absent_words(con, pq)
        found = semantic.search(index, con, semantic.meaning_text(pq), filt, fargs, max(want, MEANING_COUNTED),
                                semantic.ABSENT_FLOOR if absent else semantic.FLOOR, weak_margin=WEAK_MARGIN)
    except ModelUnavailable as exc:
        result.mode = "words"
        result.meaning_warnings.append(f"meaning search did not run: {exc}")
        return ranking
    if cover.complete < cover.of:
        result.meaning_warnings.append(
            f"meaning search covers {cover.complete} of {cover.of} indexed files so far (it is built in the background "
            "after the keyword index); the others were searched by their words only")
    weak = [h for h in found if h.weak]
    found, said = _identifiers_first(con, pq, [h for h in found if not h.weak])
    floor = semantic.ABSENT_FLOOR if absent else semantic.FLOOR
    ranking = _related_words(index, con, pq, ranking, floor)._replace(notes=ranking.notes + said)
    by_file = {p.ranked.fid: p for p in ranking.picks}
    sims = {h.fid: h for h in found}
    if not found:
        if not cover.complete:
            return ranking   # nothing embedded yet: the coverage warning says so, "nothing close" would not be true
        near = "; the hits below hold the words" if ranking.picks else ""
        among = "" if cover.complete >= cover.of else f" among the {cover.complete} files embedded so far"
        why = f" (no indexed text mentions {', '.join(repr(w) for w in absent)})" if absent else ""
        note = f"{semantic.NOTHING_CLOSE}: no indexed text is related to the question{among}{why}{near}"
        return ranking._replace(notes=[*ranking.notes, note])
    # Files holding the words as the phrase lead in keyword order: such a query was meant as words, and its
    # answer stays what it was (meaning only adds after them). The rest is fused.
    lead = [_with_sim(p, sims) for p in ranking.picks if p.tier.phrase]
    taken = {p.ranked.fid for p in lead}
    candidates: list[Pick] = list(lead)
    fused = semantic.fuse([p.ranked.fid for p in ranking.picks if p.ranked.fid not in taken],
                          [h.fid for h in found if h.fid not in taken][:FUSED])
    shown = meaning_only(found, by_file.keys())
    for fid, _match in fused:
        if fid in by_file:
            candidates.append(_with_sim(by_file[fid], sims))
        elif fid in shown:
            h = sims[fid]
            candidates.append(Pick(Ranked(fid, -h.sim, h.rid), MEANING_TIER, match="meaning", sim=h.sim,
                                   windows=h.windows))
    return _with_weaker(_trimmed(con, ranking, candidates, cover.complete >= cover.of), weak, want)


def _with_weaker(ranking: Ranking, weak: list[semantic.SemHit], want: int) -> Ranking:
    """The answer and, after it, the files meaning ranks next (`semantic.search`'s weak margin) that it does
    not show yet, up to WEAK_SHOWN and the answer's depth: an agent can pass over a weak hit it sees with
    its score, but never find a file it is not shown (on the relevance set the right file of 3 of 41
    questions was there and nowhere else: first page 0.805 -> 0.878). The note says where the weaker hits
    start. Not after an answer that says nothing is close: it says so once, without more noise."""
    if trim.loose(ranking.picks):
        return ranking   # nothing is close: the answer says so once, and shows no more noise
    shown = {p.ranked.fid for p in ranking.picks}
    room = min(WEAK_SHOWN, want - len(ranking.picks))
    extra = [Pick(Ranked(h.fid, -h.sim, h.rid), MEANING_TIER, match="meaning", sim=h.sim, windows=h.windows)
             for h in weak if h.fid not in shown][:max(0, room)]
    if not extra:
        return ranking
    note = WEAKER.format(n=len(extra), first=len(ranking.picks) + 1)
    return ranking._replace(picks=ranking.picks + extra, total=ranking.total + len(extra),
                            notes=[*ranking.notes, note])


def _trimmed(con: apsw.Connection, ranking: Ranking, candidates: list[Pick], complete: bool) -> Ranking:
    """The fused candidates without their weak tail (trim.py); the total counts what the answer shows.

    Files holding the words past the ranked ones (ranking.total) are words-only hits, left out once
    trim.WORDS_FIRST hits are shown, unless some files are not embedded yet (they cannot be judged).
    """
    fids = [p.ranked.fid for p in candidates]
    picks, left = trim.weaker(candidates, [score_of(p, ranking.tiers) for p in candidates],
                              semantic.embedded(con, fids))
    unseen = max(0, ranking.total - len(ranking.picks))
    if complete and len(picks) >= trim.WORDS_FIRST:
        left, unseen = left + unseen, 0
    notes = ranking.notes + ([trim.LEFT_OUT.format(n=left, files='file' if left == 1 else 'files')] if left else [])
    loose = trim.loose(picks)
    return ranking._replace(picks=picks, total=len(picks) + unseen, notes=notes + ([loose] if loose else []))


def meaning_only(found: list[semantic.SemHit], words: Collection[int]) -> set[int]:
    """The files an answer shows that only meaning found (not among the word hits `words`): the closest one
    (above the floor), then others only when close (SemHit.close: semantic.CLOSE, or centering.CLOSE on the
    language-centred cosines), MEANING_ONLY at most.

    Cosines alone do not tell related from unrelated (semantic.py), but a question the files answer has
    few close files and an unrelated one many near the floor: measured on the relevance set
    (benchmarks/test_relevance_bench.py), a cap of 3 above CLOSE keeps every right file that was in the
    top 3 and leaves an unrelated question one hit.
    """
    kept: list[int] = []
    for h in found:
        if h.fid in words or (kept and (not h.close or len(kept) >= MEANING_ONLY)):
            continue
        kept.append(h.fid)
    return set(kept)


def _related_words(index: "Index", con: apsw.Connection, pq: ParsedQuery, ranking: Ranking, floor: float) -> Ranking:
    """A question's word hits that are related to it: a file holding its words (not as the phrase) whose every
    window is embedded and none of them reaches semantic.WORDS_CLOSE (or the floor, when higher) is noise for
    a question, and is left out, from the page and the total. Files not embedded yet cannot be judged and
    stay. (Its function words are not among its words: keywords.py; so a file holding the rest is common.)"""
    words_only = [p.ranked.fid for p in ranking.picks if not p.tier.phrase]
    counted = list(ranking.broad.per_file.keys()) if ranking.broad.complete else []
    judged = semantic.judge(index, con, semantic.meaning_text(pq), list({*words_only, *counted}))
    unrelated = {fid for fid, sim in judged.items() if sim < max(floor, semantic.WORDS_CLOSE)}
    if not unrelated:
        return ranking
    picks = [p for p in ranking.picks if p.tier.phrase or p.ranked.fid not in unrelated]
    gone = len(unrelated & set(counted)) if counted else len(ranking.picks) - len(picks)
    return ranking._replace(picks=picks, total=max(len(picks), ranking.total - gone))


def _identifiers_first(con: apsw.Connection, pq: ParsedQuery,
                       found: list[semantic.SemHit]) -> tuple[list[semantic.SemHit], list[str]]:
    """A question's identifiers (Node.js, 3.11) as a boost: the meaning hits holding them all first.

    Said when no file holds them: the hits are then related to the rest of the question only.
    """
    ids = semantic.identifiers(pq)
    if not ids:
        return found, []
    terms = [g[0] for g in pq.groups if g[0].text in ids]
    holding, _capped = files_matching(con, " AND ".join(f"({t.start()})" for t in terms), IDENTIFIER_CAP)
    named = ", ".join(f"'{i}'" for i in ids)
    if not holding & {h.fid for h in found}:
        return found, [f"no file close in meaning holds {named}: the meaning hits are related to the rest of the "
                       "question"]
    return [h for h in found if h.fid in holding] + [h for h in found if h.fid not in holding], []


def _with_sim(pick: Pick, sims: dict[int, semantic.SemHit]) -> Pick:
    """A word hit in a hybrid answer: "both" with its cosine when meaning found it too, else "words"."""
    h = sims.get(pick.ranked.fid)
    return pick._replace(match="both", sim=h.sim) if h is not None else pick._replace(match="words")


NEAREST_WORDS = 3        # a keyword query of two to this many words that finds nothing shows its nearest files,
NEAREST_FLOOR = semantic.CLOSE   # ... when close. Not for one word, nor words with digits: a made-up word, a
                                 # typo or a code ("tapir5f3a2b") embeds near any short note at 0.85 and more
NEAREST = ("no indexed file holds {words}; the files closest in meaning are shown instead (match: meaning), "
           "each with its score")


def nearest(index: "Index", con: apsw.Connection, pq: ParsedQuery, ranking: Ranking, filt: str,
            fargs: Sequence[apsw.SQLiteValue], result: FusedAnswer) -> Ranking:
    """A keyword query of two to NEAREST_WORDS plain words that no file holds: its closest files by meaning
    (close ones only, NEAREST_FLOOR; MEANING_ONLY at most), marked as such, so "quarterly budget" shows the
    French note about "budget trimestriel" instead of nothing. The total stays 0: no file holds the words
    (result.nearest_only). Quoted phrases, OR, exclusions and identifiers (3.11, node.js) ask for exactly those
    characters: never."""
    from mcp_nextcloud.indexer.embedding import ModelUnavailable

    words = [g[0].text for g in pq.groups]
    if ranking.picks or not pq.plain or pq.negated or not 2 <= len(words) <= NEAREST_WORDS or \
            any(g[0].exact for g in pq.groups) or semantic.identifiers(pq) or \
            any(ch.isdigit() for w in words for ch in w):
        return ranking
    if not semantic.coverage(con).complete:
        return ranking
    try:
        found = semantic.search(index, con, semantic.meaning_text(pq), filt, fargs, MEANING_ONLY, NEAREST_FLOOR)
    except ModelUnavailable:
        return ranking
    if not found:
        return ranking
    result.mode, result.nearest_only = "hybrid", True
    result.meaning = semantic.coverage(con).to_dict()
    picks = [Pick(Ranked(h.fid, -h.sim, h.rid), MEANING_TIER, match="meaning", sim=h.sim, windows=h.windows)
             for h in found[:MEANING_ONLY]]
    return ranking._replace(picks=picks, notes=[*ranking.notes, NEAREST.format(words=repr(" ".join(words)))])

