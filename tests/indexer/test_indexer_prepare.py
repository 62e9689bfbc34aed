"""prepare: the fast folding is exactly reader's fold_words; chunks cover the text exactly."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.chunking import chunk_text
from indexer.prepare import fast_fold_words
from reader.normalize import fold_words

TRICKY = st.sampled_from(list("aZ09 -\n\t\r\u00a0\u00ad\u2010ﬁßéÉ´\u0301\u200b日-\x00\x07.,;:\"'()*") + ["-\n", "- \n"])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), st.lists(TRICKY, max_size=60).map("".join)))
def test_fast_fold_words_equals_fold_words(text):
    assert fast_fold_words(text) == fold_words(text)


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
