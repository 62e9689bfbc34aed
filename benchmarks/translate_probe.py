"""Print, for each German and French question of the relevance set, its keyword side's words and their English terms.

For judging the translation lever (indexer/search/translate.py, issue 48) at a glance: a word the
dictionary leaves out or translates badly shows here before any search runs. Needs the dictionaries
(Debian/Ubuntu: apt-get install dict-freedict-deu-eng dict-freedict-fra-eng); the first run builds their
tables (seconds, once):

    python3 -m benchmarks.translate_probe
"""
from __future__ import annotations

import re
import time

from benchmarks.relevance_set import QUESTIONS
from mcp_nextcloud.indexer.search import translate
from mcp_nextcloud.indexer.search.keywords import FUNCTION_WORDS
from mcp_nextcloud.reader.normalize import fold_words


def content_words(question: str) -> list[str]:
    """The question's words as typed, less the function words the keyword side leaves out (keywords.py)."""
    words = re.findall(r"\w+", question)
    return [w for w in dict.fromkeys(words) if fold_words(w) not in FUNCTION_WORDS and not w.isdigit()]


def main() -> None:
    print(translate.status())
    started = time.perf_counter()
    translate.prepare()
    print(f"tables ready in {time.perf_counter() - started:.2f} s")
    asked = [(q, lang) for q, lang, _files, _span in QUESTIONS if lang in ("de", "fr")]
    started = time.perf_counter()
    rows = [(q, lang, translate.translate_terms(content_words(q), lang)) for q, lang in asked]
    spent = time.perf_counter() - started
    for q, lang, found in rows:
        print(f"\n[{lang}] {q}")
        for word in content_words(q):
            print(f"    {word:24} -> {', '.join(found.get(word, [])) or '-'}")
    print(f"\n{len(rows)} questions translated in {spent * 1000:.1f} ms")


if __name__ == "__main__":
    main()
