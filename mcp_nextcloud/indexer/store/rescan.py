"""Scanned pages read again once an OCR engine is installed.

A file extracted on a machine without OCR is marked (engine '...+no-ocr',
schema v5's files_no_ocr index) and would never be extracted again: its
etag, size and mtime do not change when Tesseract gets installed. When the
engine is here now, `requeue_unread_scans` makes those files look changed
(no etag and mtime 0; for remote ones their folders' etags are forgotten so
the walk lists them), so the next sync or rescan extracts them with OCR. Their old
rows stay until then; the mark goes when the new text is stored.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_nextcloud.indexer.store.index import NO_OCR

if TYPE_CHECKING:   # types only
    from mcp_nextcloud.indexer.store.index import Index
    from mcp_nextcloud.indexer.store.tx import WriteTx


def _ancestors(path: str) -> set[str]:
    parts = path.strip("/").split("/")[:-1]
    return {"/"} | {"/" + "/".join(parts[:k]) for k in range(1, len(parts) + 1)}


def _requeue(tx: WriteTx) -> int:
    rows = tx.con.execute(f"SELECT path, source FROM files WHERE {NO_OCR}").fetchall()
    folders = {a for path, source in rows if source == "remote" for a in _ancestors(str(path))}
    tx.con.execute(f"UPDATE files SET etag=NULL, mtime=0 WHERE {NO_OCR}")   # tx._unchanged: neither matches
    tx.con.executemany("DELETE FROM folders WHERE path=?", [(f,) for f in sorted(folders)])
    return len(rows)


def requeue_unread_scans(index: Index) -> int:
    """When an OCR engine is installed now, make the files whose scans were not read look changed; how many."""
    from mcp_nextcloud.reader import ocr

    if not index.conn().execute(f"SELECT 1 FROM files WHERE {NO_OCR} LIMIT 1").fetchall():
        return 0   # the common case: one probe of a partial index, no engine lookup
    if ocr.engine() is None:
        return 0
    return index.writer().call(_requeue)
