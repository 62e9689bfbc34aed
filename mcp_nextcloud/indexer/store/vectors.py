"""The meaning index's tables: one float16 embedding per embedded chunk window, beside the FTS5 index.

Why this shape:
- Same database as the keyword index (one file to back up, one snapshot for a
  query). A flat float16 matrix scanned by numpy is enough at a person's scale:
  measured in benchmarks/test_meaning_bench.py (10k documents: a few ms), so no
  vector extension to load.
- `vectors.id` is the chunk rowid (`file_rowid << CHUNK_BITS | seq`): a vector
  names its file and chunk with no join, like an FTS rowid. `start`/`length`/`line`
  locate the embedded window in Document.text (the offset files_read accepts).
- `hash` (blake2b of the embedded text) lets a changed file re-embed only the
  windows whose text changed; `vector_files` records which `files.indexed_at`
  a file was embedded at and whether all its windows are in (`done`), so the
  builder finds its work with one query and a file embedded at an older
  extraction is never used (its hits would point at text that moved).
- Created here with IF NOT EXISTS, not as a schema migration: a database without
  these tables is simply one whose meaning index has not been built yet, and
  every reader treats it so.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import apsw
import numpy as np

from mcp_nextcloud.indexer.store.schema import CHUNK_BITS

DIM = 384                 # multilingual-e5-small
DTYPE = "float16"         # half the bytes of float32; cosine ranks are unchanged at this precision
# numpy is imported where vectors are made or read: deleting a file's rows (Rows.delete) must not load it.

DDL = """
CREATE TABLE IF NOT EXISTS vectors(
    id INTEGER PRIMARY KEY,
    start INTEGER NOT NULL,
    length INTEGER NOT NULL,
    line INTEGER NOT NULL,
    hash BLOB NOT NULL,
    vec BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS vector_files(
    id INTEGER PRIMARY KEY,
    indexed_at REAL,
    done INTEGER NOT NULL,
    windows INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS vector_meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


class Window(NamedTuple):
    """One embedded piece of a document: where it is in Document.text and the text the model saw."""

    id: int         # the chunk rowid it belongs to
    start: int      # Document.text offset
    length: int
    line: int       # 1-based line of `start`
    text: str       # what was embedded (the window, after the file's name)


def _int(value: object) -> int:
    """An SQLite integer column's value (apsw types it as any SQLite value)."""
    assert isinstance(value, int), value
    return value


def text_hash(text: str) -> bytes:
    import hashlib   # on first use: a keyword grep never hashes (loading OpenSSL costs a CLI call ~3 ms)

    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()


def exists(con: apsw.Connection) -> bool:
    """True once the builder created the tables (a reader never creates them: its connection is read-only)."""
    return bool(con.execute("SELECT 1 FROM sqlite_master WHERE name='vector_files'").fetchall())


def ensure(con: apsw.Connection) -> None:
    """Create the tables (writer connection)."""
    con.execute(DDL)


def file_range(file_rowid: int) -> tuple[int, int]:
    lo = file_rowid << CHUNK_BITS
    return lo, lo | ((1 << CHUNK_BITS) - 1)


def drop_file(con: apsw.Connection, file_rowid: int) -> None:
    """Forget a file's vectors (called where its text is dropped, in the same transaction)."""
    if not exists(con):
        return
    lo, hi = file_range(file_rowid)
    con.execute("DELETE FROM vectors WHERE id BETWEEN ? AND ?", (lo, hi))
    con.execute("DELETE FROM vector_files WHERE id=?", (file_rowid,))
    bump(con)


def bump(con: apsw.Connection) -> None:
    """Advance the generation that tells query-side caches the vectors changed."""
    con.execute("INSERT INTO vector_meta VALUES('generation', 1) "
                "ON CONFLICT(key) DO UPDATE SET value = value + 1")


def generation(con: apsw.Connection) -> int:
    rows = con.execute("SELECT value FROM vector_meta WHERE key='generation'").fetchall()
    return _int(rows[0][0]) if rows else 0


def hashes(con: apsw.Connection, file_rowid: int) -> dict[int, bytes]:
    """{chunk rowid: hash} of a file's stored vectors."""
    lo, hi = file_range(file_rowid)
    return {int(i): bytes(h) for i, h in con.execute("SELECT id, hash FROM vectors WHERE id BETWEEN ? AND ?",
                                                     (lo, hi))}


def write_file(con: apsw.Connection, file_rowid: int, indexed_at: float, done: bool, keep: set[int],
               windows: list[Window], vecs: np.ndarray, placed: list[Window]) -> None:
    """Store a file's new vectors, drop those of windows no longer chosen, record how far it is embedded.

    `placed`: every chosen window of the file at its current place (kept ones get their offsets from it).
    """
    lo, hi = file_range(file_rowid)
    stale = [(i,) for (i,) in con.execute("SELECT id FROM vectors WHERE id BETWEEN ? AND ?", (lo, hi))
             if i not in keep]
    con.executemany("DELETE FROM vectors WHERE id=?", stale)
    # A kept window's text is unchanged, but an edit before it moves it: its place is always the current one.
    con.executemany("UPDATE vectors SET start=?, length=?, line=? WHERE id=? AND (start, length, line) != (?, ?, ?)",
                    [(w.start, w.length, w.line, w.id, w.start, w.length, w.line) for w in placed if w.id in keep])
    con.executemany("INSERT OR REPLACE INTO vectors(id, start, length, line, hash, vec) VALUES(?,?,?,?,?,?)",
                    [(w.id, w.start, w.length, w.line, text_hash(w.text), v.astype(DTYPE).tobytes())
                     for w, v in zip(windows, vecs, strict=True)])
    con.execute("INSERT OR REPLACE INTO vector_files(id, indexed_at, done, windows) VALUES(?,?,?,?)",
                (file_rowid, indexed_at, int(done), len(keep)))
    bump(con)


def drop_orphans(con: apsw.Connection) -> int:
    """Forget vectors of files that are gone or no longer indexed (a sweep; drop_file catches most at once)."""
    gone = [int(i) for (i,) in con.execute(
        "SELECT v.id FROM vector_files v LEFT JOIN files f ON f.id = v.id "
        "WHERE f.id IS NULL OR f.status != 'indexed'")]
    for fid in gone:
        lo, hi = file_range(fid)
        con.execute("DELETE FROM vectors WHERE id BETWEEN ? AND ?", (lo, hi))
        con.execute("DELETE FROM vector_files WHERE id=?", (fid,))
    if gone:
        bump(con)
    return len(gone)


class Matrix(NamedTuple):
    """Every fresh vector as one float32 matrix, with the chunk rowid of each row."""

    generation: int
    ids: np.ndarray          # int64 (n,)
    vecs: np.ndarray         # float32 (n, DIM), L2-normalised
    centering: Any = None    # how meaning search orders by language-centred cosines (search/centering.py)


def load_matrix(con: apsw.Connection) -> Matrix:
    """All vectors of files embedded at their current extraction (stale ones are left out)."""
    import numpy as np

    gen = generation(con)
    rows = con.execute(
        "SELECT v.id, v.vec FROM vectors v JOIN vector_files vf ON vf.id = (v.id >> ?) "
        "JOIN files f ON f.id = vf.id AND f.indexed_at = vf.indexed_at", (CHUNK_BITS,)).fetchall()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    blob = b"".join(r[1] for r in rows)  # type: ignore[misc]   # vec is always a BLOB
    vecs = np.frombuffer(blob, dtype=DTYPE).reshape(len(rows), DIM).astype(np.float32)
    return Matrix(gen, ids, vecs)


def window_rows(con: apsw.Connection, ids: list[int]) -> dict[int, tuple[int, int, int]]:
    """{chunk rowid: (start, length, line)} of the given vectors."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {int(i): (int(s), int(n), int(ln)) for i, s, n, ln in
            con.execute(f"SELECT id, start, length, line FROM vectors WHERE id IN ({marks})", ids)}


class Coverage(NamedTuple):
    """How much of the keyword index the meaning index covers (files with any fresh vector / indexed files)."""

    files: int
    of: int
    complete: int      # files with every chosen window embedded

    def to_dict(self) -> dict[str, int]:
        return {"files": self.files, "of": self.of, "complete": self.complete}


def coverage(con: apsw.Connection) -> Coverage:
    of = con.execute("SELECT count(*) FROM files WHERE status='indexed'").fetchall()[0][0]
    if not exists(con):
        return Coverage(0, _int(of), 0)
    files, complete = con.execute(
        "SELECT count(*), coalesce(sum(vf.done), 0) FROM vector_files vf JOIN files f ON f.id = vf.id "
        "AND f.indexed_at = vf.indexed_at AND f.status='indexed'").fetchall()[0]
    return Coverage(_int(files), _int(of), _int(complete))
