"""The language a document is written in, by stopword ratio (for word-form matching at query time).

Why stopwords: the stemmers need a language per document, not a confident
label for a paragraph; the share of a language's commonest words in the
first few thousand words tells English, French, German, Spanish, Italian,
Dutch and Portuguese apart on the fixtures and the generated corpus
(benchmarks/test_wordforms_bench.py measures it), costs well under 1 ms a
document and needs no model. A document in two languages (a bilingual
manual, a scan with an English and a French page) gets both ("en,fr"). Text that holds too few of them (code, tables of
numbers, names) gets no language: its words still match as typed and at
word starts.
"""
from __future__ import annotations

from collections import Counter

from mcp_nextcloud.reader.normalize import fold_words

SAMPLE_CHARS = 4_000         # characters looked at, spread over the text (enough words, bounded cost)
MIN_HITS = 5                 # fewer stopwords than this: no language
MIN_SHARE = 0.08             # stopwords of the winner among all words, at least
MIN_LEAD = 1.3               # the winner's count over the runner-up's, at least (one language)
MIN_SECOND = 0.2             # a second language counts at least this share of the first's stopwords

# Each language's commonest function words, folded (no accents). A word several languages use ("de", "en")
# counts for each of them in part (_WEIGHTS); English "a" and "in" are left out (French, Italian, German use them).
STOPWORDS: dict[str, frozenset[str]] = {
    "en": frozenset("the and of to is that for it with as was on be by this are or from at which but not "
                    "have has an they you were their can will there been would what when".split()),
    "fr": frozenset("de en le la les et des du un une est que qui dans pour pas sur au avec ce il elle sont "
                    "par plus ou mais nous vous leur cette ces aux ont etre".split()),
    "de": frozenset("der die das und ist nicht mit sich des dem den ein eine auf auch es fur von zu im "
                    "wird sind werden oder aus bei nach wie wenn kann".split()),
    "es": frozenset("de el los las y que del en un una es por con para se su al lo como mas pero sus le "
                    "esta son entre cuando muy sin sobre".split()),
    "it": frozenset("il di che e della per sono gli una non con del nel alla lo si come anche questo "
                    "delle degli piu ma essere suo".split()),
    "nl": frozenset("de het een van en dat niet zijn op voor met is wordt aan ook als bij om maar "
                    "heeft dit er worden deze naar".split()),
    "pt": frozenset("de o os as e do da que em um uma para com nao por mais dos das se como foi ao "
                    "ele ela seu sua sao pelo".split()),
}
# A word in several lists ("de", "que", "en") counts for each of them in equal parts.
_WEIGHTS: dict[str, list[tuple[str, float]]] = {}
for _lang, _words in STOPWORDS.items():
    for _w in _words:
        _WEIGHTS.setdefault(_w, []).append((_lang, 1.0))
_WEIGHTS = {w: [(lang, 1.0 / len(ls)) for lang, _ in ls] for w, ls in _WEIGHTS.items()}
# The Snowball stemmer of each language (PyStemmer's algorithm names).
STEMMERS = {"en": "english", "fr": "french", "de": "german", "es": "spanish", "it": "italian",
            "nl": "dutch", "pt": "portuguese"}

# Every byte but a-z becomes a space (fold_words has already lowered and unaccented the text).
_NOT_LETTERS = bytes(c if 97 <= c <= 122 else 32 for c in range(256))


def _sample(text: str, parts: int = 4) -> str:
    """SAMPLE_CHARS of `text` in `parts` slices spread over it (a manual's French half is not at its start)."""
    if len(text) <= SAMPLE_CHARS:
        return text
    size = SAMPLE_CHARS // parts
    step = (len(text) - size) // (parts - 1)
    return " ".join(text[k * step:k * step + size] for k in range(parts))


def detect(text: str) -> str | None:
    """The language(s) of `text`; see detect_folded."""
    return detect_folded(fold_words(_sample(text)))


def sample_folded(pieces: list[str], parts: int = 4) -> str:
    """SAMPLE_CHARS of text already folded by fold_words, in pieces (a document's chunks), spread over them."""
    if not pieces:
        return ""
    chosen = pieces[::max(1, len(pieces) // parts)][:parts]
    return " ".join(p[:SAMPLE_CHARS // len(chosen)] for p in chosen)


def detect_folded(folded_text: str) -> str | None:
    """The language(s) of `folded_text` (folded by fold_words): an ISO 639-1 code of STOPWORDS, several
    joined by ',' for a document written in more than one ("en,fr": each other one shows at least MIN_HITS
    of its own stopwords, the words of no other list, and MIN_SECOND as many as the first), or None when
    no language is clear."""
    # bytes.translate, split and Counter run in C: a regex walk and a loop per word cost 3x more.
    folded = folded_text.encode("ascii", "replace")
    words = Counter(folded.translate(_NOT_LETTERS).decode("ascii").split())
    total = sum(words.values())
    if not total:
        return None
    counts = {lang: 0.0 for lang in STOPWORDS}
    own = {lang: 0 for lang in STOPWORDS}     # words of no other list: what a second language must show
    for w, ls in _WEIGHTS.items():
        seen = words.get(w, 0)
        for lang, weight in ls if seen else ():
            counts[lang] += weight * seen
            own[lang] += seen if weight == 1.0 else 0
    ranked = sorted(counts.items(), key=lambda kv: kv[1], reverse=True)
    best, n = ranked[0]
    if n < MIN_HITS or n / total < MIN_SHARE:
        return None
    also = [lang for lang, _ in ranked[1:] if own[lang] >= MIN_HITS and own[lang] >= MIN_SECOND * own[best]]
    if not also and n < MIN_LEAD * ranked[1][1]:
        return None
    return ",".join([best, *also])
