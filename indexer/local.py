"""The local source: a folder on disk (often the Nextcloud desktop client's sync folder).

`index_folder` walks the folder, skips what is not a user document (hidden
and system files, sync journals, partial downloads, office lock files), upserts
each file (unchanged size+mtime means nothing to do), extracts the changed
ones in the ExtractionPool and removes records of files that are gone. Each
stored file is its own transaction, so a kill at any moment loses at most the
files in flight; the next run skips everything already stored.
"""
from __future__ import annotations

import concurrent.futures as cf
import fnmatch
import mimetypes
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator, TextIO

from .journal import Journal, open_journal
from .models import FileMeta, FileRecord
from .pipeline import ExtractionPool, finish
from .store import Index, IndexWriter

# Not user documents: client state, partial downloads, editor lock/backup files.
IGNORED_PATTERNS = (
    ".*",                 # hidden files and folders: .sync_*.db, ._sync_*.db, .~lock.*#, .nextcloudsync.log, .git
    "~$*",                # MS Office owner files
    "*.part", "*.crdownload", "*.download", "*.tmp", "*.temp", "*~", "*.swp",
    "Thumbs.db", "desktop.ini", "Desktop.ini", "$RECYCLE.BIN", "System Volume Information",
)


def is_ignored(name: str) -> bool:
    """True for names that are never indexed (see IGNORED_PATTERNS)."""
    return any(fnmatch.fnmatchcase(name, pat) for pat in IGNORED_PATTERNS)


def is_ignored_path(root: str, abs_path: str) -> bool:
    """True when any component of `abs_path` below `root` is ignored."""
    rel = os.path.relpath(abs_path, root)
    return rel.startswith("..") or any(is_ignored(part) for part in Path(rel).parts)


def walk(root: str) -> Iterator[tuple[str, str, os.stat_result]]:
    """(absolute path, '/'-relative path, stat) of every indexable regular file under `root`."""
    stack = [root]
    while stack:
        top = stack.pop()
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue  # unreadable folder: skip, the rest still gets indexed
        for entry in sorted(entries, key=lambda e: e.name):
            if is_ignored(entry.name):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    rel = os.path.relpath(entry.path, root).replace(os.sep, "/")
                    yield entry.path, rel, entry.stat(follow_symlinks=False)
            except OSError:
                continue


def file_meta(root: str, abs_path: str, st: os.stat_result, journal: Journal | None) -> FileMeta:
    """What the local source says about one file (journal ids when the folder is a sync folder)."""
    rel = os.path.relpath(abs_path, root).replace(os.sep, "/")
    entry = journal.get(rel) if journal else None
    mime = mimetypes.guess_type(abs_path)[0]
    return FileMeta(path="/" + rel, source="local", file_id=entry.file_id if entry else None,
                    etag=entry.etag if entry else None, size=st.st_size, mtime=st.st_mtime, mime=mime,
                    local_path=os.path.abspath(abs_path))


@dataclass
class IndexReport:
    """What one `index add` run did."""

    folder: str
    scanned: int = 0
    extracted: int = 0
    unchanged: int = 0
    failed: int = 0
    removed: int = 0
    journal: str | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


class Progress:
    """files done/total and rate on stderr, only when stderr is a terminal."""

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.total, self.done, self.t0, self._last = total, 0, time.monotonic(), 0.0

    def step(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self._last > 0.2 or self.done == self.total):
            self._last = now
            rate = self.done / max(now - self.t0, 1e-6)
            self.stream.write(f"\rindexing: {self.done}/{self.total} files ({rate:.1f} files/s)")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def index_one(writer: IndexWriter, root: str, abs_path: str, *, pool: ExtractionPool | None,
              journal: Journal | None = None) -> FileRecord | None:
    """(Re)index one file now (used by watch); None when it vanished or is ignored."""
    if is_ignored_path(root, abs_path):
        return None
    try:
        st = os.stat(abs_path)
    except FileNotFoundError:
        return None
    if not os.path.isfile(abs_path):
        return None
    rec, needs = writer.upsert(file_meta(root, abs_path, st, journal))
    if not needs:
        return rec
    limit = pool.limits.max_bytes if pool else None
    if limit is not None and st.st_size > limit:
        writer.record_failure(rec.id, "too_large", f"{st.st_size} bytes is above the {limit}-byte extraction "
                              "limit; it is listed but not searchable; do not retry")
        return writer.record(rec.id)
    data = _read(abs_path)
    if data is None:
        return None
    try:
        outcome = pool.extract(data, os.path.basename(abs_path), rec.mime) if pool else _extract_here(data, rec)
    except Exception as exc:  # ReaderError and anything else: recorded, never raised
        outcome = exc
    return finish(writer, rec, outcome)


def _extract_here(data: bytes, rec: FileRecord):
    from reader import extract

    return extract(data, os.path.basename(rec.path), rec.mime)


def index_folder(index: Index, folder: str | Path, *, pool: ExtractionPool | None = None,
                 progress: Progress | bool | None = None,
                 on_extracted: Callable[[FileRecord], None] | None = None) -> IndexReport:
    """Index `folder` recursively into `index`; see the module docstring."""
    root = os.path.abspath(os.fspath(folder))
    if not os.path.isdir(root):
        raise FileNotFoundError(f"{root} is not a folder: give the path of a folder to index")
    t0 = time.monotonic()
    writer = index.writer()
    journal = open_journal(root)
    report = IndexReport(folder=root, journal=journal.path.name if journal else None)
    files = list(walk(root))
    report.scanned = len(files)
    prog = progress if isinstance(progress, Progress) else Progress(len(files), enabled=progress)
    own_pool = pool is None
    pool = pool or ExtractionPool()
    seen: set[str] = set()
    in_flight: dict[cf.Future, FileRecord] = {}
    max_in_flight = pool.workers * 2  # bounds memory: at most this many files' bytes held at once

    def drain(block_until: int) -> None:
        while len(in_flight) > block_until:
            done, _ = cf.wait(list(in_flight), return_when=cf.FIRST_COMPLETED)
            stored = []
            with writer.transaction():  # everything finished so far in one commit
                for fut in done:
                    rec = in_flight.pop(fut)
                    try:
                        outcome = fut.result()
                    except Exception as exc:
                        outcome = exc
                    stored.append(finish(writer, rec, outcome))
            for new in stored:
                if new.status == "indexed":
                    report.extracted += 1
                    if on_extracted:
                        on_extracted(new)
                else:
                    report.failed += 1
                prog.step()

    try:
        # Phase 1: record every file (pending when new or changed), a few hundred per commit.
        todo: list[tuple[FileRecord, str, os.stat_result]] = []
        for i in range(0, len(files), 500):
            with writer.transaction():
                for abs_path, _rel, st in files[i:i + 500]:
                    meta = file_meta(root, abs_path, st, journal)
                    seen.add(meta.local_path)
                    rec, needs = writer.upsert(meta)
                    if needs:
                        todo.append((rec, abs_path, st))
                    else:
                        report.unchanged += 1
        prog.step(report.unchanged)
        # Phase 2: extract what changed, storing results as they come back.
        for rec, abs_path, st in todo:
            if st.st_size > pool.limits.max_bytes:
                writer.record_failure(rec.id, "too_large", f"{st.st_size} bytes is above the "
                                      f"{pool.limits.max_bytes}-byte extraction limit; it is listed but not "
                                      "searchable; do not retry")
                report.failed += 1
                prog.step()
                continue
            data = _read(abs_path)
            if data is None:  # deleted since the walk
                writer.remove(rec.id)
                prog.step()
                continue
            in_flight[pool.submit(data, os.path.basename(abs_path), rec.mime)] = rec
            drain(max_in_flight)
        drain(0)
        for rec in list(index.iter_local(root)):
            if rec.local_path not in seen:
                writer.remove(rec.id)
                report.removed += 1
        writer.set_meta("last_indexed_at", f"{time.time():.3f}")
        writer.set_meta("local_root", root)
    finally:
        prog.close()
        if own_pool:
            pool.close()
    report.seconds = round(time.monotonic() - t0, 3)
    return report
