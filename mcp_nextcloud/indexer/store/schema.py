"""The index's SQLite schema and its migrations (PRAGMA user_version).

Why this shape:
- `files` holds one row per (source, path) with what the source said and what
  extraction made of it.
- `chunks` holds the document text cut into ~3k-character pieces (zlib), keyed
  by `file_rowid << 16 | seq`, so grep reads back only the matching pieces and
  the FTS rowid itself says which file a hit belongs to (no join to rank).
- `chunks_fts` is contentless (the text already lives, compressed, in
  `chunks`): it indexes `fold_words(chunk)` with the C tokenizer
  `unicode61 remove_diacritics 2`. No prefix indexes: measured, they cut
  the build rate by 2-3x and add 30% size, and FTS5 uses them only for
  prefixes of exactly their length (2 or 3 letters); `config*` works without.
- `docs` keeps the Document's pages/outline/structure/warnings as JSON and the
  normalised form (zlib), so files_read never re-extracts an unchanged file.
- `roots` (v3) records each local folder indexed into this database and the
  path prefix its files get ("" for the first, "/<name>" for later ones), so
  two folders' relative paths never collide; `files.root_id` says which folder
  a local file is in and `files.hash` (blake2b of the bytes extracted) lets a
  rescan recognise a moved file without extracting it again.
- v4: a desktop-client sync folder's files carry their real Nextcloud paths:
  `roots.remote` is the Nextcloud folder it mirrors ("/" or "/Work", from
  --remote-path or the client's nextcloud.cfg; NULL for a plain folder) and
  `remote_from` says where that came from. Its prefix is then the remote
  path ("" for "/"), so a sync folder can share "" with the first plain
  folder: the prefix is no longer UNIQUE (SQLite cannot drop a constraint, so
  the table is rebuilt).
- v5: `files.lang` is the language detected in the document's text
  (indexer/store/language.py), so grep stems a query only in the index's
  languages. Files indexed before v5 have NULL there: grep then stems in
  every supported language (the index keeps working; a rebuild or the next
  change of the file fills it in). `files_no_ocr` lists the files whose
  scanned pages were not OCR'd (engine '...+no-ocr': no OCR engine when
  they were extracted), so grep and `index status` say so cheaply.
"""
from __future__ import annotations

import apsw

from mcp_nextcloud.indexer.errors import IndexCode, IndexerError

SCHEMA_VERSION = 6
CHUNK_BITS = 16                      # rowid = file_rowid << CHUNK_BITS | chunk seq
MAX_CHUNKS = (1 << CHUNK_BITS) - 1

_V1 = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    name_fold TEXT NOT NULL,
    source TEXT NOT NULL,
    file_id INTEGER,
    etag TEXT,
    size INTEGER NOT NULL,
    mtime REAL NOT NULL,
    mime TEXT,
    local_path TEXT,
    kind TEXT,
    status TEXT NOT NULL DEFAULT 'pending',
    reason TEXT,
    engine TEXT,
    indexed_at REAL,
    UNIQUE(source, path)
);
CREATE INDEX files_path ON files(path);
CREATE INDEX files_file_id ON files(file_id) WHERE file_id IS NOT NULL;
CREATE INDEX files_not_indexed ON files(status) WHERE status != 'indexed';
CREATE INDEX files_local_path ON files(local_path) WHERE local_path IS NOT NULL;
CREATE TABLE docs(
    id INTEGER PRIMARY KEY,
    meta TEXT NOT NULL,
    norm BLOB,
    chars INTEGER NOT NULL
);
CREATE TABLE chunks(
    id INTEGER PRIMARY KEY,
    start INTEGER NOT NULL,
    line INTEGER NOT NULL,
    body BLOB NOT NULL
);
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    body, content='', contentless_delete=1,
    tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
CREATE TABLE folders(path TEXT PRIMARY KEY, etag TEXT);
"""

# v2: "index last updated" in every grep answer must not scan all files.
_V2 = "CREATE INDEX files_indexed_at ON files(indexed_at);"

# v3: one namespace per local folder, and a content hash so a rescan can tell a move from delete + add.
_V3 = """
CREATE TABLE roots(
    id INTEGER PRIMARY KEY,
    folder TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL UNIQUE,
    journal TEXT,
    added_at REAL NOT NULL,
    indexed_at REAL
);
ALTER TABLE files ADD COLUMN root_id INTEGER;
ALTER TABLE files ADD COLUMN hash TEXT;
CREATE INDEX files_root ON files(root_id) WHERE root_id IS NOT NULL;
"""

# v4: sync folders are mapped to their Nextcloud folder; prefixes may be shared (see the module docstring).
_V4 = """
CREATE TABLE roots_v4(
    id INTEGER PRIMARY KEY,
    folder TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    journal TEXT,
    added_at REAL NOT NULL,
    indexed_at REAL,
    remote TEXT,
    remote_from TEXT
);
INSERT INTO roots_v4(id, folder, prefix, journal, added_at, indexed_at)
    SELECT id, folder, prefix, journal, added_at, indexed_at FROM roots;
DROP TABLE roots;
ALTER TABLE roots_v4 RENAME TO roots;
"""

# v5: the language of each document's text (word forms are matched in the languages the index holds).
_V5 = """
ALTER TABLE files ADD COLUMN lang TEXT;
CREATE INDEX files_lang ON files(lang);
CREATE INDEX files_no_ocr ON files(path) WHERE engine GLOB '*+no-ocr';
"""

# v6: each document's title, which grep ranks by with the file's name (search/titles.py): the first of its
# top-level headings (prepare.title_of), taken here from the outline already stored for the files indexed before.
TITLE_CHARS = 200      # of that heading kept as the title (a heading that is a paragraph is cut)
_V6 = f"""
ALTER TABLE files ADD COLUMN title TEXT;
UPDATE files SET title = (
    SELECT substr(json_extract(o.value, '$.title'), 1, {TITLE_CHARS})
    FROM docs d, json_each(d.meta, '$.outline') o
    WHERE d.id = files.id AND json_valid(d.meta)
    ORDER BY json_extract(o.value, '$.level'), o.key LIMIT 1)
    WHERE status = 'indexed';
"""

# Each entry migrates from version i to i+1; append, never edit a shipped one.
MIGRATIONS: list[str] = [_V1, _V2, _V3, _V4, _V5, _V6]


class SchemaTooNew(IndexerError, RuntimeError):
    """The index was written by a newer mcp-nextcloud: this program must not touch it."""

    code = IndexCode.SCHEMA_TOO_NEW


def migrate(con: apsw.Connection) -> int:
    """Bring the schema to SCHEMA_VERSION inside one IMMEDIATE transaction; return the version."""
    con.execute("BEGIN IMMEDIATE")
    try:
        version = con.execute("PRAGMA user_version").fetchall()[0][0]
        assert isinstance(version, int)   # PRAGMA user_version is always an integer
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(f"index schema version {version} is newer than this program knows ({SCHEMA_VERSION})",
                               "upgrade mcp-nextcloud or point --index at another file")
        for step in range(version, SCHEMA_VERSION):
            con.execute(MIGRATIONS[step])
        if version != SCHEMA_VERSION:
            con.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return SCHEMA_VERSION
