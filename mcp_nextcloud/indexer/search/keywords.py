"""A question's keyword side: its words less the function words ("how", "do", "the", "comment", "wie", "ich").

A question ("how do I limit the memory a process can use") is searched by meaning and by its words
(hybrid.py). Every word of a query must be in a file, so its function words only narrow the keyword
side to files long enough to hold them all, and each costs FTS5 a posting-list walk (the commonest
words have the longest). They are left out of the keyword side of a question; the meaning side still
embeds the question as typed. The lists: language.STOPWORDS (one owner of each language's function
words) and the words questions are asked with (QUESTION_WORDS), folded as the index folds them.
A question made of function words only keeps them all, and a word the query language took literally
("or", "and": its note says so) stays. A long question keeps syntax.MAX_TERMS of its words, the longest
(the most distinctive: "Konfigurationsdateien" before "Programm"), in the order typed: every word of a
query must be in a file, so more would only narrow the keyword side further; meaning reads them all.
"""
from __future__ import annotations

from dataclasses import replace

from mcp_nextcloud.indexer.search.query import ParsedQuery, QTerm
from mcp_nextcloud.indexer.search.syntax import MAX_TERMS
from mcp_nextcloud.indexer.store.language import STOPWORDS

# The words questions are asked with, per language (crossing.py tells a question's language by them too).
QUESTION_WORDS_OF = {
    "en": frozenset("how do does did i my me we our you your a an in can could should would what which who whom "
                    "why where".split()),
    "fr": frozenset("comment je j mon ma mes on nous quel quelle quels quelles pourquoi ou quand qu l d s n y "
                    "a".split()),
    "de": frozenset("wie was wo wer warum welche welcher welches welchen ich mich mir mein meine man einen einem "
                    "einer".split()),
}
QUESTION_WORDS = frozenset().union(*QUESTION_WORDS_OF.values())
FUNCTION_WORDS = frozenset().union(*STOPWORDS.values(), QUESTION_WORDS)


def _function(term: QTerm) -> bool:
    return not term.exact and all(t in FUNCTION_WORDS for t in term.tokens)


def keyword_side(pq: ParsedQuery) -> ParsedQuery:
    """`pq` without its groups of function words only (the same terms, `raw` and notes otherwise)."""
    # A word the query language reads as a word although it looks like an operator ("or", "and": a note
    # says so) stays: the answer says how it was searched.
    kept = [g for g in pq.groups if not all(_function(t) for t in g) or any(f"'{g[0].text}'" in n for n in pq.notes)]
    if not kept:
        kept = pq.groups
    if len(kept) > MAX_TERMS:
        longest = set(sorted(range(len(kept)), key=lambda k: -len(kept[k][0].text))[:MAX_TERMS])
        kept = [g for k, g in enumerate(kept) if k in longest]
    if len(kept) == len(pq.groups):
        return pq
    return replace(pq, groups=kept, variants=[])
