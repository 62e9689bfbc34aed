"""normalize / normalize_query / fold_words: every PDF artefact folds away and offsets map back."""
from __future__ import annotations

import importlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_nextcloud.reader.normalize import NormalizedText, fold_words, normalize, normalize_query


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("New App", "newapp"),
        ("newapp", "newapp"),
        ("NEW-APP", "newapp"),
        ("propriétés", "proprietes"),
        ("PROPRIÉTÉS", "proprietes"),
        ("proprietes", "proprietes"),
        ("propri´et´es", "proprietes"),  # spacing acute before the letter, as PDFs emit it
        ("D`es", "des"),
        ("pe\u0301riode", "periode"),  # combining acute
        ("\ufb01ne \ufb02ow", "fineflow"),  # ligatures
        ("Straße", "strasse"),
        ("a\u00a0b\r\nc\td", "abcd"),  # NBSP, CR, tab
        ("soft\u00adhyphen", "softhyphen"),
        ("x\ufffey", "xy"),
        ("zero\u200bwidth\u200d\ufeff", "zerowidth"),
        ("expres-\nsion", "expression"),
        ("well\u2010known well\u2011known", "wellknownwellknown"),
        ("ˆa˜b¨c¸d˘e˙f˚g˛h˝i¯jˇk", "abcdefghijk"),
        ("Ærø Łódź Œuvre", "aerolodzoeuvre"),
        ("ＦＵＬＬ", "full"),
        ("C'est (v1.2), 50% «ok»!", "c'est(v1.2),50%«ok»!"),  # other punctuation kept
        ("Привет Мир", "приветмир"),  # other scripts kept, case-folded
    ],
)
def test_query_folding(query: str, expected: str) -> None:
    assert normalize_query(query) == expected


def test_query_folding_agrees_with_document_folding() -> None:
    text = "Les PROPRI´ET´ES de l’ﬁchier — Straße, expres-\nsion."
    assert normalize(text).norm == normalize_query(text)


def test_offsets_point_at_original_characters() -> None:
    text = "Dès\u00a0l'ouver-\nture: ﬁn, Straße."
    nt = normalize(text)
    assert len(nt.offsets) == len(nt.norm)
    assert list(nt.offsets) == sorted(nt.offsets)
    for k, ch in enumerate(nt.norm):
        # Each folded character comes from an original character that folds to something containing it.
        assert ch in normalize_query(text[nt.offsets[k]])
    i = nt.norm.index("ouverture")
    start, end = nt.to_original(i, i + len("ouverture"))
    assert text[start:end] == "ouver-\nture"
    i = nt.norm.index("fin")
    assert text[slice(*nt.to_original(i, i + 3))] == "ﬁn"
    # A match ending inside the fold of ß still covers the whole ß.
    i = nt.norm.index("stras")
    assert text[slice(*nt.to_original(i, i + 5))] == "Straß"


def test_to_original_rejects_spans_outside() -> None:
    nt = normalize("abc")
    with pytest.raises(ValueError, match="outside"):
        nt.to_original(2, 5)


def test_serialisation_round_trip_and_compactness() -> None:
    text = ("Chapitre 1. Les propri´et´es du ﬁchier — Straße.\r\n" * 2000) + "fin"
    nt = normalize(text)
    blob = nt.to_bytes()
    back = NormalizedText.from_bytes(blob)
    assert back.norm == nt.norm
    assert back.offsets == nt.offsets
    assert back.length == len(text)
    assert back.expanded is True
    assert len(blob) < len(text) // 10  # zlib over delta-encoded offsets


def test_serialisation_of_plain_text_is_not_expanded() -> None:
    back = NormalizedText.from_bytes(normalize("plain ascii text").to_bytes())
    assert back.expanded is False
    assert back.norm == "plainasciitext"


@pytest.mark.parametrize("blob", [b"", b"NT", b"XX" + bytes(20), b"NT\x01" + bytes(12) + b"garbage"])
def test_damaged_serialisation_is_refused(blob: bytes) -> None:
    with pytest.raises(ValueError, match="rebuild"):
        NormalizedText.from_bytes(blob)


def test_other_version_is_refused() -> None:
    blob = bytearray(normalize("abc").to_bytes())
    blob[2] = 99
    with pytest.raises(ValueError, match="another version"):
        NormalizedText.from_bytes(bytes(blob))


def test_fold_words_keeps_word_boundaries() -> None:
    text = "  Les PROPRI´ET´ES\u00a0du  ﬁchier:\r\nexpres-\nsion, well-known Straße D`es soft\u00adly  "
    assert fold_words(text) == "les proprietes du fichier: expression, well-known strasse des softly"
    assert fold_words("expres\u00ad\n  sion") == "expression"
    assert fold_words("a -\nb") == "a - b"  # a dash after a space is not hyphenation


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80), st.data())
def test_fold_of_substring_is_found_in_fold_of_text(text: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(text)))
    j = data.draw(st.integers(i, len(text)))
    nt = normalize(text)
    assert len(nt.offsets) == len(nt.norm)
    assert all(0 <= o < len(text) for o in nt.offsets)
    assert normalize_query(text[i:j]) in nt.norm
    back = NormalizedText.from_bytes(nt.to_bytes())
    assert (back.norm, back.offsets) == (nt.norm, nt.offsets)


def test_lone_surrogates_survive_serialisation() -> None:
    text = "abc\udcff d"  # as decoded with errors="surrogateescape"
    nt = normalize(text)
    back = NormalizedText.from_bytes(nt.to_bytes())
    assert back.norm == nt.norm == "abc\udcffd"
    assert back.offsets == nt.offsets


# -- the C-pass fast paths against the plain per-character definition ------
# The fast paths (bytes.translate over UTF-8, one replace per distinct non-ASCII
# character, placeholder counts) must give exactly what one str.translate over
# the fold tables gives; these references are that definition, written plainly.
_nm = importlib.import_module("mcp_nextcloud.reader.normalize")  # the module (reader.normalize is also the function)
_REF_HYPHEN = re.compile(r"(?<=\w)[-\u2010\u2011\u00ad\ufffe][ \t\u00a0]*\r?\n[ \t\u00a0\r\n]*")


def _ref_fold_words(text: str) -> str:
    joined = _REF_HYPHEN.sub("", text)
    return re.sub(" {2,}", " ", joined.translate(_nm._WORDS)).strip()


def _ref_counts(text: str) -> bytes:
    return bytes(min(len(_nm._FOLD[ord(c)]), 255) for c in text)


# Characters that exercise every branch: ASCII incl. controls and the count
# placeholders (0x0e..0x1b), hyphens and line ends, accents, expansions (ß, ligatures),
# characters dropped in context (soft hyphen, zero-width, combining marks, NBSP),
# lone surrogates, and a script with many distinct letters (the translate fallback).
_FAST_ALPHABET = (list("aZ -\n\r\t^`'.\x00\x0e\x10\x1b\x1f")
                  + list("éÉèßﬁﬃÆø\u00ad\u200b\u0301\u00a0\u2003\u2010\u2011\ufffe")
                  + ["\udcff", "İ", "ǅ", "ﷺ"] + [chr(c) for c in range(0x410, 0x440)])
_FAST_TEXT = st.text(alphabet=st.sampled_from(_FAST_ALPHABET), max_size=200)


@settings(max_examples=300, deadline=None)
@given(_FAST_TEXT)
def test_fast_paths_equal_the_per_character_definition(text: str) -> None:
    assert fold_words(text) == _ref_fold_words(text)
    assert normalize_query(text) == text.translate(_nm._FOLD)
    nt = normalize(text)
    assert nt.norm == text.translate(_nm._FOLD)
    assert nt.counts == _ref_counts(text)
    assert len(nt.offsets) == len(nt.norm)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=120))
def test_fast_paths_equal_the_definition_on_any_text(text: str) -> None:
    assert fold_words(text) == _ref_fold_words(text)
    assert normalize(text).counts == _ref_counts(text)
    assert normalize_query(text) == text.translate(_nm._FOLD)


@pytest.mark.parametrize("text", [
    "plain ascii words",                                     # pure ASCII path
    "Crème brûlée, Straße and ﬁne print",                    # few distinct non-ASCII: replace path
    "Привет мир, это длинный текст на русском языке ЁЖЗИЙ",  # many distinct: translate fallback
    "a\u00a0\u200b b \u2003 c\u00ad",                        # non-ASCII space / dropped char between spaces
    "x\x10y ß \x1b",                                         # a placeholder control char in the text
    "ﷺ expands to many characters",                         # a fold longer than the placeholders cover
    "İstanbul ǅ",                                            # folds that decompose again
])
def test_fast_path_examples(text: str) -> None:
    assert fold_words(text) == _ref_fold_words(text)
    nt = normalize(text)
    assert nt.norm == text.translate(_nm._FOLD) and nt.counts == _ref_counts(text)


def test_line_end_hyphen_needs_a_word_character_before_it() -> None:
    for text in ["a--\nb", "a-\n-\nb", "x -\ny", "(-\n)", "é-\nè", "9\u00ad\n 1", "_\ufffe\r\n\tz"]:
        assert fold_words(text) == _ref_fold_words(text), text


# -- the offset map ----------------------------------------------------------
def _eager_offsets(text: str) -> list[int]:
    """The definition: original index i repeated once per character it folds to."""
    return [i for i, c in enumerate(text) for _ in range(len(_nm._FOLD[ord(c)]))]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["word ", "Straße ", "ﬁn ", " " * 5000, "é", "\u00ad", "x" * 4096, "ﷺ", "\n"]),
                max_size=12))
def test_offsets_equal_the_definition_on_long_texts(pieces: list[str]) -> None:
    # Long texts with expansions (ß, ligatures, a 1-to-many fold) and long runs that fold to nothing.
    text = "".join(pieces)
    nt = normalize(text)
    expected = _eager_offsets(text)
    assert len(nt.norm) == len(expected) and list(nt.offsets) == expected
    back = NormalizedText.from_bytes(nt.to_bytes())
    assert list(back.offsets) == expected and back.expanded == nt.expanded
