"""Language-centred cosines (indexer/search/centering.py): what they compute, when they apply, and the order
they give a question asked in another language than the file that answers it."""
from __future__ import annotations

import apsw
import numpy as np

from mcp_nextcloud.indexer.search import centering
from mcp_nextcloud.indexer.store.schema import CHUNK_BITS

DIM = 16


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _files(langs: dict[int, str]) -> apsw.Connection:
    con = apsw.Connection(":memory:")
    con.execute("CREATE TABLE files(id INTEGER PRIMARY KEY, lang TEXT)")
    con.executemany("INSERT INTO files VALUES(?, ?)", list(langs.items()))
    return con


def _corpus(per_lang: int, rng: np.random.Generator):
    """Windows in English and German: each a language direction (strong) plus one of eight subjects."""
    lang_dir = {"en": np.eye(DIM)[0] * 3, "de": np.eye(DIM)[1] * 3}
    ids, vecs, langs, subjects = [], [], {}, []
    fid = 1
    for lang, direction in lang_dir.items():
        for k in range(per_lang):
            subject = k % 8
            vecs.append(direction + np.eye(DIM)[2 + subject] * 2 + rng.normal(0, 0.3, DIM))
            ids.append(fid << CHUNK_BITS)
            langs[fid] = lang
            subjects.append((lang, subject))
            fid += 1
    return np.array(ids, dtype=np.int64), _unit(np.array(vecs)), langs, subjects, lang_dir


def test_the_centred_cosines_are_the_cosines_of_the_centred_vectors():
    rng = np.random.default_rng(1)
    ids, vecs, langs, _, _ = _corpus(60, rng)
    c = centering.of(_files(langs), ids, vecs)
    assert c is not None
    q = _unit(rng.normal(0, 1, DIM))
    shifted = _unit(vecs - centering.SHARE * c.means[c.row_mean])
    expected = shifted @ _unit(q - c.shift)
    assert np.allclose(centering.cosines(c, vecs @ q, q), expected, atol=1e-5)


def test_a_question_in_german_ranks_the_english_windows_on_its_subject_higher():
    rng = np.random.default_rng(2)
    ids, vecs, langs, subjects, lang_dir = _corpus(64, rng)
    question = _unit(lang_dir["de"] + np.eye(DIM)[2 + 5] * 1.2)     # German, about subject 5
    plain = vecs @ question
    centred = centering.cosines(centering.of(_files(langs), ids, vecs), plain, question)
    wanted = {i for i, s in enumerate(subjects) if s == ("en", 5)}

    def first_wanted(sims: np.ndarray) -> int:
        return next(r for r, i in enumerate(np.argsort(-sims).tolist()) if i in wanted)

    # plainly, every German window (on any subject) is nearer than the English ones on the subject
    assert first_wanted(plain) >= 64
    # centred, before most German windows on other subjects (the eight German ones on it stay ahead)
    assert first_wanted(centred) < first_wanted(plain) / 2


def test_an_index_without_a_language_of_min_windows_is_not_centred():
    rng = np.random.default_rng(3)
    ids, vecs, langs, _, _ = _corpus(centering.MIN_WINDOWS - 1, rng)
    assert centering.of(_files(langs), ids, vecs) is None
    plain = vecs @ vecs[0]
    assert centering.cosines(None, plain, vecs[0]) is plain
    assert centering.of(_files({}), np.zeros(0, dtype=np.int64), np.zeros((0, DIM), dtype=np.float32)) is None


def _reference(rng: np.random.Generator, lang_dir: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Reference means as benchmarks/language_means.py makes them, from another corpus of both languages."""
    ids, vecs, langs, _, _ = _corpus(64, rng)
    owner = np.array([langs[int(i) >> CHUNK_BITS] for i in ids.tolist()])
    return {"en": vecs[owner == "en"].mean(axis=0), "de": vecs[owner == "de"].mean(axis=0),
            centering.ALL: vecs.mean(axis=0)}


def test_a_language_with_few_windows_is_centred_on_the_reference_means():
    """64 English windows on eight subjects and six German ones on other subjects than a German question's:
    the German windows, with no mean of their own, drew the question by their language alone; centred on the
    reference means, the English windows on its subject come first."""
    rng = np.random.default_rng(4)
    ids, vecs, langs, subjects, lang_dir = _corpus(64, rng)
    german = [i for i, s in enumerate(subjects) if s[0] == "de" and s[1] != 5][:6]
    keep = [i for i, s in enumerate(subjects) if s[0] == "en"] + german
    ids, vecs, subjects = ids[keep], vecs[keep], [subjects[i] for i in keep]
    assert sum(s[0] == "de" for s in subjects) == 6
    question = _unit(lang_dir["de"] + np.eye(DIM)[2 + 5] * 2)   # made as the windows are
    wanted = {i for i, s in enumerate(subjects) if s == ("en", 5)}

    def first_wanted(c: centering.Centering | None) -> int:
        sims = centering.cosines(c, vecs @ question, question)
        return next(r for r, i in enumerate(np.argsort(-sims).tolist()) if i in wanted)

    without = centering.of(_files(langs), ids, vecs, known={})
    with_reference = centering.of(_files(langs), ids, vecs, known=_reference(np.random.default_rng(5), lang_dir))
    assert without is not None and with_reference is not None
    assert first_wanted(without) >= 6          # every German window first, whatever its subject
    assert first_wanted(with_reference) == 0
    assert len(with_reference.means) == 3      # all, English's own, German's borrowed


def test_the_shipped_reference_is_the_models_and_a_file_for_another_model_is_ignored(tmp_path, monkeypatch):
    from mcp_nextcloud.indexer.embedding import MODEL_NAME

    shipped = centering.reference()
    assert {"de", "en", "fr", centering.ALL} <= set(shipped) and shipped["de"].shape == (384,)
    other = tmp_path / "means.npz"
    np.savez(other, model=np.array("another model"), de=np.ones(384, dtype=np.float32))
    monkeypatch.setattr(centering, "REFERENCE", other)
    centering.reference.cache_clear()
    try:
        assert centering.reference() == {}
        np.savez(other, model=np.array(MODEL_NAME), de=np.ones(384, dtype=np.float32))
        centering.reference.cache_clear()
        assert set(centering.reference()) == {"de"}
    finally:
        centering.reference.cache_clear()
