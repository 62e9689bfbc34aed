"""CPU work that turns a Document into index rows, done off the writer (in extraction workers).

`prepare(doc)` folds each chunk for FTS (`fold_words`), compresses chunk text
and the Document's JSON, and (for long texts) serialises the normalised form.
The extraction pool runs it in the worker process next to `extract`, so the
single writer only executes INSERTs; `IndexWriter.store_document` runs it
in-process for Documents that did not come through the pool.
"""
from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field

from mcp_nextcloud.reader.document import Document
from mcp_nextcloud.reader.normalize import fold_words, normalize

from mcp_nextcloud.indexer.store.chunking import chunk_text
from mcp_nextcloud.indexer.store.language import detect_folded, sample_folded
from mcp_nextcloud.indexer.store.schema import TITLE_CHARS

ZLEVEL = 1
# Below this many characters `reader.find` normalises on demand in a few ms,
# so storing the normalised form (slow to serialise) is not worth its cost.
NORM_MIN_CHARS = 200_000
OVERLAP = 80  # characters of the next chunk indexed with each chunk (phrases across a cut)


@dataclass
class Prepared:
    """Everything the writer INSERTs for one document."""

    meta_json: str
    chars: int
    norm_blob: bytes | None
    kind: str = "text"
    engine: str | None = None
    mime: str | None = None
    chunks: list[tuple[int, int, int, bytes]] = field(default_factory=list)   # (seq, start, line, zlib body)
    folded: list[tuple[int, str]] = field(default_factory=list)               # (seq, fold_words(body))
    lang: str | None = None                          # language of the text (language.detect)
    title: str | None = None                         # its first top-level heading (search/titles.py ranks by it)


def prepare(doc: Document) -> Prepared:
    """Chunk, fold and compress a Document for the index (pure CPU, no database)."""
    meta = doc.to_dict()
    meta.pop("text", None)
    norm_blob = None
    if len(doc.text) >= NORM_MIN_CHARS:
        nt = doc._normalized if doc._normalized is not None else normalize(doc.text)
        norm_blob = nt.to_bytes()  # already zlib-compressed by the reader
    p = Prepared(meta_json=json.dumps(meta, separators=(",", ":"), ensure_ascii=False), chars=len(doc.text),
                 norm_blob=norm_blob, kind=doc.kind, engine=doc.engine, mime=doc.mime,
                 title=title_of(doc))
    chunks = chunk_text(doc.text, doc.pages)
    for k, ch in enumerate(chunks):
        p.chunks.append((ch.seq, ch.start, ch.line, zlib.compress(ch.text.encode("utf-8"), ZLEVEL)))
        # The FTS row also holds the first words of the next chunk, so a phrase cut by the
        # boundary still matches (grep then reads the two chunks joined).
        body = ch.text + _head(chunks[k + 1].text) if k + 1 < len(chunks) else ch.text
        p.folded.append((ch.seq, fold_words(body)))
    # From the chunks as folded for FTS: the text is not folded a second time. '' = no clear language
    # (NULL: indexed before detection).
    p.lang = detect_folded(sample_folded([f for _, f in p.folded])) or ""
    return p


def title_of(doc: Document) -> str | None:
    """The document's title: the first of its top-level headings (schema.py's v6 takes the same from the
    stored outline). A page's side menu may open on a lower heading ("Table of Contents", an h3)."""
    if not doc.outline:
        return None
    top = min(e.level for e in doc.outline)
    return next(e.title for e in doc.outline if e.level == top)[:TITLE_CHARS]


def _head(text: str) -> str:
    """The first OVERLAP characters of `text`, cut back to whole words."""
    if len(text) <= OVERLAP:
        return text
    cut = text.rfind(" ", 0, OVERLAP)
    return text[:cut] if cut > 0 else text[:OVERLAP]
