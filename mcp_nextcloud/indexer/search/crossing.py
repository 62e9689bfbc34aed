"""A German or French question about English documents: its content words in English, ranked among English files.

The meaning model finds English pages for a German question less well than for the same question in
English, and no word of the question occurs in English text, so its keyword side finds nothing there.
With the bilingual dictionaries installed (translate.py, optional like Tesseract), the question's keyword
side is also asked in English (`english_query`: each content word's English terms as alternatives, a word
the dictionary does not know kept as typed: a name such as Python or Samba), among the files written in
English only, and that ranking is merged with the question's own (`merged`, reciprocal rank fusion): the
files written in the question's language are ranked as before, and an English file holding the
question's subject in English becomes a word hit, fused with the meaning hits as any word hit is (issue
48: German and French questions about the English Python manual). Never for a question in English or an
index without English files.
"""
from __future__ import annotations

import apsw

from mcp_nextcloud.indexer.search import translate
from mcp_nextcloud.indexer.search.keywords import QUESTION_WORDS_OF
from mcp_nextcloud.indexer.search.picks import Ranking
from mcp_nextcloud.indexer.search.query import ParsedQuery, QTerm, tokenize
from mcp_nextcloud.indexer.search.vocabulary import words_starting
from mcp_nextcloud.indexer.store.language import STOPWORDS
from mcp_nextcloud.reader.normalize import fold_words

TERMS_PER_WORD = 2       # English terms per question word: each is one more term the English side walks
MIN_WORD = 4             # shorter words are not translated (articles, "les", "ich")
LANGS = ("de", "fr")     # the languages with a dictionary into English (translate.py)
ENGLISH_FILES = "f.lang LIKE '%en%'"   # files written in English (in part: "en,fr")
K_RRF = 60               # reciprocal rank fusion's constant, as semantic.fuse's


def question_language(question: str) -> str | None:
    """"de" or "fr" when the question's function and question words are clearly of that language (two of
    them at least, and more than any other language's), else None."""
    words = fold_words(question).split()
    counts = {lang: sum(1 for w in words if w in STOPWORDS[lang] or w in QUESTION_WORDS_OF.get(lang, ()))
              for lang in ("en", *LANGS)}
    best = max(counts, key=lambda k: counts[k])
    if best not in LANGS or counts[best] < 2 or sorted(counts.values())[-2] >= counts[best]:
        return None
    return best


def english_query(con: apsw.Connection, pq: ParsedQuery, langs: list[str]) -> ParsedQuery | None:
    """The question's keyword side `pq` asked in English (see the module docstring), or None: not a German
    or French question, no English files, no dictionary, or no word the dictionary knows."""
    lang = question_language(pq.raw)
    if lang is None or "en" not in langs or not translate.ready(lang):
        return None
    groups: list[list[QTerm]] = []
    english: list[str] = []
    for group in pq.groups:
        term = group[0]
        word = term.text.strip("?!.,;:()\"'")
        terms = [] if len(group) > 1 or term.exact or len(word) < MIN_WORD else \
            translate.english_words(word, lang, TERMS_PER_WORD)
        found = [QTerm(t, tokens, False) for t in terms if (tokens := tokenize(con, t)) and _indexed(con, tokens)]
        groups.append(found or [QTerm(term.text, list(term.tokens), term.exact)])
        english += [t.text for t in found]
    if not english:
        return None
    return ParsedQuery(raw=" ".join(t.text for g in groups for t in g), groups=groups, uncut_tier=False,
                       english=tuple(english))


def _indexed(con: apsw.Connection, tokens: list[str]) -> bool:
    """Whether every word of a translation starts an indexed word (a sense no document uses is left out:
    "Konsole" is console here, not bracket or cantilever)."""
    return all(words_starting(con, t, 1)[0] for t in tokens)


def merged(own: Ranking, english: Ranking, query: ParsedQuery) -> Ranking:
    """The question's own word ranking and its English one, fused by reciprocal rank (a file in both takes
    its own pick); an English pick carries its `query` (its passages are found with the English words)."""
    picks = {p.ranked.fid: p for p in english.picks} | {p.ranked.fid: p for p in own.picks}
    score: dict[int, float] = {}
    for ranking in (own.picks, english.picks):
        for r, p in enumerate(ranking):
            score[p.ranked.fid] = score.get(p.ranked.fid, 0.0) + 1.0 / (K_RRF + r + 1)
    order = sorted(score, key=lambda f: -score[f])
    fused = [picks[f] if f in {p.ranked.fid for p in own.picks} else picks[f]._replace(query=query) for f in order]
    return own._replace(picks=fused, total=own.total + sum(1 for p in english.picks if p.ranked.fid not in
                                                           {q.ranked.fid for q in own.picks}))
