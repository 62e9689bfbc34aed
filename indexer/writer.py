"""The write side of the index: the one writer connection of a process.

Every method takes the writer lock, so the sync thread, the local indexer and
files_read cache writes can share it; `transaction()` groups calls into one
commit for bulk loads.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

from reader.document import Document

from .models import FileMeta, FileRecord, Root
from .rows import (FAILURE_STATUSES, FILE_COLUMNS, ROOT_COLUMNS, _connect, _row_to_record, _row_to_root, fold_name,
                   prefix_clause)
from .schema import CHUNK_BITS

if TYPE_CHECKING:  # pragma: no cover
    from .prepare import Prepared


class PathCollision(ValueError):
    """A local file's path is already held by a file of another local folder in this index."""


class FolderOverlap(RuntimeError):
    """A folder to index lies inside a local folder this index already holds."""


class IndexWriter:
    """The one writer connection of this process; every method is thread-safe."""

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

    def upsert(self, meta: FileMeta) -> tuple[FileRecord, bool]:
        """Record a file seen at a source; return (record, needs_extraction).

        Unchanged content (same fileId+etag remotely, same size+mtime locally) is
        never re-extracted; the same fileId at a new path is a move that keeps
        its text. A local file whose path another local folder already holds
        raises PathCollision (nothing is overwritten).
        """
        path = "/" + meta.path.strip("/")
        with self._tx():
            old = self._get("source=? AND path=?", (meta.source, path))
            self._check_root(old, meta, path)
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

    @staticmethod
    def _check_root(old: FileRecord | None, meta: FileMeta, path: str) -> None:
        """Refuse to let one local folder's file overwrite another folder's record at the same path."""
        if old is not None and meta.root_id is not None and old.root_id is not None and old.root_id != meta.root_id:
            raise PathCollision(
                f"{path} is already indexed from another local folder; this file ({meta.local_path}) was skipped: "
                "rename the top-level folder that collides, or index the folders into separate databases with "
                "--index; do not retry as is")

    def move(self, rec_id: int, meta: FileMeta) -> FileRecord | None:
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
            if clash is not None and clash.id != rec_id:
                self._check_root(clash, meta, path)
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

    # -- local folders -----------------------------------------------------
    def register_root(self, folder: str, *, journal: str | None = None) -> Root:
        """The roots row of a local folder, created on first use with a path prefix that cannot collide.

        The first folder keeps plain "/" + relative paths (a sync folder's
        paths then equal its Nextcloud paths); each later folder is namespaced
        under "/<folder name>" (made unique), so two folders' paths never
        collide and every path says which folder it is in. Local records
        written before roots existed (schema v2) are adopted by the folder
        they live in.
        """
        with self._tx():
            rows = self._con.execute(f"SELECT {ROOT_COLUMNS} FROM roots WHERE folder=?", (folder,)).fetchall()
            if rows:
                root = _row_to_root(rows[0])
                if journal != root.journal:
                    self._con.execute("UPDATE roots SET journal=? WHERE id=?", (journal, root.id))
                    root.journal = journal
                return root
            for (outer,) in self._con.execute("SELECT folder FROM roots"):
                if folder.startswith(outer.rstrip(os.sep) + os.sep):
                    raise FolderOverlap(
                        f"{folder} is inside {outer}, which this index already holds: its files are indexed "
                        f"from there; index {outer} again instead, or use another --index; do not retry as is")
            prefix = self._free_prefix(folder)
            now = time.time()
            rid = self._con.execute("INSERT INTO roots(folder, prefix, journal, added_at) VALUES(?,?,?,?) "
                                    "RETURNING id", (folder, prefix, journal, now)).fetchall()[0][0]
            self._adopt_legacy(rid, folder, prefix)
            return Root(rid, folder, prefix, journal, now, None)

    def _free_prefix(self, folder: str) -> str:
        if not self._con.execute("SELECT 1 FROM roots LIMIT 1").fetchall():
            return ""
        base = "".join(c if c.isprintable() and c != "/" else "_" for c in os.path.basename(folder)) or "folder"
        n = 1
        while True:
            prefix = "/" + (base if n == 1 else f"{base}-{n}")
            taken = self._con.execute(
                "SELECT 1 FROM roots WHERE prefix=? UNION ALL SELECT 1 FROM files WHERE source='local' AND "
                "(path=? OR (path > ? AND path < ?)) LIMIT 1", (prefix, prefix, prefix + "/", prefix + "0")).fetchall()
            if not taken:
                return prefix
            n += 1

    def _adopt_legacy(self, root_id: int, folder: str, prefix: str) -> None:
        lo, hi = folder.rstrip(os.sep) + os.sep, folder.rstrip(os.sep) + chr(ord(os.sep) + 1)
        legacy = self._con.execute("SELECT id, path FROM files WHERE source='local' AND root_id IS NULL AND "
                                   "local_path > ? AND local_path < ?", (lo, hi)).fetchall()
        for rec_id, path in legacy:
            new = prefix + path
            self._con.execute("UPDATE files SET root_id=?, path=?, name_fold=? WHERE id=?",
                              (root_id, new, fold_name(new), rec_id))

    def set_root_indexed(self, root_id: int, journal: str | None) -> None:
        """Record that a local folder was just indexed in full (and which journal it has)."""
        with self._tx():
            self._con.execute("UPDATE roots SET indexed_at=?, journal=? WHERE id=?", (time.time(), journal, root_id))

    def store_document(self, rec_id: int, doc: Document) -> None:
        """Store a file's extracted text (chunked, compressed), its normalised form and FTS rows; status indexed."""
        from .prepare import prepare

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
