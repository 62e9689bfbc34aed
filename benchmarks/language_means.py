"""Write the embedding model's reference language means (indexer/search/language_means.npz) for centering.py.

They are the mean window vectors, per language with centering.MIN_WINDOWS windows or more, and over every
window (centering.ALL), of the relevance corpus (relevance_corpus.py: Debian and Python documentation in
English, German and French), stamped with the model's name: centering.reference() ignores a file made for
another model. Rerun it when the embedding model changes:

    python3 -m benchmarks.language_means          (builds the relevance corpus first if needed, ~6 min)
"""
from __future__ import annotations

import collections

import numpy as np

from benchmarks import relevance_corpus
from mcp_nextcloud.indexer.embedding import MODEL_NAME
from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.indexer.store.index import Index as OpenIndex
from mcp_nextcloud.indexer.search import centering, semantic


def means(index: OpenIndex) -> dict[str, np.ndarray]:
    """{language: mean window vector} for each language with MIN_WINDOWS windows, and ALL: every window's."""
    con = index.conn()
    matrix = semantic._matrix(index, con)
    if matrix is None:
        raise SystemExit("the relevance index has no meaning vectors: rebuild it (delete its cache folder)")
    owner = centering.window_languages(con, matrix.ids)
    counts = collections.Counter(owner.tolist())
    out = {lang: matrix.vecs[owner == lang].mean(axis=0).astype(np.float32)
           for lang, n in sorted(counts.items()) if lang and n >= centering.MIN_WINDOWS}
    out[centering.ALL] = matrix.vecs.mean(axis=0).astype(np.float32)
    print({lang: counts[lang] for lang in sorted(counts)}, "windows; written:", sorted(out))
    return out


def main() -> None:
    built = relevance_corpus.build()
    with Index.open(built.db) as index:
        found = means(index)
    np.savez(centering.REFERENCE, model=np.array(MODEL_NAME), **found)   # type: ignore[arg-type]
    print(f"wrote {centering.REFERENCE}")


if __name__ == "__main__":
    main()
