"""The language a document is written in, by stopword ratio (for word-form matching at query time).

Why stopwords: the stemmers need a language per document, not a confident
label for a paragraph; the share of a language's commonest words in the
first few thousand words tells English, French, German, Spanish, Italian,
Dutch and Portuguese apart on the fixtures and the generated corpus
(benchmarks/test_wordforms_bench.py measures it), costs ~1 ms a document
and needs no model. Text that holds too few of them (code, tables of
numbers, names) gets no language: its words still match as typed and at
word starts.
"""
from __future__ import annotations

import re

from reader.normalize import fold_words

SAMPLE_CHARS = 20_000        # the first characters looked at (enough words, bounded cost)
MIN_HITS = 8                 # fewer stopwords than this: no language
MIN_SHARE = 0.08             # stopwords of the winner among all words, at least
MIN_LEAD = 1.3               # the winner's count over the runner-up's, at least

# Each language's commonest function words, folded (no accents), none shared with another list's top words
# where that would blur the count (English "a" and "in" are left out: French, Italian and German use them).
STOPWORDS: dict[str, frozenset[str]] = {
    "en": frozenset("the and of to is that for it with as was on be by this are or from at which but not "
                    "have has an they you were their can will there been would what when".split()),
    "fr": frozenset("le la les et des du un une est que qui dans pour pas sur au avec ce il elle sont "
                    "par plus ou mais nous vous leur cette ces aux ont etre".split()),
    "de": frozenset("der die das und ist nicht mit sich des dem den ein eine auf auch es fur von zu im "
                    "wird sind werden oder aus bei nach wie wenn kann".split()),
    "es": frozenset("el los las y que del en un una es por con para se su al lo como mas pero sus le "
                    "esta son entre cuando muy sin sobre".split()),
    "it": frozenset("il di che e della per sono gli una non con del nel alla lo si come anche questo "
                    "delle degli piu ma essere suo".split()),
    "nl": frozenset("de het een van en dat niet zijn op voor met is wordt aan ook als bij om maar "
                    "heeft dit er worden deze naar".split()),
    "pt": frozenset("o os as e do da que em um uma para com nao por mais dos das se como foi ao "
                    "ele ela seu sua sao pelo".split()),
}
# The Snowball stemmer of each language (PyStemmer's algorithm names).
STEMMERS = {"en": "english", "fr": "french", "de": "german", "es": "spanish", "it": "italian",
            "nl": "dutch", "pt": "portuguese"}

_WORD = re.compile(r"[a-z]+")


def detect(text: str) -> str | None:
    """ISO 639-1 code of the language of `text` (one of STOPWORDS), or None when it is not clear."""
    words = _WORD.findall(fold_words(text[:SAMPLE_CHARS]))
    if not words:
        return None
    counts = {lang: 0 for lang in STOPWORDS}
    for w in words:
        for lang, stop in STOPWORDS.items():
            if w in stop:
                counts[lang] += 1
    ranked = sorted(counts.items(), key=lambda kv: kv[1], reverse=True)
    (best, n), (_, second) = ranked[0], ranked[1]
    if n < MIN_HITS or n / len(words) < MIN_SHARE or n < MIN_LEAD * second:
        return None
    return best
