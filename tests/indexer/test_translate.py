"""Question words translated into English (indexer/search/translate.py): the installed FreeDict dictionaries
give the words English documents use for the examples of issue 48; without dictionaries every answer is []
and status() says what to install; a small dictionary written here checks the parsing and the cache."""
from __future__ import annotations

import gzip

import pytest

from mcp_nextcloud.indexer.search import dictionaries, translate

pytest.importorskip("Stemmer")

installed = pytest.mark.skipif(
    not (dictionaries.source("de") and dictionaries.source("fr")),
    reason=f"no FreeDict dictionaries here (apt-get install {dictionaries.PACKAGES})")


@pytest.fixture(scope="module")
def tables():
    translate.prepare()   # the first run parses the German dictionary once (seconds) into the user's cache


@installed
@pytest.mark.parametrize(("word", "lang", "english"), [
    ("kopiere", "de", "copy"),                               # ich kopiere -> kopieren
    ("Umgebungsvariablen", "de", "environment variable"),     # plural -> its singular's term
    ("Verzeichnis", "de", "directory"),
    ("Zufallszahlen", "de", "random number"),
    ("Ausgabe", "de", "output"),                             # the computing sense before "edition"
    ("lese", "de", "read"),                                  # ich lese -> lesen, not the noun Lese (harvest)
    ("starte", "de", "start"),
    ("externes", "de", "external"),                          # an inflected adjective
    ("Konfigurationsdateien", "de", "configuration file"),
    ("Dateisystem", "de", "file system"),
    ("Kontextmanager", "de", "context manager"),             # a compound of two headwords
    ("kryptografisch", "de", "cryptographic"),
    ("télécharger", "fr", "download"),
    ("fichiers", "fr", "file"),
])
def test_the_examples_of_the_issue_translate(tables, word, lang, english):
    assert english in translate.english_words(word, lang)


@installed
def test_few_terms_per_word_and_none_for_unknown_words(tables):
    assert len(translate.english_words("Verzeichnis", "de")) == translate.MAX_PER_WORD
    assert translate.english_words("Verzeichnis", "de", limit=1) == ["directory"]
    assert translate.english_words("xqzzyv", "de") == []
    assert translate.english_words("Datei", "es") == []          # no Spanish dictionary
    assert translate.translate_terms(["Datei", "xqzzyv"], "de") == {"Datei": ["file", "computer file"]}
    assert translate.available("de") and "de, fr" in translate.status()


def test_without_dictionaries_nothing_is_translated_and_status_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv(dictionaries.DIRS_ENV, str(tmp_path))
    assert not translate.available() and not translate.available("de")
    assert translate.english_words("Verzeichnis", "de") == []
    assert translate.translate_terms(["Datei"], "de") == {}
    assert "apt-get install dict-freedict-deu-eng" in translate.status() and "\n" not in translate.status()
    translate.prepare()   # nothing to build, and no error


def _write_dictionary(folder, entries: list[tuple[str, str]]) -> None:
    """A dictd dictionary as FreeDict ships it: the index's offsets in base64 into the gzip'd entries."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    def b64(n: int) -> str:
        out = ""
        while True:
            out = alphabet[n % 64] + out
            n //= 64
            if not n:
                return out
    body, lines = b"", []
    for head, text in entries:
        data = text.encode()
        lines.append(f"{head}\t{b64(len(body))}\t{b64(len(data))}\n")
        body += data
    (folder / "freedict-deu-eng.index").write_text("".join(sorted(lines)), encoding="utf-8")
    (folder / "freedict-deu-eng.dict.dz").write_bytes(gzip.compress(body))


def test_a_dictionary_is_parsed_to_its_translations_and_cached_by_its_file(tmp_path, monkeypatch):
    monkeypatch.setenv(dictionaries.DIRS_ENV, str(tmp_path / "dict"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "dict").mkdir()
    _write_dictionary(tmp_path / "dict", [
        ("ausgabe", "Ausgabe /ˈaʊsɡˌɑːbə/ <fem, n, sg>\nedition <n>ed.,  /ˈeːt/\n"
                    '      "broschierte Ausgabe"  - paper edition\n   Synonyms: {Auflage}\n'),
        ("ausgabe", "Ausgabe /ˈaʊsɡˌɑːbə/ <fem, n, sg>\n [comp.] output <n>\n see: {Echtzeitausgabe}\n"),
        ("etw ersetzen", "etw. ersetzen /ɛɾzˈɛtsən/ <v>\nreplace sth. <v>, substitute sth. <v>\n"),
        ("zufallszahl", "Zufallszahl /tsuːfˈalstsɑːl/ <fem, n, sg>\nrandom number <n>\n"),
    ])
    assert translate.available("de") and not translate.available("fr")
    assert translate.english_words("Ausgabe", "de") == ["output", "edition"]   # [comp.] first; no "ed", IPA
    assert translate.english_words("ersetze", "de") == ["replace", "substitute"]   # "sth." and "etw." dropped
    assert translate.english_words("Zufallszahlen", "de") == ["random number"]
    cached = list((tmp_path / "cache").rglob("freedict-deu-eng-*.db"))
    assert len(cached) == 1 and cached[0] == dictionaries.cache_file(dictionaries.source("de"))


def test_a_damaged_dictionary_translates_nothing_and_status_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv(dictionaries.DIRS_ENV, str(tmp_path / "dict"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "dict").mkdir()
    (tmp_path / "dict" / "freedict-deu-eng.index").write_text("datei\tA\tZ\n", encoding="utf-8")
    (tmp_path / "dict" / "freedict-deu-eng.dict.dz").write_bytes(b"not gzip")
    assert translate.english_words("Datei", "de") == []
    assert "de unreadable (freedict-deu-eng.index" in translate.status()
    assert not list((tmp_path / "cache").rglob("*.tmp"))
