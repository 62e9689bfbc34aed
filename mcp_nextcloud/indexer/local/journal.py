"""Read the Nextcloud desktop client's sync journal (read-only).

The client keeps `.sync_<hash>.db` (older: `._sync_<hash>.db`, ownCloud:
`.csync_journal.db`) at the root of a sync folder: SQLite, table `metadata`
with one row per synced item: `path` (relative to the folder, '/'-separated),
`fileid` (Nextcloud's oc:id: the 8+ digit fileId followed by the instance id),
`md5` (the etag, named md5 for historical reasons), `modtime`, `filesize`,
`type` (0 file, 1 symlink, 2 directory, 4+ virtual files). We open it with
SQLITE_OPEN_READONLY so the client is never disturbed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import apsw

JOURNAL_GLOBS = (".sync_*.db", "._sync_*.db", ".csync_journal.db")
FILE_TYPE = 0
_DIGITS = re.compile(r"^(\d+)")


@dataclass(frozen=True)
class JournalEntry:
    path: str            # relative to the sync folder, '/'-separated, no leading '/'
    file_id: int | None
    etag: str | None
    modtime: int | None
    size: int | None


def find_journal(folder: str | Path) -> Path | None:
    """The sync journal at the root of `folder` (the most recently modified one), or None."""
    root = Path(folder)
    found = [p for g in JOURNAL_GLOBS for p in root.glob(g) if p.is_file()]
    if not found:
        return None
    return max(found, key=lambda p: p.stat().st_mtime)


def parse_file_id(raw: object) -> int | None:
    """Nextcloud's numeric fileId from the journal's `fileid` ("00000123oc8f3k2j" -> 123)."""
    if raw is None:
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, bytes):
        raw = raw.decode("ascii", "replace")
    m = _DIGITS.match(str(raw))
    return int(m.group(1)) if m else None


def _etag(raw: object) -> str | None:
    if raw is None:
        return None
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    s = str(raw).strip().strip('"')
    return s or None


class Journal:
    """The file rows of one sync journal, loaded once (a few MB even for big folders)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.entries: dict[str, JournalEntry] = {}
        self.reload()

    def reload(self) -> None:
        """(Re)read the journal; an unreadable journal leaves the entries empty rather than failing the index."""
        entries: dict[str, JournalEntry] = {}
        con = apsw.Connection(str(self.path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            con.set_busy_timeout(2000)
            cols = {r[1] for r in con.execute("PRAGMA table_info(metadata)")}
            if "path" not in cols:
                raise ValueError(f"{self.path.name} has no metadata table: not a Nextcloud sync journal")
            size_col = "filesize" if "filesize" in cols else "NULL"
            fid_col = "fileid" if "fileid" in cols else "NULL"
            type_col = "type" if "type" in cols else "0"
            for path, fid, md5, modtime, size, typ in con.execute(
                    f"SELECT path, {fid_col}, md5, modtime, {size_col}, {type_col} FROM metadata"):
                if typ != FILE_TYPE or not path:
                    continue
                p = path.decode("utf-8", "replace") if isinstance(path, bytes) else str(path)
                entries[p] = JournalEntry(p, parse_file_id(fid), _etag(md5), modtime, size)
        finally:
            con.close()
        self.entries = entries

    def get(self, rel_path: str) -> JournalEntry | None:
        """The entry for a folder-relative path ('/'-separated)."""
        return self.entries.get(rel_path.strip("/"))


def open_journal(folder: str | Path) -> Journal | None:
    """The journal of a sync folder, or None when the folder is not one (or the journal is unreadable)."""
    path = find_journal(folder)
    if path is None:
        return None
    try:
        return Journal(path)
    except (apsw.Error, ValueError):
        return None
