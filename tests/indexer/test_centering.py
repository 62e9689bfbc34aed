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
