"""Chunking and row preparation: chunks cover the text exactly; FTS rows overlap the next chunk."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_nextcloud.indexer.store.chunking import chunk_text
from mcp_nextcloud.indexer.store.prepare import OVERLAP, prepare
from mcp_nextcloud.reader.document import Document
from mcp_nextcloud.reader.normalize import fold_words

@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab \n\fé")), max_size=20_000),
       st.lists(st.integers(min_value=0, max_value=20_000), max_size=8))
def test_chunks_cover_the_text_in_order(text, pages):
    chunks = chunk_text(text, sorted(set([0, *pages])))
    assert "".join(c.text for c in chunks) == text
    assert [c.seq for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert text[c.start:c.start + len(c.text)] == c.text
        assert c.line == text.count("\n", 0, c.start) + 1
        assert len(c.text) <= 4000 or len(chunks) == 1


def test_chunks_prefer_page_boundaries():
    text = "x " * 1500 + "y " * 1500 + "z " * 1500
    chunks = chunk_text(text, [0, 3000, 6000])
    assert [c.start for c in chunks] == [0, 3000, 6000]


def test_prepare_rows_fold_text_and_overlap_the_next_chunk():
    text = "Crème " * 1000 + "Brûlée " * 1000
    p = prepare(Document(text=text, kind="text"))
    assert len(p.chunks) == len(p.folded) > 2 and p.chars == len(text) and p.norm_blob is None
    first = p.folded[0][1]
    assert first.startswith("creme creme") and len(first) > 3000
    import zlib

    body0 = zlib.decompress(p.chunks[0][3]).decode()
    body1 = zlib.decompress(p.chunks[1][3]).decode()
    assert fold_words(body0) != first and first.startswith(fold_words(body0))
    assert len(first) - len(fold_words(body0)) <= OVERLAP + 1
    assert fold_words(body1).startswith(first[len(fold_words(body0)):].strip())
