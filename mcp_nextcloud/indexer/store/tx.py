"""What a function submitted to the index writer works with: the write connection, inside its transaction.

Every method runs on the writer thread (`IndexWriter.submit`), so none takes
a lock or opens a transaction: the writer wraps each submitted function in
a savepoint of the batch it commits. A function may call several methods;
they commit (or roll back) together.
"""
from __future__ import annotations

import time

import apsw

from mcp_nextcloud.indexer.models import FileMeta, FileRecord, RecordStatus, Root
from mcp_nextcloud.indexer.store.prepare import Prepared
from mcp_nextcloud.indexer.store.roots import RemoteLookup, Roots
from mcp_nextcloud.indexer.store.rows import FAILURE_STATUSES, Rows, fold_name, prefix_clause
from mcp_nextcloud.indexer.store.schema import CHUNK_BITS
# every meta key about the synced account
from mcp_nextcloud.indexer.store.sync_keys import ACCOUNT_KEYS as ACCOUNT_META

def _unchanged(old: FileRecord, meta: FileMeta) -> bool:
    """Same content as what the record was extracted from?"""
    if old.status == RecordStatus.PENDING:
        return False
    if old.file_id is not None and meta.file_id is not None and old.file_id != meta.file_id:
        return False
    same_etag = old.etag is not None and meta.etag is not None and old.etag == meta.etag
    same_stat = old.size == meta.size and abs(old.mtime - meta.mtime) < 1e-3
    if meta.source == "remote" and meta.etag is not None and old.etag is not None:
        # Nextcloud can keep a file's etag across an overwrite within the same second (seen on 34 even when
        # the size changed): another size is another content whatever the etag says.
        return same_etag and old.size == meta.size
    # Local files can change before the desktop client updates the journal's etag.
    if old.etag is not None and meta.etag is not None and not same_etag:
        return False
    return same_stat


class WriteTx:
    """The writer's operations on files, texts, folders and meta (writer thread only)."""

    def __init__(self, con: apsw.Connection) -> None:
        self.con = con
        self.rows = Rows(con)
        self.roots = Roots(self.rows)

    def record(self, rec_id: int) -> FileRecord | None:
        """The record with rowid `rec_id`, as the writer sees it."""
        return self.rows.get("id=?", (rec_id,))

    def upsert(self, meta: FileMeta, notes: list[str] | None = None) -> tuple[FileRecord, bool]:
        """Record a file seen at a source; return (record, needs_extraction).

        Unchanged content (same fileId+etag remotely, same size+mtime locally) is
        never re-extracted; the same fileId at a new path is a move that keeps
        its text. A local file whose path another local folder already holds
        raises PathCollision (nothing is overwritten), unless a sync folder's
        file takes it from a plain folder's (`Roots.claim`; the message goes
        to `notes`).
        """
        path = "/" + meta.path.strip("/")
        get = self.rows.get
        old = get("source=? AND path=?", (meta.source, path))
        if self.roots.claim(old, meta, path, notes):
            old = None
        if meta.file_id is not None and (old is None or (old.file_id is not None and old.file_id != meta.file_id)):
            # The fileId lives elsewhere: this is a move (onto a free path or over another file).
            # Local fileIds are looked up in the same folder only: two sync folders may be two accounts.
            moved = get("source=? AND file_id=? AND (? IS NULL OR root_id IS ?)",
                        (meta.source, meta.file_id, meta.root_id, meta.root_id))
            old = moved or old
        if old is None:
            rec_id = self.con.execute(
                "INSERT INTO files(path, name_fold, source, file_id, etag, size, mtime, mime, local_path, root_id, "
                "status) VALUES(?,?,?,?,?,?,?,?,?,?,'pending') RETURNING id",
                (path, fold_name(path), meta.source, meta.file_id, meta.etag, meta.size, meta.mtime, meta.mime,
                 meta.local_path, meta.root_id),
            ).fetchall()[0][0]
            return self._must(int(str(rec_id))), True
        unchanged = _unchanged(old, meta)
        if old.path != path:
            # A move: whatever sat at the destination is replaced by the moved file.
            clash = get("source=? AND path=?", (meta.source, path))
            if clash is not None:
                self.rows.delete(clash.id)
        if not unchanged:
            self.rows.drop_content(old.id)
        self.con.execute(
            "UPDATE files SET path=?, name_fold=?, file_id=coalesce(?, file_id), etag=?, size=?, mtime=?, "
            "mime=coalesce(?, mime), local_path=?, root_id=coalesce(?, root_id), "
            "status=CASE WHEN ? THEN status ELSE 'pending' END, reason=CASE WHEN ? THEN reason ELSE NULL END, "
            "hash=CASE WHEN ? THEN hash ELSE NULL END WHERE id=?",
            (path, fold_name(path), meta.file_id, meta.etag, meta.size, meta.mtime, meta.mime, meta.local_path,
             meta.root_id, unchanged, unchanged, unchanged, old.id),
        )
        return self._must(old.id), not unchanged

    def _must(self, rec_id: int) -> FileRecord:
        rec = self.record(rec_id)
        assert rec is not None, "a record written in this transaction is there"
        return rec

    def move(self, rec_id: int, meta: FileMeta, notes: list[str] | None = None) -> FileRecord | None:
        """Give an existing record a new path (a rename or move): its text, status and hash are kept.

        The caller vouches that the content is the same (a rename event, or an
        equal content hash). Whatever record sat at the destination is replaced.
        """
        path = "/" + meta.path.strip("/")
        rec = self.record(rec_id)
        if rec is None:
            return None
        clash = self.rows.get("source=? AND path=?", (rec.source, path))
        if clash is not None and clash.id != rec_id and not self.roots.claim(clash, meta, path, notes):
            self.rows.delete(clash.id)
        self.con.execute(
            "UPDATE files SET path=?, name_fold=?, local_path=?, root_id=coalesce(?, root_id), size=?, mtime=?, "
            "mime=coalesce(?, mime), file_id=coalesce(?, file_id), etag=coalesce(?, etag) WHERE id=?",
            (path, fold_name(path), meta.local_path, meta.root_id, meta.size, meta.mtime, meta.mime,
             meta.file_id, meta.etag, rec_id))
        return self.record(rec_id)

    def set_hash(self, rec_id: int, content_hash: str) -> None:
        """Remember the content hash of the bytes being extracted for a record (move detection)."""
        self.con.execute("UPDATE files SET hash=? WHERE id=?", (content_hash, rec_id))

    def store(self, rec_id: int, p: Prepared) -> FileRecord | None:
        """Store a file's prepared rows (text chunks, normalised form, FTS rows); status indexed.

        Returns the record, or None when it was removed while being extracted.
        """
        if not self.con.execute("SELECT 1 FROM files WHERE id=?", (rec_id,)).fetchall():
            return None
        base = rec_id << CHUNK_BITS
        self.rows.drop_content(rec_id)
        self.con.execute("INSERT INTO docs(id, meta, norm, chars) VALUES(?,?,?,?)",
                         (rec_id, p.meta_json, p.norm_blob, p.chars))
        self.con.executemany("INSERT INTO chunks(id, start, line, body) VALUES(?,?,?,?)",
                             [(base | seq, start, line, body) for seq, start, line, body in p.chunks])
        self.con.executemany("INSERT INTO chunks_fts(rowid, body) VALUES(?,?)",
                             [(base | seq, folded) for seq, folded in p.folded])
        self.con.execute(
            "UPDATE files SET status='indexed', reason=NULL, kind=?, engine=?, mime=coalesce(mime, ?), "
            "indexed_at=?, lang=?, title=? WHERE id=?",
            (p.kind, p.engine, p.mime, time.time(), p.lang, p.title, rec_id),
        )
        return self.record(rec_id)

    def record_failure(self, rec_id: int, status: RecordStatus, reason: str) -> FileRecord | None:
        """Mark a file too_large / unsupported / failed with its reason (kept until the file changes)."""
        if status not in FAILURE_STATUSES:
            raise ValueError(f"status must be one of {', '.join(FAILURE_STATUSES)}, not {status!r}")
        self.rows.drop_content(rec_id)
        self.con.execute("UPDATE files SET status=?, reason=?, indexed_at=?, title=NULL WHERE id=?",
                         (status, reason, time.time(), rec_id))
        return self.record(rec_id)

    def remove(self, rec_id: int) -> None:
        """Forget a file and its text."""
        self.rows.delete(rec_id)

    def remove_under(self, path_prefix: str, *, source: str | None = None) -> int:
        """Forget every file at or below `path_prefix`; return how many."""
        cond, args = prefix_clause(path_prefix)
        sql = f"SELECT id FROM files WHERE {cond}"
        if source is not None:
            sql += " AND source=?"
            args.append(source)
        ids = [int(str(r[0])) for r in self.con.execute(sql, args).fetchall()]
        for rec_id in ids:
            self.rows.delete(rec_id)
        return len(ids)

    def forget_account(self) -> int:
        """Remove the account's files (remote source), remembered folder etags and sync marks; return the count."""
        ids = [int(str(r[0])) for r in self.con.execute("SELECT id FROM files WHERE source='remote'")]
        for rec_id in ids:
            self.rows.delete(rec_id)
        self.con.execute("DELETE FROM folders")
        self.con.execute(f"DELETE FROM meta WHERE key IN ({','.join('?' * len(ACCOUNT_META))})", ACCOUNT_META)
        return len(ids)

    def set_folder_etag(self, path: str, etag: str | None) -> None:
        """Remember (or forget, with None) a remote folder's etag."""
        p = "/" + path.strip("/")
        if etag is None:
            self.con.execute("DELETE FROM folders WHERE path=?", (p,))
        else:
            self.con.execute("INSERT OR REPLACE INTO folders(path, etag) VALUES(?,?)", (p, etag))

    def set_meta(self, key: str, value: str) -> None:
        """Set a key/value (e.g. last_sync_at, last_indexed:<folder>)."""
        self.con.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?,?)", (key, value))

    def register_root(self, folder: str, *, journal: str | None = None, remote: str | None = None,
                      configured: RemoteLookup | None = None, notes: list[str] | None = None) -> Root:
        """The roots row of a local folder (see `Roots.register`)."""
        return self.roots.register(folder, journal=journal, remote=remote, configured=configured, notes=notes)
