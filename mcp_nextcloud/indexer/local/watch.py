"""Keep a local folder's index current with watchdog.

Events are mostly hints: each touched path is queued with a ~300 ms debounce,
then looked at on disk (exists -> upsert/extract, gone -> remove). A move
whose source is indexed is applied at once as a move: the record (or every
record under a moved folder) takes the new path and keeps its text. A move
whose source is not indexed (an atomic save's temp file: `.foo.swp`, `*.tmp`)
is "destination modified". A directory created a moment ago is rescanned,
because inotify can miss writes into it (protocols.md §4.1). In a sync folder,
a journal change is answered by comparing the journal's rows with what the
index holds (fileId/etag per path) and looking only at the rows that differ.
"""
from __future__ import annotations

import functools
import os
import threading
import time
from typing import Callable

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from mcp_nextcloud.indexer.local.desktop_config import configured_remote
from mcp_nextcloud.indexer.local.journal import open_journal
from mcp_nextcloud.indexer.local.folder import remove_all, file_meta, index_one, is_ignored_path, walk
from mcp_nextcloud.indexer.jobs.pool import ExtractionPool, Extractor
from mcp_nextcloud.indexer.models import FileMeta, FileRecord
from mcp_nextcloud.indexer.store.index import Index
from mcp_nextcloud.indexer.store.writer import PathCollision, WriteTx

DEBOUNCE_SECONDS = 0.3


def _journal_changed(event: FileSystemEvent, src: str) -> bool:
    """Whether an event on the sync journal (or its -wal/-shm) means its content changed.

    Reading a WAL-mode journal, as we do after every change, creates, opens and
    touches its -wal and -shm files: reacting to those events re-read the journal
    every debounce period, forever. Content changes arrive as writes to the
    database or its -wal (or as a database file moved into place); -shm is only
    SQLite's shared-memory index and never holds content.
    """
    if src.endswith("-shm"):
        return False
    return event.event_type in ("modified", "moved")


def _move_all(tx: WriteTx, metas: list[tuple[int, str, FileMeta]]) -> tuple[list[FileRecord], list[str]]:
    """Move records to their new paths in one transaction; (moved records, messages of those skipped)."""
    done: list[FileRecord] = []
    skipped: list[str] = []
    for rec_id, new_local, meta in metas:
        try:
            rec = tx.move(rec_id, meta)
        except PathCollision as exc:
            skipped.append(f"skipped {new_local}: {exc.reason}")
            continue
        if rec is not None:
            done.append(rec)
    return done, skipped


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: "FolderWatcher") -> None:
        self.w = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        src = os.fsdecode(event.src_path)
        if self.w._is_journal(src) and not _journal_changed(event, src):
            return
        if event.event_type == "moved":
            self.w.moved(src, os.fsdecode(event.dest_path), is_dir=event.is_directory)
        elif event.event_type == "created" and event.is_directory:
            self.w.touch(src, is_dir=True)
        elif event.event_type == "deleted":
            self.w.touch(src, gone_dir=event.is_directory)
        elif not event.is_directory:
            self.w.touch(src)


class FolderWatcher:
    """Watch `folder` and apply changes to `index` until `stop()` (thread-safe)."""

    def __init__(self, index: Index, folder: str, *, pool: Extractor | None = None,
                 debounce: float = DEBOUNCE_SECONDS,
                 on_change: Callable[[str, FileRecord | None], None] | None = None) -> None:
        self.index = index
        self.root = os.path.abspath(folder)
        # Extraction always runs capped in worker processes; a pool we create is ours to close.
        self._own_pool: ExtractionPool | None = None
        if pool is None:
            pool = self._own_pool = ExtractionPool()
        self.pool: Extractor = pool
        self.debounce = debounce
        self.on_change = on_change
        self._due: dict[str, tuple[float, bool, bool]] = {}   # path -> (due time, is_dir, gone_dir)
        self._cv = threading.Condition()
        self._stop = threading.Event()
        self._observer = Observer()
        self._thread = threading.Thread(target=self._run, name="index-watch", daemon=True)
        self.journal = open_journal(self.root)
        self.root_rec = index.writer().register_root(
            self.root, journal=self.journal.path.name if self.journal else None, configured=configured_remote)
        self.applied = 0
        self.moves = 0            # records moved without extraction
        self.journal_checked = 0  # files looked at because the journal changed
        self.journal_reads = 0    # times the journal was re-read (our own reads must not trigger more)

    def _is_journal(self, path: str) -> bool:
        return self.journal is not None and os.path.basename(path).startswith((".sync_", "._sync_"))

    def moved(self, src: str, dest: str, *, is_dir: bool = False) -> None:
        """Apply a rename/move now when its source is indexed (text kept); otherwise treat dest as modified."""
        if self._is_journal(dest) or is_ignored_path(self.root, dest):
            self.touch(src, gone_dir=is_dir)  # moved out of sight (or into a hidden name): gone
            return
        if self._is_journal(src) or is_ignored_path(self.root, src):
            self.touch(dest, is_dir=is_dir)  # atomic save: the temp file was never indexed
            return
        src, dest = os.path.abspath(src), os.path.abspath(dest)
        moved = self._move_records(src, dest, is_dir)
        with self._cv:
            # Changes queued for the old path now belong to the new one (modified just before the move).
            for path in [p for p in self._due if p == src or p.startswith(src + os.sep)]:
                self._due[dest + path[len(src):]] = self._due.pop(path)
        if is_dir or not moved:
            # A folder: pick up what was not indexed yet. A file we did not know: look at it.
            self.touch(dest, is_dir=is_dir)
            self.touch(src, gone_dir=is_dir)

    def _move_records(self, src: str, dest: str, is_dir: bool) -> int:
        """Move the record at `src` (or all under it) to `dest`; return how many moved."""
        writer = self.index.writer()
        rid = self.root_rec.id
        recs = [r for r in self.index.iter_local(src) if r.root_id == rid] if is_dir else []
        rows = self.index.conn().execute(
            "SELECT id, local_path FROM files WHERE source='local' AND local_path=? AND root_id=?",
            (src, rid)).fetchall()
        pairs = [(r.id, r.local_path or "") for r in recs] + [(int(str(i)), str(lp)) for i, lp in rows]
        metas = []
        for rec_id, old_local in pairs:
            new_local = dest + old_local[len(src):]
            try:
                st = os.stat(new_local)
            except OSError:
                continue  # already gone again: the queued touch of src removes it
            metas.append((rec_id, new_local, file_meta(self.root, new_local, st, self.journal, self.root_rec)))
        done, skipped = writer.call(lambda tx: _move_all(tx, metas))
        for message in skipped:  # another folder holds that path: the file stays out, said why
            if self.on_change:
                self.on_change(message, None)
        self.moves += len(done)
        for rec in done:
            self._notify(rec.local_path or dest, rec)
        return len(done)

    def touch(self, path: str, *, is_dir: bool = False, gone_dir: bool = False) -> None:
        """Queue `path` to be looked at once it has been quiet for `debounce` seconds."""
        if self._is_journal(path):
            # The desktop client updated its journal: new etags/fileIds for what it synced.
            path = self.root
            is_dir = False
        elif is_ignored_path(self.root, path):
            return
        with self._cv:
            old = self._due.get(path)
            self._due[path] = (time.monotonic() + self.debounce, is_dir or bool(old and old[1]),
                               gone_dir or bool(old and old[2]))
            self._cv.notify()

    def start(self) -> "FolderWatcher":
        self._observer.schedule(_Handler(self), self.root, recursive=True)
        self._observer.start()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        with self._cv:
            self._cv.notify()
        self._observer.stop()
        self._observer.join(5)
        self._thread.join(10)
        if self._own_pool is not None:
            self._own_pool.close()

    def __enter__(self) -> "FolderWatcher":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def idle(self) -> bool:
        """True when nothing is queued (tests wait on this after the debounce)."""
        with self._cv:
            return not self._due

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._cv:
                now = time.monotonic()
                ready = [(p, v) for p, v in self._due.items() if v[0] <= now]
                for p, _ in ready:
                    del self._due[p]
                if not ready:
                    nxt = min((v[0] for v in self._due.values()), default=now + 1.0)
                    self._cv.wait(max(0.01, nxt - now))
                    continue
            for path, (_, is_dir, gone_dir) in ready:
                try:
                    self._apply(path, is_dir, gone_dir)
                except Exception as exc:  # one bad path must not stop the watcher
                    if self.on_change:
                        self.on_change(f"error on {path}: {type(exc).__name__}: {exc}", None)

    def _apply(self, path: str, is_dir: bool, gone_dir: bool) -> None:
        writer = self.index.writer()
        if path == self.root and self.journal is not None:
            self._apply_journal()
            return
        if os.path.isdir(path):
            # New or moved-in folder: its files may have been written before we saw it.
            for abs_path, _rel, _st in walk(path):
                rec = index_one(writer, self.root, abs_path, pool=self.pool, journal=self.journal,
                                root_rec=self.root_rec)
                self._notify(abs_path, rec)
            return
        if os.path.exists(path):
            self._notify(path, index_one(writer, self.root, path, pool=self.pool, journal=self.journal,
                                         root_rec=self.root_rec))
            return
        # Gone: a file, or a whole folder (its records all sit below its local path).
        removed = 0
        # (Deleted-folder events are not always flagged is_directory, so always look below the path too.)
        ids = [rec.id for rec in self.index.iter_local(path)]
        ids += [int(str(rec_id)) for (rec_id,) in self.index.conn().execute(
            "SELECT id FROM files WHERE source='local' AND local_path=?", (os.path.abspath(path),)).fetchall()]
        if ids:
            writer.call(functools.partial(remove_all, ids=ids))
            removed = len(ids)
        if removed:
            self._notify(path, None)

    def _apply_journal(self) -> None:
        """Look only at the files whose journal row differs from the index (new fileId/etag, new path)."""
        assert self.journal is not None
        self.journal_reads += 1
        self.journal.reload()
        held = {rec.path: (rec.file_id, rec.etag) for rec in self.index.root_records(self.root_rec.id)}
        writer = self.index.writer()
        for rel, entry in self.journal.entries.items():
            if held.get(self.root_rec.path_for(rel)) == (entry.file_id, entry.etag):
                continue
            abs_path = os.path.join(self.root, *rel.split("/"))
            if is_ignored_path(self.root, abs_path) or not os.path.isfile(abs_path):
                continue  # the client has not written it here (yet): its own events will bring it
            self.journal_checked += 1
            self._notify(abs_path, index_one(writer, self.root, abs_path, pool=self.pool, journal=self.journal,
                                             root_rec=self.root_rec))

    def _notify(self, path: str, rec: FileRecord | None) -> None:
        self.applied += 1
        if self.on_change:
            self.on_change(path, rec)
