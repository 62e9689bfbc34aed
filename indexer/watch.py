"""Keep a local folder's index current with watchdog.

Events are only hints: each touched path is queued with a ~300 ms debounce,
then looked at on disk (exists -> upsert/extract, gone -> remove). That makes
atomic saves (temp file + os.replace, seen as a move) and editors' save dances
come out right without modelling each event type. A directory created a
moment ago is rescanned, because inotify can miss writes into it (protocols.md §4.1).
"""
from __future__ import annotations

import os
import threading
import time
from typing import Callable

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from .journal import open_journal
from .local import index_one, is_ignored_path, walk
from .models import FileRecord
from .pipeline import ExtractionPool
from .store import Index

DEBOUNCE_SECONDS = 0.3


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: "FolderWatcher") -> None:
        self.w = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        src = os.fsdecode(event.src_path)
        if event.event_type == "moved":
            self.w.touch(src, gone_dir=event.is_directory)
            self.w.touch(os.fsdecode(event.dest_path), is_dir=event.is_directory)
        elif event.event_type == "created" and event.is_directory:
            self.w.touch(src, is_dir=True)
        elif event.event_type == "deleted":
            self.w.touch(src, gone_dir=event.is_directory)
        elif not event.is_directory:
            self.w.touch(src)


class FolderWatcher:
    """Watch `folder` and apply changes to `index` until `stop()` (thread-safe)."""

    def __init__(self, index: Index, folder: str, *, pool: ExtractionPool | None = None,
                 debounce: float = DEBOUNCE_SECONDS,
                 on_change: Callable[[str, FileRecord | None], None] | None = None) -> None:
        self.index = index
        self.root = os.path.abspath(folder)
        # Extraction always runs capped in worker processes; a pool we create is ours to close.
        self._own_pool = pool is None
        self.pool = pool or ExtractionPool()
        self.debounce = debounce
        self.on_change = on_change
        self._due: dict[str, tuple[float, bool, bool]] = {}   # path -> (due time, is_dir, gone_dir)
        self._cv = threading.Condition()
        self._stop = threading.Event()
        self._observer = Observer()
        self._thread = threading.Thread(target=self._run, name="index-watch", daemon=True)
        self.journal = open_journal(self.root)
        self.applied = 0

    def touch(self, path: str, *, is_dir: bool = False, gone_dir: bool = False) -> None:
        """Queue `path` to be looked at once it has been quiet for `debounce` seconds."""
        if os.path.basename(path).startswith((".sync_", "._sync_")) and self.journal is not None:
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
        if self._own_pool:
            self.pool.close()

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
            self.journal.reload()
            for abs_path, _rel, _st in walk(self.root):
                index_one(writer, self.root, abs_path, pool=self.pool, journal=self.journal)
            return
        if os.path.isdir(path):
            # New or moved-in folder: its files may have been written before we saw it.
            for abs_path, _rel, _st in walk(path):
                rec = index_one(writer, self.root, abs_path, pool=self.pool, journal=self.journal)
                self._notify(abs_path, rec)
            return
        if os.path.exists(path):
            self._notify(path, index_one(writer, self.root, path, pool=self.pool, journal=self.journal))
            return
        # Gone: a file, or a whole folder (its records all sit below its local path).
        removed = 0
        # (Deleted-folder events are not always flagged is_directory, so always look below the path too.)
        for rec in list(self.index.iter_local(path)):
            writer.remove(rec.id)
            removed += 1
        rows = self.index.conn().execute(
            "SELECT id FROM files WHERE source='local' AND local_path=?", (os.path.abspath(path),)).fetchall()
        for (rec_id,) in rows:
            writer.remove(rec_id)
            removed += 1
        if removed:
            self._notify(path, None)

    def _notify(self, path: str, rec: FileRecord | None) -> None:
        self.applied += 1
        if self.on_change:
            self.on_change(path, rec)
