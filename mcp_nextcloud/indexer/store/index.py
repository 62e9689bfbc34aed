"""The index database: one SQLite file per account (apsw, WAL).

One writer per Index (`Index.writer()`: a thread that owns the write
connection and takes work from a queue, so sync threads, the local indexer
and files_read cache writes share it) and one read-only connection per
reading thread. grep and name search live in
`indexer.search.grep` / `indexer.search.names` (joined to this class by
`indexer.index.Index`); this module owns the connections and rows.
"""
from __future__ import annotations

import json
import os
import threading
import time
import zlib
from pathlib import Path
from typing import Any, Iterator, Self, cast

import apsw

from mcp_nextcloud.reader.document import Document
from mcp_nextcloud.reader.normalize import NormalizedText

from mcp_nextcloud.indexer.models import FileRecord, RecordStatus, Root
from mcp_nextcloud.indexer.store import embed_registry
from mcp_nextcloud.indexer.store.filemodes import secure_database
from mcp_nextcloud.indexer.store.location import default_index_path
# Re-exported: other modules import these names from indexer.store.
from mcp_nextcloud.indexer.store.rows import (FAILURE_STATUSES, FILE_COLUMNS, _connect, _row_to_record,  # noqa: F401
                                              fold_name, prefix_clause)  # noqa: F401
from mcp_nextcloud.indexer.store.rows import ROOT_COLUMNS, _row_to_root
from mcp_nextcloud.indexer.store import selection as sel
from mcp_nextcloud.indexer.store.schema import CHUNK_BITS, migrate
from mcp_nextcloud.indexer.store.thread_connections import ThreadConnections
from mcp_nextcloud.indexer.store.writer import IndexWriter
from mcp_nextcloud.environment import expand

__all__ = ["Index", "IndexWriter", "default_index_path"]


def _parts(remote_files: int, meta: dict[str, str], roots: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Where each part of the index comes from: the synced account, then each local folder added.

    `inAnswers` says whether the MCP server answers from that part: a plain local folder's files have
    no Nextcloud path files_read could open, so only the CLI's grep sees them.
    """
    parts: list[dict[str, Any]] = []
    if remote_files or meta.get("account") or meta.get("last_sync_at"):
        parts.append({"from": "account", "account": meta.get("account") or "an account (synced before names were kept)",
                      "files": remote_files, "lastSyncAt": meta.get("last_sync_at") or None, "inAnswers": True})
    for r in roots:
        parts.append({"from": "folder", "folder": r["folder"], "path": r["path"], "files": r["files"],
                      "inAnswers": r.get("remotePath") is not None})
    return parts


NO_OCR = "engine GLOB '*+no-ocr'"   # files whose scanned pages were not OCR'd (schema v5's files_no_ocr)


def _ocr_status(not_read: object) -> dict[str, Any]:
    """The OCR engine here (None: scanned pages are not searchable) and files with scanned pages not read."""
    from mcp_nextcloud.reader import ocr

    found = ocr.engine()
    out: dict[str, Any] = {"engine": found[0] if found else None, "languages": found[1] if found else None,
                           "filesNotRead": not_read}
    if found is None:
        out["hint"] = ocr.MISSING
    return out


def _forms_status(langs: dict[str, int]) -> dict[str, Any]:
    """Files per detected language ('' none clear, '?' indexed before detection) and whether stemmers load."""
    import importlib.util

    return {"stemmers": importlib.util.find_spec("Stemmer") is not None,
            "languages": {k: v for k, v in sorted(langs.items()) if k not in ("", "?")},
            "noLanguage": langs.get("", 0), "beforeDetection": langs.get("?", 0)}


class Index:
    """Read side of the stored index: records, cached documents, meta, status (searches: indexer.index.Index)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._readers = ThreadConnections(lambda: _connect(str(self.path), readonly=True))
        self._writer: IndexWriter | None = None
        self._writer_lock = threading.Lock()
        self._closed = False
        self.notes: list[str] = []   # what opening repaired (file modes), for the CLI to show

    @classmethod
    def open(cls, path: str | Path) -> Self:
        """Open (creating and migrating the schema if needed) the index at `path`."""
        p = expand(path)
        notes = secure_database(p)   # 0700 folder, 0600 database and side files (repairs are noted)
        con = _connect(str(p), readonly=False)
        try:
            migrate(con)
            if not con.execute("SELECT 1 FROM meta WHERE key='cursor_secret'").fetchall():
                with con:
                    con.execute("INSERT OR IGNORE INTO meta VALUES('cursor_secret', ?)", (os.urandom(16).hex(),))
        finally:
            con.close()
        index = cls(p)
        index.notes = notes
        return index

    # -- connections -------------------------------------------------------
    def conn(self) -> apsw.Connection:
        """This thread's read-only connection (opened on first use, closed when the thread ends)."""
        if self._closed:
            raise RuntimeError("index is closed: open it again with Index.open(path)")
        return self._readers.get()

    def release_reader(self) -> None:
        """Close the calling thread's read connection now (its next read opens another): a thread that serves
        many indexes in turn (the team's index service) keeps none of them open between its calls."""
        self._readers.release()

    def reader_count(self) -> int:
        """Read connections open now: at most one per live thread that read."""
        return self._readers.open_count()

    def writer(self) -> IndexWriter:
        """This index's one writer (its thread starts on first use)."""
        with self._writer_lock:
            if self._closed:
                raise RuntimeError("index is closed: open it again with Index.open(path)")
            if self._writer is None:
                self._writer = IndexWriter(self.path)
            return self._writer

    def close(self) -> None:
        """Finish and stop the writer (what was queued is committed), then close every reader connection."""
        if not self._closed:   # first: the builder's last write lands while the writer still runs
            builder = embed_registry.pop(str(Path(self.path).resolve()))
            if builder is not None:
                builder.stop()
        with self._writer_lock:
            if self._closed:
                return
            self._closed = True
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
        self._readers.close_all()

    def __enter__(self) -> Self:
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
                f"SELECT {FILE_COLUMNS} FROM files WHERE path=? "
                "ORDER BY status='indexed' DESC, indexed_at DESC LIMIT 1",
                (p,),
            ).fetchall()
        else:
            rows = con.execute(
                f"SELECT {FILE_COLUMNS} FROM files WHERE file_id=? "
                "ORDER BY status='indexed' DESC, indexed_at DESC LIMIT 1",
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

    def root_records(self, root_id: int) -> list[FileRecord]:
        """Every record of one local folder (roots row `root_id`)."""
        sql = f"SELECT {FILE_COLUMNS} FROM files WHERE source='local' AND root_id=?"
        return [_row_to_record(r) for r in self.conn().execute(sql, (root_id,))]

    def roots(self) -> list[Root]:
        """The local folders indexed into this database, in the order they were added."""
        return [_row_to_root(r) for r in self.conn().execute(f"SELECT {ROOT_COLUMNS} FROM roots ORDER BY id")]

    def root_of(self, rec: FileRecord) -> Root | None:
        """The local folder a record lives in (None for remote files): grep can name it next to a hit."""
        if rec.root_id is None:
            return None
        rows = self.conn().execute(f"SELECT {ROOT_COLUMNS} FROM roots WHERE id=?", (rec.root_id,)).fetchall()
        return _row_to_root(rows[0]) if rows else None

    def local_folder_of(self, path: str) -> str | None:
        """The local folder whose file holds `path` (None when no local file does): names the folder of a hit.

        Looked up by record, not by prefix: a sync folder mirroring "/" and the
        first plain folder both use "/" + relative paths.
        """
        rows = self.conn().execute("SELECT r.folder FROM files f JOIN roots r ON r.id=f.root_id "
                                   "WHERE f.source='local' AND f.path=?", ("/" + path.strip("/"),)).fetchall()
        return cast(str, rows[0][0]) if rows else None

    def cached_document(self, rec: FileRecord) -> Document | None:
        """The stored Document of an indexed record (normalised form attached), or None."""
        con = self.conn()
        with con:  # one snapshot: docs and chunks agree
            rows = con.execute("SELECT f.status, d.meta, d.norm FROM files f JOIN docs d ON d.id=f.id WHERE f.id=?",
                               (rec.id,)).fetchall()
            if not rows or rows[0][0] != RecordStatus.INDEXED:
                return None
            lo = rec.id << CHUNK_BITS
            bodies = [zlib.decompress(b).decode("utf-8") for (b,) in con.execute(
                "SELECT body FROM chunks WHERE id BETWEEN ? AND ? ORDER BY id", (lo, lo | ((1 << CHUNK_BITS) - 1)))]
        meta = json.loads(cast(str, rows[0][1]))
        meta["text"] = "".join(bodies)
        doc = Document.from_dict(meta)
        if rows[0][2] is not None:
            try:
                doc._normalized = NormalizedText.from_bytes(cast(bytes, rows[0][2]))
            except ValueError:
                doc._normalized = None  # another reader version: reader.find rebuilds it on demand
        return doc

    def doc_meta(self, rec_id: int) -> dict[str, Any] | None:
        """The stored Document JSON (no text) of a record: pages, outline, warnings..."""
        rows = self.conn().execute("SELECT meta FROM docs WHERE id=?", (rec_id,)).fetchall()
        return json.loads(cast(str, rows[0][0])) if rows else None

    def folder_etag(self, path: str) -> str | None:
        """The remembered etag of a remote folder (None when never seen)."""
        rows = self.conn().execute("SELECT etag FROM folders WHERE path=?", ("/" + path.strip("/"),)).fetchall()
        return cast(str, rows[0][0]) if rows else None

    def kind_counts(self, path_prefix: str | None = None) -> dict[str, int]:
        """Indexed files per kind (pdf, docx, text...) at or below `path_prefix`: what a kind filter can match."""
        cond, args = prefix_clause(path_prefix)
        rows = self.conn().execute(f"SELECT kind, count(*) FROM files WHERE {cond} AND status='indexed' "
                                   "AND kind IS NOT NULL GROUP BY kind ORDER BY count(*) DESC, kind", args)
        return {k: n for k, n in rows}

    def get_meta(self, key: str) -> str | None:
        """A value from the index's key/value table (e.g. last_sync_at)."""
        rows = self.conn().execute("SELECT value FROM meta WHERE key=?", (key,)).fetchall()
        return cast(str, rows[0][0]) if rows else None

    def get_metas(self, keys: tuple[str, ...]) -> dict[str, str]:
        """The values of `keys` that are set, read in one statement (one consistent snapshot of them)."""
        marks = ",".join("?" * len(keys))
        return {cast(str, k): cast(str, v) for k, v in
                self.conn().execute(f"SELECT key, value FROM meta WHERE key IN ({marks})", keys)}

    def status(self) -> dict[str, Any]:
        """Counts by status, failures with reasons, db size, last indexed times and the local folders (roots)."""
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
            meta = {k: v for k, v in con.execute("SELECT key, value FROM meta WHERE key NOT IN "
                                                 "('cursor_secret', 'selection', 'selection_applied')")}
            per_root = dict(con.execute("SELECT root_id, count(*) FROM files WHERE root_id IS NOT NULL "
                                        "GROUP BY root_id"))
            roots = [dict(_row_to_root(r).to_dict(), files=per_root.get(r[0], 0))
                     for r in con.execute(f"SELECT {ROOT_COLUMNS} FROM roots ORDER BY id")]
            no_ocr = con.execute(f"SELECT count(*) FROM files WHERE {NO_OCR}").fetchall()[0][0]
            langs = dict(con.execute("SELECT coalesce(lang, '?'), count(*) FROM files WHERE status='indexed' "
                                     "GROUP BY lang"))
            meaning = _meaning_status(con)
        size = sum(os.path.getsize(str(self.path) + s) for s in ("", "-wal") if os.path.exists(str(self.path) + s))
        parts = _parts(by_source.get("remote", 0), meta, roots)
        for root in roots:       # times as ISO text, like every answer (never epoch seconds)
            for key in ("addedAt", "lastIndexedAt"):
                if isinstance(root.get(key), (int, float)):
                    root[key] = _iso(root[key])
        return {
            "index": str(self.path),
            "files": sum(counts.values()),
            "counts": counts,
            "bySource": by_source,
            "roots": roots,
            "parts": parts,
            "failures": failures,
            "textChars": chars,
            "dbBytes": size,
            "lastIndexedAt": _iso(last) if last else None,
            "meta": {k: _meta_value(k, v) for k, v in meta.items()},
            "selection": self._selection(),
            "ocr": _ocr_status(no_ocr),
            "wordForms": _forms_status(langs),
            "meaning": meaning,
        }

    def _selection(self) -> dict[str, Any] | None:
        """The part of the account the user chose to index (None: the whole account)."""
        chosen = sel.load(self)
        if chosen.whole_account and chosen.max_index_bytes is None:
            return None
        out: dict[str, Any] = {"include": list(chosen.include) or ["/"], "exclude": list(chosen.exclude)}
        if chosen.max_index_bytes:
            out["maxIndexBytes"] = chosen.max_index_bytes
        return out

    def cursor_secret(self) -> bytes:
        """Per-index secret that binds cursors to this index (i.e. this account)."""
        return bytes.fromhex(self.get_meta("cursor_secret") or "00")


def _meaning_status(con: apsw.Connection) -> dict[str, Any]:
    """How far the meaning index (embeddings, indexer/jobs/embed.py) covers the keyword index, and its size."""
    from mcp_nextcloud.indexer.store import vectors

    out: dict[str, Any] = vectors.coverage(con).to_dict()
    if vectors.exists(con):
        out["vectors"] = con.execute("SELECT count(*) FROM vectors").fetchall()[0][0]
    return out


def _iso(ts: Any) -> str:
    """Unix seconds -> ISO-8601 UTC to the second, the one time format of every answer."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(ts)))


def _meta_value(key: str, value: Any) -> Any:
    """A meta value as data: a JSON record stored as text is decoded (no JSON inside a string), epochs as ISO."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    if key.endswith("_at") and isinstance(value, str):
        try:
            return _iso(float(value))
        except ValueError:
            return value
    return value
