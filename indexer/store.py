"""The index database: one SQLite file per account (apsw, WAL).

Exactly one writer connection per process (`Index.writer()`, serialised by a
lock so sync threads and files_read cache writes can share it) and one
read-only connection per reading thread. grep and name search live in
`indexer.grep` / `indexer.names`; this module owns the connections and rows.
"""
from __future__ import annotations

import json
import os
import threading
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import apsw
from unidecode import unidecode

from reader.document import Document

from .chunking import chunk_text
from .models import FileMeta, FileRecord
from .schema import CHUNK_BITS, migrate

if TYPE_CHECKING:  # pragma: no cover
    from .grep import GrepResult
    from .names import NameSearchResult
    from .prepare import Prepared

FILE_COLUMNS = (
    "id, path, source, file_id, etag, size, mtime, mime, local_path, kind, status, reason, engine, indexed_at"
)
FAILURE_STATUSES = ("too_large", "unsupported", "failed")


def default_index_path(account: str = "local") -> Path:
    """Where an account's index lives: $MCP_NEXTCLOUD_INDEX, else the platform data dir."""
    env = os.environ.get("MCP_NEXTCLOUD_INDEX")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    safe = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in account) or "local"
    return Path(user_data_dir("mcp-nextcloud")) / f"{safe}.db"


def fold_name(path: str) -> str:
    """Case- and accent-folded path used by name search (LIKE compares raw text)."""
    return unidecode(path).lower()


def prefix_clause(path_prefix: str | None, column: str = "path") -> tuple[str, list[Any]]:
    """SQL condition 'column is path_prefix or below it' that can use the path index."""
    if not path_prefix or path_prefix.strip("/") == "":
        return "1", []
    p = "/" + path_prefix.strip("/")
    # '/' + 1 == '0': every path below p sorts between p/ and p0.
    return f"({column} = ? OR ({column} > ? AND {column} < ?))", [p, p + "/", p + "0"]


def _row_to_record(row: tuple) -> FileRecord:
    (id_, path, source, file_id, etag, size, mtime, mime, local_path, kind, status, reason, engine, indexed_at) = row
    return FileRecord(
        path=path, source=source, file_id=file_id, etag=etag, size=size, mtime=mtime, mime=mime,
        local_path=local_path, id=id_, kind=kind, status=status, reason=reason, engine=engine,
        indexed_at=indexed_at,
    )


def _connect(path: str, readonly: bool) -> apsw.Connection:
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    con = apsw.Connection(path, flags=flags)
    con.set_busy_timeout(10_000)
    if not readonly:
        con.pragma("journal_mode", "wal")
        con.pragma("synchronous", "NORMAL")  # WAL + NORMAL: durable across process crashes
    return con


# One writer per database file per process, shared by every Index opened on it.
_WRITERS: dict[str, tuple["IndexWriter", int]] = {}
_WRITERS_LOCK = threading.Lock()


class Index:
    """Read side of the index: grep, name search, records and cached documents."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._key = str(path.resolve())
        self._local = threading.local()
        self._readers: list[apsw.Connection] = []
        self._readers_lock = threading.Lock()
        self._writer: IndexWriter | None = None
        self._closed = False

    @classmethod
    def open(cls, path: str | Path) -> "Index":
        """Open (creating and migrating the schema if needed) the index at `path`."""
        p = Path(path).expanduser()
        p.parent.mkdir(parents=True, exist_ok=True)
        con = _connect(str(p), readonly=False)
        try:
            migrate(con)
            if not con.execute("SELECT 1 FROM meta WHERE key='cursor_secret'").fetchall():
                with con:
                    con.execute("INSERT OR IGNORE INTO meta VALUES('cursor_secret', ?)", (os.urandom(16).hex(),))
        finally:
            con.close()
        return cls(p)

    # -- connections -------------------------------------------------------
    def conn(self) -> apsw.Connection:
        """This thread's read-only connection (created on first use)."""
        if self._closed:
            raise RuntimeError("index is closed: open it again with Index.open(path)")
        con = getattr(self._local, "con", None)
        if con is None:
            con = _connect(str(self.path), readonly=True)
            self._local.con = con
            with self._readers_lock:
                self._readers.append(con)
        return con

    def writer(self) -> "IndexWriter":
        """The single writer of this process for this database (created lazily)."""
        if self._writer is None:
            with _WRITERS_LOCK:
                entry = _WRITERS.get(self._key)
                w = entry[0] if entry else IndexWriter(self.path)
                _WRITERS[self._key] = (w, (entry[1] if entry else 0) + 1)
                self._writer = w
        return self._writer

    def close(self) -> None:
        """Close this thread's and every other reader connection, and release the writer."""
        if self._closed:
            return
        self._closed = True
        with self._readers_lock:
            for con in self._readers:
                try:
                    con.close()
                except apsw.Error:
                    pass
            self._readers.clear()
        if self._writer is not None:
            with _WRITERS_LOCK:
                w, n = _WRITERS.get(self._key, (self._writer, 1))
                if n <= 1:
                    _WRITERS.pop(self._key, None)
                    w.close()
                else:
                    _WRITERS[self._key] = (w, n - 1)
            self._writer = None

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- records -----------------------------------------------------------
    def get_file(self, *, path: str | None = None, file_id: int | None = None) -> FileRecord | None:
        """The record for a path (or a Nextcloud fileId); indexed records win over others."""
        if path is None and file_id is None:
            raise ValueError("get_file needs path= or file_id=")
        con = self.conn()
        if path is not None:
            p = "/" + path.strip("/")
            rows = con.execute(
                f"SELECT {FILE_COLUMNS} FROM files WHERE path=? ORDER BY status='indexed' DESC, indexed_at DESC LIMIT 1",
                (p,),
            ).fetchall()
        else:
            rows = con.execute(
                f"SELECT {FILE_COLUMNS} FROM files WHERE file_id=? ORDER BY status='indexed' DESC, indexed_at DESC LIMIT 1",
                (file_id,),
            ).fetchall()
        return _row_to_record(rows[0]) if rows else None

    def get_by_id(self, rec_id: int) -> FileRecord | None:
        """The record with rowid `rec_id`."""
        rows = self.conn().execute(f"SELECT {FILE_COLUMNS} FROM files WHERE id=?", (rec_id,)).fetchall()
        return _row_to_record(rows[0]) if rows else None

    def files_under(self, path_prefix: str, *, source: str | None = None) -> list[FileRecord]:
        """Every record at or below `path_prefix` ("/" = all), optionally of one source."""
        cond, args = prefix_clause(path_prefix)
        sql = f"SELECT {FILE_COLUMNS} FROM files WHERE {cond}"
        if source is not None:
            sql += " AND source=?"
            args.append(source)
        return [_row_to_record(r) for r in self.conn().execute(sql + " ORDER BY path", args)]

    def iter_local(self, local_root: str) -> Iterator[FileRecord]:
        """Records of the local source whose file lives under the directory `local_root`."""
        root = os.path.abspath(local_root).rstrip(os.sep)
        sql = f"SELECT {FILE_COLUMNS} FROM files WHERE source='local' AND (local_path > ? AND local_path < ?)"
        for row in self.conn().execute(sql, (root + os.sep, root + chr(ord(os.sep) + 1))):
            yield _row_to_record(row)

    def cached_document(self, rec: FileRecord) -> Document | None:
        """The stored Document of an indexed record (normalised form attached), or None."""
        con = self.conn()
        with con:  # one snapshot: docs and chunks agree
            rows = con.execute("SELECT f.status, d.meta, d.norm FROM files f JOIN docs d ON d.id=f.id WHERE f.id=?",
                               (rec.id,)).fetchall()
            if not rows or rows[0][0] != "indexed":
                return None
            lo = rec.id << CHUNK_BITS
            bodies = [zlib.decompress(b).decode("utf-8") for (b,) in con.execute(
                "SELECT body FROM chunks WHERE id BETWEEN ? AND ? ORDER BY id", (lo, lo | ((1 << CHUNK_BITS) - 1)))]
        meta = json.loads(rows[0][1])
        meta["text"] = "".join(bodies)
        doc = Document.from_dict(meta)
        if rows[0][2] is not None:
            from reader.normalize import NormalizedText

            try:
                doc._normalized = NormalizedText.from_bytes(rows[0][2])
            except ValueError:
                doc._normalized = None  # another reader version: reader.find rebuilds it on demand
        return doc

    def doc_meta(self, rec_id: int) -> dict[str, Any] | None:
        """The stored Document JSON (no text) of a record: pages, outline, warnings..."""
        rows = self.conn().execute("SELECT meta FROM docs WHERE id=?", (rec_id,)).fetchall()
        return json.loads(rows[0][0]) if rows else None

    def folder_etag(self, path: str) -> str | None:
        """The remembered etag of a remote folder (None when never seen)."""
        rows = self.conn().execute("SELECT etag FROM folders WHERE path=?", ("/" + path.strip("/"),)).fetchall()
        return rows[0][0] if rows else None

    def get_meta(self, key: str) -> str | None:
        """A value from the index's key/value table (e.g. last_sync_at)."""
        rows = self.conn().execute("SELECT value FROM meta WHERE key=?", (key,)).fetchall()
        return rows[0][0] if rows else None

    def status(self) -> dict:
        """Counts by status, failures with reasons, db size and last indexed times."""
        con = self.conn()
        with con:
            counts = {s: n for s, n in con.execute("SELECT status, count(*) FROM files GROUP BY status")}
            failures = [
                {"path": p, "status": s, "reason": r}
                for p, s, r in con.execute(
                    "SELECT path, status, reason FROM files WHERE status IN ('too_large','unsupported','failed') "
                    "ORDER BY path LIMIT 100")
            ]
            by_source = {s: n for s, n in con.execute("SELECT source, count(*) FROM files GROUP BY source")}
            chars = con.execute("SELECT coalesce(sum(chars),0) FROM docs").fetchall()[0][0]
            last = con.execute("SELECT max(indexed_at) FROM files").fetchall()[0][0]
            meta = {k: v for k, v in con.execute("SELECT key, value FROM meta WHERE key != 'cursor_secret'")}
        size = sum(os.path.getsize(str(self.path) + s) for s in ("", "-wal") if os.path.exists(str(self.path) + s))
        return {
            "index": str(self.path),
            "files": sum(counts.values()),
            "counts": counts,
            "bySource": by_source,
            "failures": failures,
            "textChars": chars,
            "dbBytes": size,
            "lastIndexedAt": last,
            "meta": meta,
        }

    # -- search (implemented in their own modules) -------------------------
    def grep(self, query: str, *, path_prefix: str | None = None, kinds: list[str] | None = None,
             modified_after: float | None = None, limit: int = 10, cursor: str | None = None,
             scope: str = "") -> "GrepResult":
        """Files whose text contains `query` (words/phrase, case/accent/whitespace-insensitive), ranked, with passages."""
        from .grep import grep

        return grep(self, query, path_prefix=path_prefix, kinds=kinds, modified_after=modified_after,
                    limit=limit, cursor=cursor, scope=scope)

    def search_names(self, *, name: str | None = None, mime: str | None = None, modified_after: float | None = None,
                     path_prefix: str | None = None, limit: int = 20, cursor: str | None = None) -> "NameSearchResult":
        """Files by name / mime / modification time / folder, newest first, with an opaque cursor."""
        from .names import search_names

        return search_names(self, name=name, mime=mime, modified_after=modified_after, path_prefix=path_prefix,
                            limit=limit, cursor=cursor)

    def cursor_secret(self) -> bytes:
        """Per-index secret that binds cursors to this index (i.e. this account)."""
        return bytes.fromhex(self.get_meta("cursor_secret") or "00")


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
        its text.
        """
        path = "/" + meta.path.strip("/")
        with self._tx():
            old = self._get("source=? AND path=?", (meta.source, path))
            if meta.file_id is not None and (old is None or (old.file_id is not None and old.file_id != meta.file_id)):
                # The fileId lives elsewhere: this is a move (onto a free path or over another file).
                moved = self._get("source=? AND file_id=?", (meta.source, meta.file_id))
                old = moved or old
            if old is None:
                rec_id = self._con.execute(
                    "INSERT INTO files(path, name_fold, source, file_id, etag, size, mtime, mime, local_path, status) "
                    "VALUES(?,?,?,?,?,?,?,?,?,'pending') RETURNING id",
                    (path, fold_name(path), meta.source, meta.file_id, meta.etag, meta.size, meta.mtime, meta.mime,
                     meta.local_path),
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
                "mime=coalesce(?, mime), local_path=?, status=CASE WHEN ? THEN status ELSE 'pending' END, "
                "reason=CASE WHEN ? THEN reason ELSE NULL END WHERE id=?",
                (path, fold_name(path), meta.file_id, meta.etag, meta.size, meta.mtime, meta.mime, meta.local_path,
                 unchanged, unchanged, old.id),
            )
            return self._get("id=?", (old.id,)), not unchanged

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
