"""Turn a query (read by `syntax.read_query`) into safe FTS5 expressions, from most to least specific.

The user's text is never handed to FTS5 as syntax: each term is folded with
`reader.normalize.fold_words` (the same folding the index got), tokenised
with the index's own tokenizer and rebuilt as quoted strings. A word matches
at the start of a word: it is expanded to the indexed words that start with
it (at most MAX_EXPANSION, looked up in the vocabulary), which is bounded
and cheaper than FTS5's own `word*` on a short prefix. Words shorter than
MIN_PREFIX match whole words only (a two-letter prefix would match half the
index). A term with inner punctuation ("3.11", "node.js") is the phrase of
its tokens, its last token expanded.

Whitespace-insensitivity comes from variants: the words of a plain query
joined into one string S, and every segmentation of S into words that exist
in the index vocabulary ("new app" <-> "newapp", "newappstore" <-> "new app
store" <-> "newapp store"), fewest words first.

`tiers()` lists the expressions grep ranks with, best first: the phrase as
whole words, the phrase at word starts, all the words as whole words, all
the words at word starts, then (when a word has other forms in the index:
indexer/search/wordforms.py) all the words at word starts or in another
form of theirs. The last is the broadest: every hit matches it.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Literal, NamedTuple, cast

import apsw

from mcp_nextcloud.reader.normalize import fold_words

from mcp_nextcloud.indexer.search import rank
from mcp_nextcloud.indexer.search.rank import phrases
from mcp_nextcloud.indexer.search.syntax import Syntax, Term, read_query
from mcp_nextcloud.indexer.search.vocabulary import _VOCAB, MAX_EXPANSION, words_starting  # noqa: F401 - grep's names

Mode = Literal["whole_word", "word_start"]   # how a term matches a word (whole, or its start)

MAX_VARIANTS = 8         # phrases OR-ed together; more costs time for little recall
MAX_GLUED = 40           # longest S we try to segment
MAX_GLUED_WORDS = 3      # more words unquoted are not also tried glued or cut otherwise ("new app store": 3)
MAX_VARIANT_WORDS = 24   # words in all the variants together (the first two always stay)
MIN_PIECE = 2            # one-letter pieces would match almost anything
MIN_PREFIX = 3           # shorter words match whole words only
MAX_EXPANDED = 6         # terms expanded at word start in one query; a longer query matches whole words
MAX_PHRASE_WORDS = 6     # longer unquoted queries are not also ranked as a phrase (costly, rarely there)

_INNER_PUNCT = re.compile(r"[^\w\s\u2010\u2011-]|_")


def _quote(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def closest(words: list[str], typed: str, n: int) -> list[str]:
    """The `n` of `words` closest to the `typed` word: the longest shared start, then the shortest.

    "linear" keeps linearly before linearization, and of its other forms line before lin. The order is
    computed once per list (cached): tiers try several caps.
    """
    if len(words) <= n:
        return words
    return _by_closeness(tuple(words), typed)[:n]


@functools.lru_cache(maxsize=256)
def _by_closeness(words: tuple[str, ...], typed: str) -> list[str]:
    def shared(w: str) -> int:
        k = 0
        while k < min(len(w), len(typed)) and w[k] == typed[k]:
            k += 1
        return k

    return sorted(words, key=lambda w: (-shared(w), len(w), w))


@dataclass(slots=True)
class QTerm:
    """One term, tokenised: `words` are the indexed words its last token starts (None: whole words only)."""

    text: str
    tokens: list[str]
    exact: bool
    words: list[str] | None = None
    forms: list[str] = field(default_factory=list)   # other indexed forms of the word (same stem), beyond `words`

    def whole(self) -> str:
        """FTS5: the term's tokens as whole words, in order."""
        return " + ".join(_quote(t) for t in self.tokens)

    def start(self, cap: int | None = None) -> str:
        """FTS5: the term at the start of a word (its last token expanded; to the `cap` shortest words, if given)."""
        if self.exact or not self.words or self.words == self.tokens[-1:]:
            return self.whole()
        if len(self.tokens) == 1:
            words = self.words if cap is None else closest(self.words, self.tokens[-1], cap)
            return "(" + " OR ".join(_quote(w) for w in words) + ")" if len(words) > 1 else _quote(words[0])
        # A sequence: FTS5 phrases cannot hold OR, so the last token is a native prefix (bounded: we
        # looked its expansions up, at most MAX_EXPANSION).
        return self.whole() + "*"

    def expr(self, mode: Mode, forms: bool = False, cap: int | None = None) -> str:
        """FTS5 for this term in `mode` (and its other forms); `cap`: at most that many words of each kind."""
        if forms and self.forms:
            kept = self.forms if cap is None else closest(self.forms, self.tokens[-1], cap)
            return "(" + " OR ".join([self.start(cap), *(_quote(w) for w in kept)]) + ")"
        return self.start(cap) if mode == "word_start" else self.whole()

    def find_mode(self, mode: Mode) -> Mode:
        """How reader.find must match this term for passages in a tier of `mode`."""
        return "whole_word" if self.exact else mode


class Tier(NamedTuple):
    """One FTS5 expression grep ranks with; `phrase`: its hits hold the words as the phrase."""

    expr: str
    phrase: bool
    mode: Mode
    forms: bool = False      # the words also match in their other forms (wordforms.py)
    rest: bool = False       # the full expansion after its cut tiers: only files holding the rarer forms are new


@dataclass
class ParsedQuery:
    """A user query, read, folded and tokenised the way the index is."""

    raw: str
    groups: list[list[QTerm]]
    negated: list[QTerm] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    variants: list[list[str]] = field(default_factory=list)
    # The whole word-start expansion follows a cut one as a last tier (`tiers`). Not for a question's keyword
    # side: meaning answers a question, and walking every rarer word all its words start cost 6-14 ms of it.
    uncut_tier: bool = True
    # A question's keyword side with English terms beside its words (crossing.py): its alternatives are
    # translations, not an OR typed, so its all-words tiers are not ranked as the phrase asked for.
    english: tuple[str, ...] = ()

    @property
    def plain(self) -> bool:
        """No OR: the terms in order form a phrase (tiers rank it first)."""
        return all(len(g) == 1 for g in self.groups)

    @property
    def gluable(self) -> bool:
        """A phrase whose words may be glued or split ("new app" <-> "newapp"): no '.', '_' or the like inside.

        Hyphens and spaces fold away in reader.find too; other punctuation is
        kept there, so "3.11" must not also mean "311".
        """
        return self.plain and not any(_INNER_PUNCT.search(g[0].text) for g in self.groups)

    @property
    def quoted(self) -> bool:
        """The query is one quoted phrase: the phrase is all it asks for."""
        return len(self.groups) == 1 and self.groups[0][0].exact

    @property
    def tokens(self) -> list[str]:
        return [t for g in self.groups for t in g[0].tokens]

    @property
    def phrase_text(self) -> str:
        """What reader.find looks for in a phrase hit (the words as typed)."""
        return " ".join(g[0].text for g in self.groups)

    def _phrase(self, mode: Mode, cap: int | None = None) -> str:
        """The phrase and its glued variants; at word start only the typed words' last one is expanded."""
        out: list[str] = []
        for v in self.variants or [self.tokens]:
            expr = " + ".join(_quote(t) for t in v)
            last = self.groups[-1][0]
            if mode == "word_start" and v == self.tokens and not last.exact:
                if len(v) == 1:
                    expr = last.start(cap)
                elif last.words and last.words != v[-1:]:
                    expr += "*"
            if expr not in out:
                out.append(expr)
        return " OR ".join(out)

    def _all(self, mode: Mode, forms: bool = False, cap: int | None = None) -> str:
        parts: list[str] = []
        for g in self.groups:
            alts = [t.expr(mode, forms, cap) for t in g]
            part = alts[0] if len(alts) == 1 else "(" + " OR ".join(dict.fromkeys(alts)) + ")"
            if part not in parts:  # "the the": once is enough for "all these words"
                parts.append(part)
        return " AND ".join(parts)

    def negation(self) -> str | None:
        """FTS5: any excluded term at a word start, or None."""
        if not self.negated:
            return None
        return " OR ".join(t.start() for t in self.negated)

    def tiers(self, negate: bool = True) -> list[Tier]:
        """The expressions grep ranks with, best first, without repeats; the last one is the broadest.

        Every tier is ranked by bm25, which costs a posting-list walk per phrase: a tier whose expansion holds
        more than rank.MAX_RANKED_PHRASES phrases is cut to the shortest words each term starts (and its
        shortest other forms), and the whole expansion follows last as a `rest` tier, which adds only the files
        that hold nothing but the rarer, longer words. The budget cuts the expansion, never the ranking.
        negate=False leaves the excluded words out of the expressions (the caller excludes whole files).
        """
        Build = Callable[[int | None], str]
        cands: list[tuple[Build, bool, Mode, bool]] = []
        if self.plain and (len(self.tokens) <= MAX_PHRASE_WORDS or self.quoted):
            cands += [(lambda cap: self._phrase("whole_word", cap), True, "whole_word", False),
                      (lambda cap: self._phrase("word_start", cap), True, "word_start", False)]
        # All the words (a phrase only when it is not one plain phrase): also for one plain phrase too long to
        # be ranked as a phrase (a punctuated term of many tokens), which would otherwise have no tier at all.
        if not self.plain or len(self.groups) > 1 or not cands:
            phrase = not self.plain and not self.english
            cands += [(lambda cap: self._all("whole_word", cap=cap), phrase, "whole_word", False),
                      (lambda cap: self._all("word_start", cap=cap), phrase, "word_start", False)]
        if any(t.forms for g in self.groups for t in g):
            cands.append((lambda cap: self._all("word_start", True, cap), False, "word_start", True))
        neg = self.negation() if negate else None
        budget = max(1, rank.MAX_RANKED_PHRASES - (phrases(neg) if neg else 0))
        out: list[Tier] = []
        rest: Tier | None = None
        for build, phrase, mode, forms in cands:
            full = build(None)
            expr = full if phrases(full) <= budget else _cut(build, budget)
            if expr != full:
                rest = Tier(full, False, mode, forms, rest=True)
            out.append(Tier(expr, phrase, mode, forms))
        if rest is not None and self.uncut_tier and rest.expr != out[-1].expr:
            out.append(rest)   # the broadest, uncut: every hit matches it
        tiers: list[Tier] = []
        for t in out:
            expr = f"({t.expr}) NOT ({neg})" if neg else t.expr
            if all(o.expr != expr for o in tiers):
                tiers.append(t._replace(expr=expr))
        return tiers


def _cut(build: Callable[[int | None], str], budget: int) -> str:
    """`build` with the largest per-term cap whose expression holds at most `budget` phrases (cap 1 at least).

    The phrase count grows with the cap, so the cap is found by bisection (a handful of builds).
    """
    lo, hi = 1, MAX_EXPANSION
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if phrases(build(mid)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return build(lo)


def _tokenizer(con: apsw.Connection) -> apsw.FTS5Tokenizer:
    return con.fts5_tokenizer("unicode61", ["remove_diacritics", "2"])


def tokenize(con: apsw.Connection, text: str) -> list[str]:
    """Tokens of `text` as the index's tokenizer sees them (after fold_words)."""
    folded = fold_words(text)
    if not folded:
        return []
    # With include_offsets (the default) every token comes as (start, end, token, *colocated); apsw's stub gives
    # the call one return type for every combination of flags.
    out = cast("Iterable[tuple[int, int, str, *tuple[str, ...]]]",
               _tokenizer(con)(folded.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None))
    return [t[2] for t in out]


def _qterm(con: apsw.Connection, term: Term) -> QTerm | None:
    tokens = tokenize(con, term.text)
    return QTerm(term.text, tokens, term.exact) if tokens else None


def parse(con: apsw.Connection, query: str) -> ParsedQuery:
    """Read, fold and tokenise `query`; ValueError when nothing searchable is left (or it is over the caps)."""
    syn: Syntax = read_query(query)
    groups = []
    for g in syn.groups:
        terms = [q for q in (_qterm(con, t) for t in g) if q is not None]
        if terms:
            groups.append(terms)
    if not groups:
        raise ValueError(f"query {query!r} has no letters or digits to search for: give at least one word")
    negated = [q for q in (_qterm(con, t) for t in syn.negated) if q is not None]
    return ParsedQuery(raw=query, groups=groups, negated=negated, notes=list(syn.notes))


def expand_words(con: apsw.Connection, pq: ParsedQuery) -> None:
    """Look up, for every term not quoted, the indexed words its last token starts (notes when capped).

    Each lookup and each expanded term costs time in FTS5, so a query with
    more than MAX_EXPANDED distinct terms to expand matches whole words.
    """
    terms = [t for t in [t for g in pq.groups for t in g] + pq.negated if not t.exact and
             len(t.tokens[-1]) >= MIN_PREFIX]
    if len({t.tokens[-1] for t in terms}) > MAX_EXPANDED:
        pq.notes.append(f"more than {MAX_EXPANDED} words: each matched as a whole word (not at word starts)")
        return
    cache: dict[str, tuple[list[str], bool]] = {}
    for t in terms:
        last = t.tokens[-1]
        if last not in cache:
            cache[last] = words_starting(con, last)
        words, capped = cache[last]
        t.words = words
        if capped and not any(last in n for n in pq.notes):
            pq.notes.append(f"'{last}' starts more than {MAX_EXPANSION} indexed words: only the first "
                            f"{MAX_EXPANSION} were searched; type more of the word, or quote it for the whole word")


def _segmentations(s: str, known: set[str], limit: int) -> list[list[str]]:
    """Ways to cut `s` into known words, fewest pieces first (at most `limit`).

    Dynamic programming: `fewest[i]` is the fewest known pieces that cover
    s[i:] (None when s[i:] cannot be cut), so the walk below only steps into
    positions from which the cut can be finished, and tries the cuts that can
    still give fewer pieces first; it stops after `limit * 4` cuts.
    """
    n = len(s)
    fewest: list[int | None] = [None] * (n + 1)
    fewest[n] = 0
    for i in range(n - 1, -1, -1):
        best: int | None = None
        for j in range(i + MIN_PIECE, n + 1):
            after = fewest[j]
            if after is not None and s[i:j] in known and (best is None or after + 1 < best):
                best = after + 1
        fewest[i] = best
    results: list[list[str]] = []
    if fewest[0] is None:
        return results

    def walk(i: int, acc: list[str]) -> None:
        if len(results) >= limit * 4:
            return
        if i == n:
            results.append(list(acc))
            return
        steps = [j for j in range(i + MIN_PIECE, n + 1) if fewest[j] is not None and s[i:j] in known]
        for j in sorted(steps, key=lambda j: (fewest[j], -j)):
            acc.append(s[i:j])
            walk(j, acc)
            acc.pop()

    walk(0, [])
    results.sort(key=len)
    return results[:limit]


def _lookups(s: str, starts: set[int], done: set[str]) -> set[str]:
    """Pieces of `s` beginning at `starts` not looked up yet (at least MIN_PIECE characters)."""
    return {s[i:j] for i in starts for j in range(i + MIN_PIECE, len(s) + 1)} - done


def vocabulary_pieces(con: apsw.Connection, s: str) -> set[str]:
    """Every piece of `s` that is an indexed term and starts where a cut into indexed terms can start.

    Breadth-first over start positions: position 0, then the ends of the
    pieces found, so pieces after a position no known word reaches are never
    looked up (one statement per round; rounds <= number of pieces).
    """
    known: set[str] = set()
    looked: set[str] = set()
    reached = {0}
    frontier = {0}
    while frontier:
        batch = _lookups(s, frontier, looked)
        looked |= batch
        known |= known_terms(con, batch)
        ends = {i + len(t) for i in frontier for t in known if s.startswith(t, i)}
        frontier = {e for e in ends if e < len(s)} - reached
        reached |= frontier
    return known


_BATCH = 400  # SQLite allows at most 500 terms in one compound SELECT


def known_terms(con: apsw.Connection, terms: set[str]) -> set[str]:
    """The subset of `terms` that occur in the index (each check stops at the first row).

    A MATCH per term inside EXISTS, not the fts5vocab table: fts5vocab counts
    every occurrence of a term before it answers, which for a common term is
    a walk over its whole posting list; EXISTS stops at the first.
    """
    cache = _VOCAB.of(con)
    out: set[str] = {t for t in terms if cache.get(("known", t))}
    ordered = sorted(t for t in terms if ("known", t) not in cache)
    for k in range(0, len(ordered), _BATCH):
        part = ordered[k:k + _BATCH]
        sql = " UNION ALL ".join(
            "SELECT ? WHERE EXISTS(SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ?)" for _ in part)
        args: list[str] = []
        for t in part:
            args += [t, '"' + t.replace('"', '""') + '"']
        found = {r[0] for r in con.execute(sql, args)}
        cache.update({("known", t): t in found for t in part})
        out |= found
    return out


def expand(con: apsw.Connection, pq: ParsedQuery) -> ParsedQuery:
    """Fill the word-start expansions and `pq.variants`: the phrase itself, then the same letters cut into
    other indexed words.

    The words of a plain query are joined into S ("new app store" ->
    "newappstore"); every cut of S into terms of the index vocabulary is a
    variant ("newapp store", "new appstore", "newappstore", ...), fewest
    words first, at most MAX_VARIANTS in all. Only a quoted phrase or one of at most MAX_GLUED_WORDS words
    is cut so: the words of a longer query (a question's) are not one name typed apart or together, and
    cutting S asks the index about every piece of it (hundreds of lookups: ~20 ms of a question on a real
    corpus).
    """
    expand_words(con, pq)
    if not any("each matched as a whole word" in n for n in pq.notes):
        from mcp_nextcloud.indexer.search.wordforms import add_forms   # here: the stemmers load on the first query only

        add_forms(con, pq)
    if not pq.gluable or (len(pq.tokens) > MAX_GLUED_WORDS and not pq.quoted):
        return pq
    tokens = pq.tokens
    variants: list[list[str]] = [tokens]
    glued = "".join(tokens)
    if len(tokens) > 1:
        variants.append([glued])
    if len(glued) <= MAX_GLUED:
        known = vocabulary_pieces(con, glued) | set(tokens)
        for seg in _segmentations(glued, known, MAX_VARIANTS):
            if seg not in variants:
                variants.append(seg)
    # Each phrase of common words costs a walk of their positions: bound the words in all variants.
    kept: list[list[str]] = []
    for v in variants[:MAX_VARIANTS]:
        if len(kept) >= 2 and sum(map(len, kept)) + len(v) > MAX_VARIANT_WORDS:
            break
        kept.append(v)
    pq.variants = kept
    return pq
