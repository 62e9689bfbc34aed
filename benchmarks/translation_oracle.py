"""The upper bound of a translation lever (issue 48: MCP sampling, or a dictionary) on the relevance corpus.

The relevance set's cross-language questions (no answering file in the question's language) asked as
written, in a careful English translation (what a host's model would give through sampling), and both
together: the right file's top-1 and top-3 counts of each. Measured on 2026-12-08: as asked 10 / 14 of 19
(11 / 14 with the dictionaries' English side, crossing.py), in English 13 / 14, both 12 / 15: even a perfect
translation leaves the same misses, so a sampling round trip per question was not built.

Run: python3 -m benchmarks.translation_oracle   (the relevance corpus built first: benchmarks/relevance_corpus.py)
"""
from __future__ import annotations

import json
import re

from benchmarks import relevance_corpus
from benchmarks.relevance_set import QUESTIONS
from mcp_nextcloud.indexer.index import Index

# Each cross-language question and its English, written as a careful translator (or a host's model) would.
EN: dict[str, str] = {
    'comment exécuter plusieurs processus en parallèle avec Python':
        'how do I run several processes in parallel with Python',
    'Wie ersetze ich Text mit einem regulären Ausdruck in Python?':
        'How do I replace text with a regular expression in Python?',
    'Wie lese ich eine Datei im JSON-Format mit Python ein?':
        'How do I read a file in JSON format with Python?',
    'comment trier une liste en Python':
        'how to sort a list in Python',
    'Wie schreibe ich Unit-Tests in Python?':
        'How do I write unit tests in Python?',
    'comment lire et écrire des fichiers CSV en Python':
        'how to read and write CSV files in Python',
    'Wie verbinde ich mich mit einer SQLite-Datenbank in Python?':
        'How do I connect to an SQLite database in Python?',
    'comment créer une archive tar compressée en Python':
        'how to create a compressed tar archive in Python',
    'comment envoyer un courriel avec Python':
        'how to send an email with Python',
    'Wie erzeuge ich in Python kryptografisch sichere Zufallszahlen?':
        'How do I generate cryptographically secure random numbers in Python?',
    'comment analyser les arguments de la ligne de commande en Python':
        'how to parse command line arguments in Python',
    'Wie starte ich ein externes Programm aus Python und lese seine Ausgabe?':
        'How do I start an external program from Python and read its output?',
    "comment mesurer le temps d'exécution d'un petit bout de code Python":
        'how to measure the execution time of a small piece of Python code',
    'Wie lese ich Umgebungsvariablen in Python aus?':
        'How do I read environment variables in Python?',
    'comment compresser des données en Python':
        'how to compress data in Python',
    'Wie kopiere ich in Python eine Datei in ein anderes Verzeichnis?':
        'How do I copy a file to another directory in Python?',
    'comment télécharger une page web en Python':
        'how to download a web page in Python',
    'Wie schreibe ich einen eigenen Kontextmanager für die with-Anweisung?':
        'How do I write my own context manager for the with statement?',
    'Wie erzeuge ich in Node.js kryptografisch sichere Zufallsbytes?':
        'How do I generate cryptographically secure random bytes in Node.js?',
}


def counts(index: Index) -> dict[str, tuple[int, int, int]]:
    """{form: (right file first, right file in the top 3, questions)} for each way of asking."""
    out = {}
    for form in ("as asked", "English", "both"):
        top1 = top3 = 0
        for q, _lang, files, _answer in QUESTIONS:
            if q not in EN:
                continue
            text = q if form == "as asked" else EN[q] if form == "English" else q + " " + EN[q]
            paths = [h.path for h in index.grep(text, limit=10).hits]
            rank = next((i for i, p in enumerate(paths) if re.search(files, p)), None)
            top1 += rank == 0
            top3 += rank is not None and rank < 3
        out[form] = (top1, top3, len(EN))
    return out


if __name__ == "__main__":
    with Index.open(relevance_corpus.build().db) as idx:
        print(json.dumps(counts(idx)))
