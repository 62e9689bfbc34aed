"""How grep reads a query: words, "quoted phrases", OR, NOT / -word; caps on length and terms.

The grammar, in the words the CLI help and the tool description use:

- words: every word must be in the file, each matched at the start of a word
  ("partition" finds "partitions", "Partitionierung"); whole words rank first;
- "quoted": exactly these whole words, in this order ("partition" in quotes
  finds only the word partition);
- a term with inner punctuation (3.11, node.js, e-mail, foo_bar, v2.1) is
  matched as that sequence;
- a OR b: either (binds the two terms next to it); AND is implied;
- -word or NOT word: files without it.

Anything else that looks like an operator is taken literally and said so in
`notes` (lower-case or/not/and/near; NEAR(a b) searches a and b as words). No query text ever reaches
FTS5 as syntax: query.py quotes every token.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_QUERY_CHARS = 500    # the same cap in the CLI and in MCP (files_grep's query field)
MAX_TERMS = 16           # terms (words, phrases, alternatives, exclusions) in one query with operators; a
                         # question in plain words has no cap: its keyword side keeps its MAX_TERMS most
                         # distinctive words (keywords.py), meaning reads it whole
MAX_PASSAGES = 5         # passages per file a caller may ask for (1 by default)

_TOKEN = re.compile(r'-?"[^"]*"?|-?\u201c[^\u201d]*\u201d?|\S+')
_QUOTES = '"\u201c\u201d'
_LITERAL_OPERATORS = {"or": "OR", "not": "NOT or -word", "and": "nothing (all words are required)",
                      "near": "the words alone (they rank higher where they form a phrase)"}
_NEAR = re.compile(r"\bNEAR\s*\(([^()]*)\)", re.IGNORECASE)


@dataclass(slots=True)
class Term:
    """One term as typed: `text` without quotes; `exact` when it was quoted (whole words in this order)."""

    text: str
    exact: bool = False


@dataclass
class Syntax:
    """A query read: an AND of groups (each an OR of terms), terms to exclude, and how it was read."""

    groups: list[list[Term]] = field(default_factory=list)
    negated: list[Term] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def terms(self) -> int:
        return sum(len(g) for g in self.groups) + len(self.negated)

    @property
    def plain_words(self) -> bool:
        """Words only: no quotes, no OR, nothing excluded (a question, or a keyword query)."""
        return not self.negated and all(len(g) == 1 and not g[0].exact for g in self.groups)


def _term(token: str) -> Term | None:
    """The term a token stands for: quotes make it exact; a trailing '*' is accepted (word start is the default)."""
    if token and token[0] in _QUOTES:
        inner = token.strip(_QUOTES + "*").strip()
        return Term(inner, exact=True) if inner else None
    text = token.rstrip("*")
    return Term(text) if text else None


def check_size(query: str) -> None:
    """ValueError when `query` is over MAX_QUERY_CHARS (the same refusal in the CLI and MCP)."""
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(
            f"query is {len(query)} characters long; at most {MAX_QUERY_CHARS} are accepted: keep the "
            "distinctive words (or quote the phrase) and search again")


def read_query(query: str) -> Syntax:
    """Split `query` into groups, exclusions and notes; ValueError when empty, too long or with too many terms."""
    if not query or not query.strip():
        raise ValueError("empty query: give a word or phrase to look for")
    check_size(query)
    out = Syntax()
    text = query.strip()
    if _NEAR.search(text):
        # NEAR(a b, 5) is FTS5 syntax people try: its words are searched, the group and distance dropped.
        text = _NEAR.sub(lambda m: re.sub(r",\s*\d+\s*$", "", m.group(1)), text)
        out.notes.append("NEAR(...) is not an operator here: its words were searched as words (all required; "
                         "files where they form a phrase rank first)")
    tokens = _TOKEN.findall(text)
    join_next = negate_next = False
    for k, tok in enumerate(tokens):
        last = k == len(tokens) - 1
        if tok == "OR" and out.groups and not last and not join_next:
            join_next = True
            continue
        if tok == "AND" and out.groups and not last:
            continue
        if tok == "NOT" and not last:
            negate_next = True
            continue
        negate = negate_next or (tok.startswith("-") and len(tok) > 1 and len(tokens) > 1)
        term = _term(tok[1:] if tok.startswith("-") and len(tok) > 1 and len(tokens) > 1 else tok)
        if term is None:
            continue
        low = term.text.lower()
        if not term.exact and low in _LITERAL_OPERATORS and len(tokens) > 1:
            out.notes.append(f"'{term.text}' was searched as a word; for the operator write {_LITERAL_OPERATORS[low]}")
        if negate:
            out.negated.append(term)
        elif join_next:
            out.groups[-1].append(term)
        else:
            out.groups.append([term])
        join_next = negate_next = False
    if not out.groups:
        what = "only words to exclude" if out.negated else "no letters or digits to search for"
        raise ValueError(f"query {query!r} has {what}: give at least one word to look for")
    if out.terms > MAX_TERMS and not out.plain_words:
        raise ValueError(f"query has {out.terms} terms with operators (quotes, OR, NOT or -word); at most "
                         f"{MAX_TERMS} are searched: keep the distinctive terms, or write it as a question in plain "
                         "words (no cap)")
    return out
