"""Turn what a person typed into a safe FTS5 expression.

The user's text is never handed to FTS5 as syntax: it is folded with
`reader.normalize.fold_words` (the same folding the index got), tokenised with
the index's own tokenizer, and rebuilt as quoted phrases. So quotes,
parentheses, AND/OR/NEAR, colons and '-' are literal text, never an SQLite
error. Whitespace-insensitivity comes from variants: the query's letters
joined into one string S, and every segmentation of S into words that exist
in the index vocabulary ("new app" <-> "newapp", "newappstore" <-> "new app
store" <-> "newapp store"), fewest words first.

Two expressions come out of one query: `fts()` is the phrase (with its
glued variants) and `fts_words()` is "all these words" (within one chunk,
a proxy for "near each other") OR the phrase. A query typed in double quotes
is only the phrase.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import apsw

from reader.normalize import fold_words

MAX_VARIANTS = 16        # phrases OR-ed together; more costs time for little recall
MAX_GLUED = 40           # longest S we try to segment
MIN_PIECE = 2            # one-letter pieces would match almost anything


@dataclass
class ParsedQuery:
    """A user query, folded and tokenised the way the index is."""

    raw: str
    find_text: str               # what reader.find is asked to find (no '*', no wrapping quotes)
    tokens: list[str]
    prefix: bool                 # trailing '*': the last word is a prefix
    variants: list[list[str]] = field(default_factory=list)
    quoted: bool = False         # typed in quotes: exactly this phrase, never the words apart

    @property
    def words_mode(self) -> bool:
        """True when the query also matches its words apart (several words, not quoted)."""
        return len(self.tokens) > 1 and not self.quoted

    def word_queries(self) -> list[str]:
        """One reader.find query per word, the last with '*' for a prefix query (for passages)."""
        out = list(self.tokens)
        if self.prefix:
            out[-1] += "*"
        return out

    def fts(self) -> str:
        """The FTS5 MATCH expression: OR of quoted phrases (with '*' for prefix queries)."""
        star = " *" if self.prefix else ""
        phrases = []
        for v in self.variants or [self.tokens]:
            p = '"' + " ".join(t.replace('"', '""') for t in v) + '"' + star
            if p not in phrases:
                phrases.append(p)
        return " OR ".join(phrases)

    def fts_words(self) -> str | None:
        """All the words in one chunk, OR the phrase; None when the query is only a phrase."""
        if not self.words_mode:
            return None
        star = " *" if self.prefix else ""
        words = ['"' + t.replace('"', '""') + '"' for t in self.tokens]
        words[-1] += star
        return f"({self.fts()}) OR ({' AND '.join(words)})"


def _tokenizer(con: apsw.Connection):
    return con.fts5_tokenizer("unicode61", ["remove_diacritics", "2"])


def tokenize(con: apsw.Connection, text: str) -> list[str]:
    """Tokens of `text` as the index's tokenizer sees them (after fold_words)."""
    folded = fold_words(text)
    if not folded:
        return []
    out = _tokenizer(con)(folded.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None)
    return [t[2] for t in out]


def parse(con: apsw.Connection, query: str) -> ParsedQuery:
    """Fold and tokenise `query`; ValueError when nothing searchable is left."""
    if not query or not query.strip():
        raise ValueError("empty query: give a word or phrase to look for")
    text = query.strip()
    prefix = text.endswith("*") and len(text.rstrip("*").strip()) > 0
    core = text.rstrip("*").strip() if prefix else text
    quoted = False
    if len(core) >= 2 and core[0] == core[-1] and core[0] in "\"'":
        inner = core[1:-1].strip()
        quoted = bool(inner)
        core = inner or core  # a phrase the user quoted: the quotes are not text
    tokens = tokenize(con, core)
    if not tokens:
        raise ValueError(
            f"query {query!r} has no letters or digits to search for: give at least one word"
        )
    return ParsedQuery(raw=query, find_text=core, tokens=tokens, prefix=prefix, quoted=quoted)


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
            pieces = fewest[j]
            if pieces is not None and s[i:j] in known and (best is None or pieces + 1 < best):
                best = pieces + 1
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
    ordered = sorted(terms)
    out: set[str] = set()
    for k in range(0, len(ordered), _BATCH):
        part = ordered[k:k + _BATCH]
        sql = " UNION ALL ".join(
            "SELECT ? WHERE EXISTS(SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ?)" for _ in part)
        args: list[str] = []
        for t in part:
            args += [t, '"' + t.replace('"', '""') + '"']
        out |= {r[0] for r in con.execute(sql, args)}
    return out


def expand(con: apsw.Connection, pq: ParsedQuery) -> ParsedQuery:
    """Fill `pq.variants`: the phrase itself, then the same letters cut into other indexed words.

    The query's tokens are joined into S ("new app store" -> "newappstore");
    every cut of S into terms of the index vocabulary is a variant ("newapp
    store", "new appstore", "newappstore", ...), fewest words first, at most
    MAX_VARIANTS in all. Prefix queries keep only the phrase and S.
    """
    variants: list[list[str]] = [pq.tokens]
    glued = "".join(pq.tokens)
    if len(pq.tokens) > 1:
        variants.append([glued])
    if not pq.prefix and len(glued) <= MAX_GLUED:
        known = vocabulary_pieces(con, glued) | set(pq.tokens)
        for seg in _segmentations(glued, known, MAX_VARIANTS):
            if seg not in variants:
                variants.append(seg)
    pq.variants = variants[:MAX_VARIANTS]
    return pq
