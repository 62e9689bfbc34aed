"""Turn what a person typed into a safe FTS5 expression.

The user's text is never handed to FTS5 as syntax: it is folded with
`reader.normalize.fold_words` (the same folding the index got), tokenised with
the index's own tokenizer, and rebuilt as quoted phrases. So quotes,
parentheses, AND/OR/NEAR, colons and '-' are literal text, never an SQLite
error. Whitespace-insensitivity comes from variants: the query's letters
joined into one string S, and every segmentation of S into words that exist
in the index vocabulary ("new app" <-> "newapp").
"""
from __future__ import annotations

from dataclasses import dataclass, field

import apsw

from reader.normalize import fold_words

MAX_VARIANTS = 12        # phrases OR-ed together; more costs time for little recall
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

    def fts(self) -> str:
        """The FTS5 MATCH expression: OR of quoted phrases (with '*' for prefix queries)."""
        star = " *" if self.prefix else ""
        phrases = []
        for v in self.variants or [self.tokens]:
            p = '"' + " ".join(t.replace('"', '""') for t in v) + '"' + star
            if p not in phrases:
                phrases.append(p)
        return " OR ".join(phrases)


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
    if len(core) >= 2 and core[0] == core[-1] and core[0] in "\"'":
        core = core[1:-1].strip() or core  # a phrase the user quoted: the quotes are not text
    tokens = tokenize(con, core)
    if not tokens:
        raise ValueError(
            f"query {query!r} has no letters or digits to search for: give at least one word"
        )
    return ParsedQuery(raw=query, find_text=core, tokens=tokens, prefix=prefix)


def _segmentations(s: str, known: set[str], limit: int) -> list[list[str]]:
    """Ways to cut `s` into known words, fewest pieces first (at most `limit`)."""
    n = len(s)
    # done[i]: s[i:] can be cut into known pieces; walking only into such
    # positions keeps the search linear in the number of results.
    done = [False] * (n + 1)
    done[n] = True
    for i in range(n - 1, -1, -1):
        done[i] = any(done[j] and s[i:j] in known for j in range(i + MIN_PIECE, n + 1))
    results: list[list[str]] = []

    def walk(i: int, acc: list[str]) -> None:
        if len(results) >= limit * 4:
            return
        if i == n:
            results.append(list(acc))
            return
        for j in range(n, i + MIN_PIECE - 1, -1):
            piece = s[i:j]
            if done[j] and piece in known:
                acc.append(piece)
                walk(j, acc)
                acc.pop()

    walk(0, [])
    results.sort(key=len)
    return results[:limit]


def _candidates(tokens: list[str]) -> set[str]:
    """Pieces worth looking up: runs of adjacent query words glued, and each word cut in two."""
    out: set[str] = set()
    for i in range(len(tokens)):
        for j in range(i + 2, len(tokens) + 1):
            out.add("".join(tokens[i:j]))
        t = tokens[i]
        for k in range(MIN_PIECE, len(t) - MIN_PIECE + 1):
            out.add(t[:k])
            out.add(t[k:])
    return {c for c in out if len(c) <= MAX_GLUED}


def known_terms(con: apsw.Connection, terms: set[str]) -> set[str]:
    """The subset of `terms` that occur in the index (one statement; each check stops at the first row).

    fts5vocab would count every occurrence of a common term; EXISTS stops at the first.
    """
    terms = sorted(terms)
    if not terms:
        return set()
    sql = " UNION ALL ".join(
        "SELECT ? WHERE EXISTS(SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ?)" for _ in terms)
    args: list[str] = []
    for t in terms:
        args += [t, '"' + t.replace('"', '""') + '"']
    return {r[0] for r in con.execute(sql, args)}


def expand(con: apsw.Connection, pq: ParsedQuery) -> ParsedQuery:
    """Fill `pq.variants`: the phrase itself, then the same letters cut into other indexed words."""
    variants: list[list[str]] = [pq.tokens]
    glued = "".join(pq.tokens)
    if len(pq.tokens) > 1:
        variants.append([glued])
    if not pq.prefix and len(glued) <= MAX_GLUED:
        known = known_terms(con, _candidates(pq.tokens)) | set(pq.tokens)
        for seg in _segmentations(glued, known, MAX_VARIANTS):
            if seg not in variants:
                variants.append(seg)
    pq.variants = variants[:MAX_VARIANTS]
    return pq
