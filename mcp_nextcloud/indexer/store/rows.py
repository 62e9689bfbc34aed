"""Row-level helpers shared by the index's read side (Index) and write side (the writer thread)."""
from __future__ import annotations

from typing import Any, cast

import apsw
from unidecode import unidecode

from mcp_nextcloud.indexer.models import FileRecord, RecordStatus, Root
from mcp_nextcloud.indexer.store.schema import CHUNK_BITS

FILE_COLUMNS = (
    "id, path, source, file_id, etag, size, mtime, mime, local_path, kind, status, reason, engine, indexed_at, "
    "root_id, hash"
)
FAILURE_STATUSES = (RecordStatus.TOO_LARGE, RecordStatus.UNSUPPORTED, RecordStatus.FAILED)


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


def account_clause(column_prefix: str = "") -> str:
    """SQL condition "the file has a Nextcloud path": remote files and those of desktop-client sync folders.

    A plain local folder's files (no Nextcloud mapping) fail it: the MCP server leaves them out of its
    answers, since files_read could not open them by the path or fileId a hit would give.
    """
    c = column_prefix
    return f"({c}source != 'local' OR {c}root_id IN (SELECT id FROM roots WHERE remote IS NOT NULL))"


# A row of FILE_COLUMNS / ROOT_COLUMNS, as the schema types its columns (apsw types a cell only as any SQLite value).
FileRow = tuple[int, str, str, int | None, str | None, int, float, str | None, str | None, str | None, str,
                str | None, str | None, float | None, int | None, str | None]
RootRow = tuple[int, str, str, str | None, float, float | None, str | None, str | None]


def _row_to_record(row: apsw.SQLiteValues) -> FileRecord:
    (id_, path, source, file_id, etag, size, mtime, mime, local_path, kind, status, reason, engine, indexed_at,
     root_id, content_hash) = cast(FileRow, row)   # a SELECT of FILE_COLUMNS
    return FileRecord(
        path=path, source=source, file_id=file_id, etag=etag, size=size, mtime=mtime, mime=mime,
        local_path=local_path, root_id=root_id, id=id_, kind=kind, status=status, reason=reason, engine=engine,
        indexed_at=indexed_at, content_hash=content_hash,
    )


ROOT_COLUMNS = "id, folder, prefix, journal, added_at, indexed_at, remote, remote_from"


def _row_to_root(row: apsw.SQLiteValues) -> Root:
    return Root(*cast(RootRow, row))   # a SELECT of ROOT_COLUMNS


def _connect(path: str, readonly: bool) -> apsw.Connection:
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    con = apsw.Connection(path, flags=flags)
    con.set_busy_timeout(10_000)
    if not readonly:
        con.pragma("journal_mode", "wal")
        con.pragma("synchronous", "NORMAL")  # WAL + NORMAL: durable across process crashes
    return con


class Rows:
    """Record lookups and deletions on the write connection (used by WriteTx and Roots, on the writer thread)."""

    def __init__(self, con: apsw.Connection) -> None:
        self.con = con

    def get(self, where: str, args: tuple[apsw.SQLiteValue, ...]) -> FileRecord | None:
        """The one record matching the SQL condition `where`, or None."""
        rows = self.con.execute(f"SELECT {FILE_COLUMNS} FROM files WHERE {where}", args).fetchall()
        return _row_to_record(rows[0]) if rows else None

    def drop_content(self, rec_id: int) -> None:
        """Delete a record's text: docs, chunks and FTS rows (always written together)."""
        if not self.con.execute("SELECT 1 FROM docs WHERE id=?", (rec_id,)).fetchall():
            return  # no docs row: nothing was stored
        lo = rec_id << CHUNK_BITS
        hi = lo | ((1 << CHUNK_BITS) - 1)
        self.con.execute("DELETE FROM chunks_fts WHERE rowid BETWEEN ? AND ?", (lo, hi))
        self.con.execute("DELETE FROM chunks WHERE id BETWEEN ? AND ?", (lo, hi))
        self.con.execute("DELETE FROM docs WHERE id=?", (rec_id,))

    def delete(self, rec_id: int) -> None:
        """Forget a record and its text (and its meaning-index vectors, kept across a re-extraction)."""
        from mcp_nextcloud.indexer.store import vectors

        self.drop_content(rec_id)
        vectors.drop_file(self.con, rec_id)
        self.con.execute("DELETE FROM files WHERE id=?", (rec_id,))
