"""Local folders ("roots") in the index and the path each of their files gets.

Two kinds of folder share the local namespace:

- a plain folder: the first one added keeps "/" + its relative paths, each
  later one is namespaced under a unique "/<folder name>";
- a desktop-client sync folder (it has a `.sync_*.db` journal): its files get
  their real Nextcloud paths, the Nextcloud folder it mirrors + the journal's
  relative path, and never a name prefix, so a local hit carries the same
  path and fileId as the remote source. That folder is `--remote-path` when
  given, else the client's nextcloud.cfg entry for the folder, else what an
  earlier run recorded, else "/" (the client's default; the report says so).

Collisions, decided once here: a sync folder's file wins a path over a plain
folder's file (the plain record yields with a warning: the Nextcloud path and
fileId are the identifiers every other tool uses); a plain folder's file never
displaces a sync folder's (skipped with a warning); two sync folders mirroring
the same or nested Nextcloud folders are refused (two accounts belong in two
databases).
"""
from __future__ import annotations

import os
import time
from typing import Callable, cast

from mcp_nextcloud.indexer.errors import IndexCode, IndexerError
from mcp_nextcloud.indexer.models import FileMeta, FileRecord, Root
from mcp_nextcloud.indexer.store.rows import ROOT_COLUMNS, Rows, _row_to_root, fold_name

# (local folder, journal file name) -> (the Nextcloud folder the desktop client's config says it mirrors, or
# None; notes about configs that could not be read). indexer.local.desktop_config.configured_remote is the one;
# the store only stores what the caller's lookup found.
RemoteLookup = Callable[[str, str], tuple[str | None, list[str]]]


class PathCollision(IndexerError, ValueError):
    """A local file's path is already held by a file of another local folder in this index."""

    code = IndexCode.PATH_COLLISION


class FolderOverlap(IndexerError, RuntimeError):
    """A folder to index lies inside a local folder this index already holds."""

    code = IndexCode.FOLDER_OVERLAP


class RemotePathConflict(IndexerError, RuntimeError):
    """Two sync folders in one index mirror the same (or nested) Nextcloud folders."""

    code = IndexCode.REMOTE_PATH_CONFLICT




def _within(path: str, prefix: str) -> bool:
    """Is the Nextcloud path `path` ("/" or "/A/B") equal to or below `prefix`?"""
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


class Roots:
    """The roots side of the writer: runs on the writer thread, inside its transaction (see WriteTx)."""

    def __init__(self, rows: Rows) -> None:
        self.rows = rows
        self._con = rows.con

    def _root(self, root_id: int | None) -> Root | None:
        if root_id is None:
            return None
        rows = self._con.execute(f"SELECT {ROOT_COLUMNS} FROM roots WHERE id=?", (root_id,)).fetchall()
        return _row_to_root(rows[0]) if rows else None

    def register(self, folder: str, *, journal: str | None = None, remote: str | None = None,
                 configured: RemoteLookup | None = None, notes: list[str] | None = None) -> Root:
        """The roots row of a local folder, created on first use; see the module docstring for its prefix.

        `journal` is the file name of the folder's sync journal (None: a plain
        folder); `remote` (normalised: "/" or "/A/B") states the Nextcloud folder
        a sync folder mirrors and wins over the desktop client's config, which
        `configured` looks up (None: no config consulted). When a known folder's prefix
        changes (it became a sync folder, or now mirrors another Nextcloud
        folder) its records are renamed in place: no text is extracted again.
        Messages about records that yielded and configs that could not be
        read are appended to `notes`.
        """
        notes = notes if notes is not None else []
        rows = self._con.execute(f"SELECT {ROOT_COLUMNS} FROM roots WHERE folder=?", (folder,)).fetchall()
        existing = _row_to_root(rows[0]) if rows else None
        if existing is None:
            for (outer,) in self._con.execute("SELECT folder FROM roots"):
                if folder.startswith(outer.rstrip(os.sep) + os.sep):
                    raise FolderOverlap(
                        f"{folder} is inside {outer}, which this index already holds: its files are indexed "
                        "from there", f"index {outer} again instead, or use another --index")
        target: str | None
        origin: str | None
        if journal is not None:
            target, origin = self._resolve_remote(folder, journal, remote, configured, existing, notes)
            self._check_remote_overlap(folder, target)
            prefix = "" if target == "/" else target
        else:
            target = origin = None
            prefix = existing.prefix if existing else self._free_prefix(folder)
        if existing is not None:
            if existing.prefix != prefix:
                self._reprefix(existing, prefix, notes)
            self._con.execute("UPDATE roots SET journal=?, prefix=?, remote=?, remote_from=? WHERE id=?",
                              (journal, prefix, target, origin, existing.id))
            existing.journal, existing.prefix = journal, prefix
            existing.remote, existing.remote_from = target, origin
            return existing
        now = time.time()
        rid = cast(int, self._con.execute(
            "INSERT INTO roots(folder, prefix, journal, added_at, remote, remote_from) VALUES(?,?,?,?,?,?) "
            "RETURNING id", (folder, prefix, journal, now, target, origin)).fetchall()[0][0])
        self._adopt_legacy(rid, folder, prefix, notes)
        return Root(rid, folder, prefix, journal, now, None, target, origin)

    @staticmethod
    def _resolve_remote(folder: str, journal: str, remote: str | None, configured: RemoteLookup | None,
                        existing: Root | None, notes: list[str]) -> tuple[str, str]:
        """(Nextcloud folder the sync folder mirrors, where that came from): option > config > recorded > "/"."""
        if remote is not None:
            return remote, "option"
        if existing is not None and existing.remote is not None and existing.remote_from == "option":
            return existing.remote, "option"   # stated once with --remote-path: it stays until stated again
        target, problems = configured(folder, journal) if configured is not None else (None, [])
        notes.extend(problems)
        if target is not None:
            return target, "config"
        if existing is not None and existing.remote is not None:
            return existing.remote, existing.remote_from or "default"
        return "/", "default"

    def _check_remote_overlap(self, folder: str, target: str) -> None:
        for other in (_row_to_root(r) for r in self._con.execute(
                f"SELECT {ROOT_COLUMNS} FROM roots WHERE remote IS NOT NULL AND folder != ?", (folder,))):
            if other.remote is not None and (_within(target, other.remote) or _within(other.remote, target)):
                raise RemotePathConflict(
                    f"{folder} mirrors the Nextcloud folder {target}, but the sync folder {other.folder} in this "
                    f"index already mirrors {other.remote}: their Nextcloud paths would collide",
                    "Two sync folders of two accounts belong in two databases: index this one with --index "
                    "OTHER.db; if it mirrors another folder, say which with --remote-path")

    def _free_prefix(self, folder: str) -> str:
        """A plain folder's prefix: "" for the very first folder, else a "/<name>" no folder or file uses."""
        if not self._con.execute("SELECT 1 FROM roots LIMIT 1").fetchall():
            return ""
        base = "".join(c if c.isprintable() and c != "/" else "_" for c in os.path.basename(folder)) or "folder"
        n = 1
        while True:
            prefix = "/" + (base if n == 1 else f"{base}-{n}")
            lo, hi = prefix + "/", prefix + "0"   # '/' + 1 == '0': everything below prefix sorts in between
            taken = self._con.execute(
                "SELECT 1 FROM roots WHERE prefix=? OR (prefix > ? AND prefix < ?) UNION ALL SELECT 1 FROM files "
                "WHERE source='local' AND (path=? OR (path > ? AND path < ?)) LIMIT 1",
                (prefix, lo, hi, prefix, lo, hi)).fetchall()
            if not taken:
                return prefix
            n += 1

    def _adopt_legacy(self, root_id: int, folder: str, prefix: str, notes: list[str]) -> None:
        """Give local records written before roots existed (schema v2) to the folder they live in."""
        lo, hi = folder.rstrip(os.sep) + os.sep, folder.rstrip(os.sep) + chr(ord(os.sep) + 1)
        legacy = cast(list[tuple[int, str]], self._con.execute(
            "SELECT id, path FROM files WHERE source='local' AND root_id IS NULL AND local_path > ? AND local_path < ?",
            (lo, hi)).fetchall())
        if prefix:
            self._rename_all(root_id, [(rec_id, path, prefix + path) for rec_id, path in legacy], notes)
        for rec_id, _path in legacy:
            self._con.execute("UPDATE files SET root_id=? WHERE id=?", (root_id, rec_id))

    def _reprefix(self, root: Root, prefix: str, notes: list[str]) -> None:
        """Move every record of `root` from its old prefix to `prefix`, keeping texts."""
        old = root.prefix
        moves = []
        rows = cast(list[tuple[int, str]], self._con.execute(
            "SELECT id, path FROM files WHERE source='local' AND root_id=?", (root.id,)).fetchall())
        for rec_id, path in rows:
            rel = path[len(old):] if old and path.startswith(old + "/") else path
            moves.append((rec_id, path, prefix + rel))
        self._rename_all(root.id, moves, notes)

    def _rename_all(self, root_id: int, moves: list[tuple[int, str, str]], notes: list[str]) -> None:
        """Rename records (id, old path, new path) in two steps, so no rename trips on one not yet done."""
        for rec_id, _old, _new in moves:
            # '//' never occurs in a real path: a parking place that cannot collide.
            self._con.execute("UPDATE files SET path=? WHERE id=?", (f"//renaming/{rec_id}", rec_id))
        root = self._root(root_id)
        for rec_id, _old, new in moves:
            holder = self.rows.get("source='local' AND path=? AND id != ?", (new, rec_id))
            if holder is not None:
                self._yield_path(holder, root, new, notes)
            self._con.execute("UPDATE files SET path=?, name_fold=? WHERE id=?", (new, fold_name(new), rec_id))

    def _yield_path(self, holder: FileRecord, winner: Root | None, path: str, notes: list[str]) -> None:
        """Drop `holder` (a plain folder's record) so the sync folder `winner` can hold `path`."""
        loser = self._root(holder.root_id)
        self.rows.delete(holder.id)
        notes.append(
            f"{path} is the Nextcloud path of a file in the sync folder {winner.folder if winner else '?'}, so "
            f"{holder.local_path} (from {loser.folder if loser else 'an earlier index'}) is no longer indexed "
            "at that path; to search both, index the plain folder into another database with --index")

    def claim(self, holder: FileRecord | None, meta: FileMeta, path: str, notes: list[str] | None) -> bool:
        """Settle a local path held by another folder's record; True when that record was dropped.

        A sync folder's file takes the path from a plain folder's file; every
        other clash raises PathCollision and nothing is overwritten.
        """
        if holder is None or meta.root_id is None or holder.root_id is None or holder.root_id == meta.root_id:
            return False
        mine, theirs = self._root(meta.root_id), self._root(holder.root_id)
        if mine is not None and mine.is_sync and not (theirs is not None and theirs.is_sync):
            self._yield_path(holder, mine, path, notes if notes is not None else [])
            return True
        if theirs is not None and theirs.is_sync:
            raise PathCollision(
                f"{path} is the Nextcloud path of a file in the sync folder {theirs.folder}, which keeps it; "
                f"this file ({meta.local_path}) was skipped",
                f"index {mine.folder if mine else 'this folder'} into another database with --index to search both")
        raise PathCollision(
            f"{path} is already indexed from another local folder; this file ({meta.local_path}) was skipped",
            "rename the top-level folder that collides, or index the folders into separate databases with --index")

    def set_indexed(self, root_id: int, journal: str | None) -> None:
        """Record that a local folder was just indexed in full (and which journal it has)."""
        self._con.execute("UPDATE roots SET indexed_at=?, journal=? WHERE id=?", (time.time(), journal, root_id))

    def forget(self, root_id: int) -> int:
        """Remove a local folder from the index: its files, their text and its roots row; return the file count."""
        root = self._root(root_id)
        ids = [cast(int, r[0]) for r in self._con.execute("SELECT id FROM files WHERE root_id=?", (root_id,))]
        for rec_id in ids:
            self.rows.delete(rec_id)
        self._con.execute("DELETE FROM roots WHERE id=?", (root_id,))
        if root is not None:  # `index watch` without a folder must not pick a folder that is gone
            self._con.execute("DELETE FROM meta WHERE key='local_root' AND value=?", (root.folder,))
        return len(ids)
