"""The write side of the index: the one writer connection of a process.

Every method takes the writer lock, so the sync thread, the local indexer and
files_read cache writes can share it; `transaction()` groups calls into one
commit for bulk loads.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

from reader.document import Document

from indexer.models import FileMeta, FileRecord
from indexer.store.roots import FolderOverlap, PathCollision, RemotePathConflict, RootsMixin
from indexer.store.rows import FAILURE_STATUSES, FILE_COLUMNS, _connect, _row_to_record, fold_name, prefix_clause
from indexer.store.schema import CHUNK_BITS

if TYPE_CHECKING:  # pragma: no cover
    from indexer.store.prepare import Prepared


__all__ = ["IndexWriter", "PathCollision", "FolderOverlap", "RemotePathConflict"]


class IndexWriter(RootsMixin):
    """The one writer connection of this process; every method is thread-safe.

    Local folders (roots) and who holds a path when two folders' files collide
    live in `indexer.store.roots`.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._con = _connect(str(path), readonly=False)
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            self._con.close()

    def _tx(self) -> "_Tx":
        return _Tx(self._con, self._lock)

    def transaction(self) -> "_Tx":
        """Group several writer calls into one transaction (bulk loads: far fewer FTS segments).

        Other threads' writer calls wait until it ends; a crash inside loses
        only this group, whose files are then still pending and redone.
        """
        return _Tx(self._con, self._lock)

    def _get(self, sql: str, args: tuple) -> FileRecord | None:
        rows = self._con.execute(f"SELECT {FILE_COLUMNS} FROM files WHERE {sql}", args).fetchall()
        return _row_to_record(rows[0]) if rows else None

    def record(self, rec_id: int) -> FileRecord | None:
        """The record with rowid `rec_id`, as the writer sees it."""
        with self._lock:
            return self._get("id=?", (rec_id,))

    def _drop_content(self, rec_id: int) -> None:
        # docs, chunks and FTS rows are always written together: no docs row, nothing to delete.
        if not self._con.execute("SELECT 1 FROM docs WHERE id=?", (rec_id,)).fetchall():
            return
        lo = rec_id << CHUNK_BITS
        hi = lo | ((1 << CHUNK_BITS) - 1)
        self._con.execute("DELETE FROM chunks_fts WHERE rowid BETWEEN ? AND ?", (lo, hi))
        self._con.execute("DELETE FROM chunks WHERE id BETWEEN ? AND ?", (lo, hi))
        self._con.execute("DELETE FROM docs WHERE id=?", (rec_id,))

    @staticmethod
    def _unchanged(old: FileRecord, meta: FileMeta) -> bool:
        """Same content as what the record was extracted from?"""
        if old.status == "pending":
            return False
        if old.file_id is not None and meta.file_id is not None and old.file_id != meta.file_id:
            return False
        same_etag = old.etag is not None and meta.etag is not None and old.etag == meta.etag
        same_stat = old.size == meta.size and abs(old.mtime - meta.mtime) < 1e-3
        if meta.source == "remote" and meta.etag is not None and old.etag is not None:
            return same_etag
        # Local files can change before the desktop client updates the journal's etag.
        if old.etag is not None and meta.etag is not None and not same_etag:
            return False
        return same_stat

    def upsert(self, meta: FileMeta, notes: list[str] | None = None) -> tuple[FileRecord, bool]:
        """Record a file seen at a source; return (record, needs_extraction).

        Unchanged content (same fileId+etag remotely, same size+mtime locally) is
        never re-extracted; the same fileId at a new path is a move that keeps
        its text. A local file whose path another local folder already holds
        raises PathCollision (nothing is overwritten), unless a sync folder's
        file takes it from a plain folder's (`RootsMixin._claim`; the message
        goes to `notes`).
        """
        path = "/" + meta.path.strip("/")
        with self._tx():
            old = self._get("source=? AND path=?", (meta.source, path))
            if self._claim(old, meta, path, notes):
                old = None
            if meta.file_id is not None and (old is None or (old.file_id is not None and old.file_id != meta.file_id)):
                # The fileId lives elsewhere: this is a move (onto a free path or over another file).
                # Local fileIds are looked up in the same folder only: two sync folders may be two accounts.
                moved = self._get("source=? AND file_id=? AND (? IS NULL OR root_id IS ?)",
                                  (meta.source, meta.file_id, meta.root_id, meta.root_id))
                old = moved or old
            if old is None:
                rec_id = self._con.execute(
                    "INSERT INTO files(path, name_fold, source, file_id, etag, size, mtime, mime, local_path, root_id, "
                    "status) VALUES(?,?,?,?,?,?,?,?,?,?,'pending') RETURNING id",
                    (path, fold_name(path), meta.source, meta.file_id, meta.etag, meta.size, meta.mtime, meta.mime,
                     meta.local_path, meta.root_id),
                ).fetchall()[0][0]
                return self._get("id=?", (rec_id,)), True
            unchanged = self._unchanged(old, meta)
            if old.path != path:
                # A move: whatever sat at the destination is replaced by the moved file.
                clash = self._get("source=? AND path=?", (meta.source, path))
                if clash is not None:
                    self._drop_content(clash.id)
                    self._con.execute("DELETE FROM files WHERE id=?", (clash.id,))
            if not unchanged:
                self._drop_content(old.id)
            self._con.execute(
                "UPDATE files SET path=?, name_fold=?, file_id=coalesce(?, file_id), etag=?, size=?, mtime=?, "
                "mime=coalesce(?, mime), local_path=?, root_id=coalesce(?, root_id), "
                "status=CASE WHEN ? THEN status ELSE 'pending' END, reason=CASE WHEN ? THEN reason ELSE NULL END, "
                "hash=CASE WHEN ? THEN hash ELSE NULL END WHERE id=?",
                (path, fold_name(path), meta.file_id, meta.etag, meta.size, meta.mtime, meta.mime, meta.local_path,
                 meta.root_id, unchanged, unchanged, unchanged, old.id),
            )
            return self._get("id=?", (old.id,)), not unchanged

    def move(self, rec_id: int, meta: FileMeta, notes: list[str] | None = None) -> FileRecord | None:
        """Give an existing record a new path (a rename or move): its text, status and hash are kept.

        The caller vouches that the content is the same (a rename event, or an
        equal content hash). Whatever record sat at the destination is replaced.
        """
        path = "/" + meta.path.strip("/")
        with self._tx():
            rec = self._get("id=?", (rec_id,))
            if rec is None:
                return None
            clash = self._get("source=? AND path=?", (rec.source, path))
            if clash is not None and clash.id != rec_id and not self._claim(clash, meta, path, notes):
                self._drop_content(clash.id)
                self._con.execute("DELETE FROM files WHERE id=?", (clash.id,))
            self._con.execute(
                "UPDATE files SET path=?, name_fold=?, local_path=?, root_id=coalesce(?, root_id), size=?, mtime=?, "
                "mime=coalesce(?, mime), file_id=coalesce(?, file_id), etag=coalesce(?, etag) WHERE id=?",
                (path, fold_name(path), meta.local_path, meta.root_id, meta.size, meta.mtime, meta.mime,
                 meta.file_id, meta.etag, rec_id))
            return self._get("id=?", (rec_id,))

    def set_hash(self, rec_id: int, content_hash: str) -> None:
        """Remember the content hash of the bytes being extracted for a record (move detection)."""
        with self._tx():
            self._con.execute("UPDATE files SET hash=? WHERE id=?", (content_hash, rec_id))

    def store_document(self, rec_id: int, doc: Document) -> None:
        """Store a file's extracted text (chunked, compressed), its normalised form and FTS rows; status indexed."""
        from indexer.store.prepare import prepare

        prepared = getattr(doc, "_index_prepared", None) or prepare(doc)  # the pool prepares in its workers
        self.store_prepared(rec_id, prepared)

    def store_prepared(self, rec_id: int, p: "Prepared") -> None:
        """Write rows made by `indexer.prepare.prepare` (only INSERTs happen under the lock)."""
        base = rec_id << CHUNK_BITS
        with self._tx():
            if not self._con.execute("SELECT 1 FROM files WHERE id=?", (rec_id,)).fetchall():
                return  # removed while it was being extracted
            self._drop_content(rec_id)
            self._con.execute("INSERT INTO docs(id, meta, norm, chars) VALUES(?,?,?,?)",
                              (rec_id, p.meta_json, p.norm_blob, p.chars))
            self._con.executemany("INSERT INTO chunks(id, start, line, body) VALUES(?,?,?,?)",
                                  [(base | seq, start, line, body) for seq, start, line, body in p.chunks])
            self._con.executemany("INSERT INTO chunks_fts(rowid, body) VALUES(?,?)",
                                  [(base | seq, folded) for seq, folded in p.folded])
            self._con.execute(
                "UPDATE files SET status='indexed', reason=NULL, kind=?, engine=?, mime=coalesce(mime, ?), "
                "indexed_at=? WHERE id=?",
                (p.kind, p.engine, p.mime, time.time(), rec_id),
            )

    def record_failure(self, rec_id: int, status: str, reason: str) -> None:
        """Mark a file too_large / unsupported / failed with its reason; kept until the file changes."""
        if status not in FAILURE_STATUSES:
            raise ValueError(f"status must be one of {', '.join(FAILURE_STATUSES)}, not {status!r}")
        with self._tx():
            self._drop_content(rec_id)
            self._con.execute("UPDATE files SET status=?, reason=?, indexed_at=? WHERE id=?",
                              (status, reason, time.time(), rec_id))

    def remove(self, rec_id: int) -> None:
        """Forget a file and its text."""
        with self._tx():
            self._drop_content(rec_id)
            self._con.execute("DELETE FROM files WHERE id=?", (rec_id,))

    def remove_under(self, path_prefix: str, *, source: str | None = None) -> int:
        """Forget every file at or below `path_prefix`; return how many."""
        cond, args = prefix_clause(path_prefix)
        sql = f"SELECT id FROM files WHERE {cond}"
        if source is not None:
            sql += " AND source=?"
            args.append(source)
        with self._tx():
            ids = [r[0] for r in self._con.execute(sql, args).fetchall()]
            for rec_id in ids:
                self._drop_content(rec_id)
                self._con.execute("DELETE FROM files WHERE id=?", (rec_id,))
        return len(ids)

    def set_folder_etag(self, path: str, etag: str | None) -> None:
        """Remember (or forget, with None) a remote folder's etag."""
        p = "/" + path.strip("/")
        with self._tx():
            if etag is None:
                self._con.execute("DELETE FROM folders WHERE path=?", (p,))
            else:
                self._con.execute("INSERT OR REPLACE INTO folders(path, etag) VALUES(?,?)", (p, etag))

    def clear_folder_etags(self) -> None:
        """Forget every remembered remote folder etag: the next sync walks the whole selection again."""
        with self._tx():
            self._con.execute("DELETE FROM folders")

    def set_meta(self, key: str, value: str) -> None:
        """Set a key/value (e.g. last_sync_at, last_indexed:<folder>)."""
        with self._tx():
            self._con.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?,?)", (key, value))

    def checkpoint(self) -> None:
        """Fold the WAL into the database (after a bulk load) and refresh FTS segments."""
        with self._lock:
            with self._tx():
                self._con.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")
            self._con.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)


class _Tx:
    """BEGIN IMMEDIATE ... COMMIT under the writer lock (re-entrant: nested use joins the outer one)."""

    def __init__(self, con: apsw.Connection, lock: threading.RLock) -> None:
        self._con, self._lock = con, lock
        self._outer = False

    def __enter__(self) -> None:
        self._lock.acquire()
        self._outer = self._con.in_transaction is False
        if self._outer:
            self._con.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if self._outer:
                self._con.execute("COMMIT" if exc_type is None else "ROLLBACK")
        finally:
            self._lock.release()
