"""The local source: a folder on disk (often the Nextcloud desktop client's sync folder).

`index_folder` walks the folder, skips what is not a user document (hidden
and system files, sync journals, partial downloads, office lock files), upserts
each file (unchanged size+mtime means nothing to do), extracts the changed
ones in the ExtractionPool and removes records of files that are gone. A file
that vanished while a file with the same size, mtime and content hash
appeared is a move: the record takes the new path and keeps its text. Each
folder is a root with its own path prefix (see `indexer.store.roots`): a sync folder's
files get their Nextcloud paths (the Nextcloud folder it mirrors, from
`remote_path`, the desktop client's config or "/", + the journal's path). Each
stored file is its own transaction, so a kill at any moment loses at most the
files in flight; the next run skips everything already stored.
"""
from __future__ import annotations

import concurrent.futures as cf
import fnmatch
import hashlib
import mimetypes
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator, TextIO

from indexer.local.desktop_config import RemotePathError, normalize_remote_path
from indexer.local.journal import Journal, open_journal
from indexer.models import FileMeta, FileRecord, Root
from indexer.jobs.pool import ExtractionPool, finish
from indexer.store.index import Index, IndexWriter
from indexer.store.writer import PathCollision

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


def file_meta(root: str, abs_path: str, st: os.stat_result, journal: Journal | None,
              root_rec: Root | None = None) -> FileMeta:
    """What the local source says about one file (journal ids when the folder is a sync folder).

    With `root_rec` the path carries that folder's prefix and the record its root id.
    """
    rel = os.path.relpath(abs_path, root).replace(os.sep, "/")
    entry = journal.get(rel) if journal else None
    mime = mimetypes.guess_type(abs_path)[0]
    path = root_rec.path_for(rel) if root_rec else "/" + rel
    return FileMeta(path=path, source="local", file_id=entry.file_id if entry else None,
                    etag=entry.etag if entry else None, size=st.st_size, mtime=st.st_mtime, mime=mime,
                    local_path=os.path.abspath(abs_path), root_id=root_rec.id if root_rec else None)


def content_hash(data: bytes) -> str:
    """Cheap content fingerprint of a local file (blake2b-128): tells a moved file from a new one."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def hash_file(path: str) -> str | None:
    """`content_hash` of a file's bytes, read in blocks; None when it cannot be read."""
    h = hashlib.blake2b(digest_size=16)
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()


@dataclass
class IndexReport:
    """What one `index add` run did."""

    folder: str
    scanned: int = 0
    extracted: int = 0
    unchanged: int = 0
    failed: int = 0
    removed: int = 0
    moved: int = 0
    journal: str | None = None
    path: str = "/"           # the prefix this folder's files carry in the index ("/" = none)
    remote_path: str | None = None       # a sync folder: the Nextcloud folder it mirrors
    remote_path_from: str | None = None  # "option" (--remote-path), "config" (nextcloud.cfg) or "default"
    warnings: list[str] = field(default_factory=list)
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
              journal: Journal | None = None, root_rec: Root | None = None) -> FileRecord | None:
    """(Re)index one file now (used by watch); None when it vanished, is ignored or collides."""
    if is_ignored_path(root, abs_path):
        return None
    try:
        st = os.stat(abs_path)
    except FileNotFoundError:
        return None
    if not os.path.isfile(abs_path):
        return None
    try:
        rec, needs = writer.upsert(file_meta(root, abs_path, st, journal, root_rec))
    except PathCollision:
        return None
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
    writer.set_hash(rec.id, content_hash(data))
    try:
        outcome = pool.extract(data, os.path.basename(abs_path), rec.mime) if pool else _extract_here(data, rec)
    except Exception as exc:  # ReaderError and anything else: recorded, never raised
        outcome = exc
    return finish(writer, rec, outcome)


def _extract_here(data: bytes, rec: FileRecord):
    from reader import extract

    return extract(data, os.path.basename(rec.path), rec.mime)


class _MoveSources:
    """Records whose file vanished in this run, by (size, mtime): candidates for a move's source."""

    def __init__(self, recs: Iterator[FileRecord]) -> None:
        self._by_stat: dict[tuple[int, float], list[FileRecord]] = {}
        for rec in recs:
            # Only records whose text (or failure) is final and whose bytes were fingerprinted.
            if rec.content_hash and rec.status != "pending":
                self._by_stat.setdefault((rec.size, round(rec.mtime, 3)), []).append(rec)

    def take(self, meta: FileMeta) -> FileRecord | None:
        """The vanished record holding exactly the bytes of `meta`'s file (then no longer a candidate)."""
        cands = self._by_stat.get((meta.size, round(meta.mtime, 3)))
        if not cands or meta.local_path is None:
            return None
        digest = hash_file(meta.local_path)  # read only when size and mtime already agree
        for i, rec in enumerate(cands):
            if rec.content_hash == digest:
                return cands.pop(i)
        return None


def _default_remote_note(root: str) -> str:
    return (f"{root} is a Nextcloud sync folder but no desktop-client config (nextcloud.cfg) says which Nextcloud "
            "folder it mirrors, so its files are taken to be at the top of the account (/); if it syncs a "
            f"subfolder, run: mcp-nextcloud index add {root} --remote-path /That/Folder")


def index_folder(index: Index, folder: str | Path, *, pool: ExtractionPool | None = None,
                 progress: Progress | bool | None = None,
                 on_extracted: Callable[[FileRecord], None] | None = None,
                 remote_path: str | None = None) -> IndexReport:
    """Index `folder` recursively into `index`; see the module docstring.

    `remote_path` states which Nextcloud folder a sync folder mirrors ("/Work");
    it wins over the desktop client's config and is remembered for later runs.
    A plain folder (no journal) with `remote_path` raises RemotePathError.
    """
    root = os.path.abspath(os.fspath(folder))
    if not os.path.isdir(root):
        raise FileNotFoundError(f"{root} is not a folder: give the path of a folder to index")
    t0 = time.monotonic()
    writer = index.writer()
    journal = open_journal(root)
    if remote_path is not None:
        remote_path = normalize_remote_path(remote_path)
        if journal is None:
            raise RemotePathError(
                f"{root} has no Nextcloud sync journal (.sync_*.db), so it is not a desktop-client sync folder and "
                "has no Nextcloud path: index it without --remote-path (it gets its own folder name as its path), "
                "or give the sync folder itself; do not retry as is")
    notes: list[str] = []
    root_rec = writer.register_root(root, journal=journal.path.name if journal else None, remote=remote_path,
                                    notes=notes)
    report = IndexReport(folder=root, journal=journal.path.name if journal else None, path=root_rec.prefix or "/",
                         remote_path=root_rec.remote, remote_path_from=root_rec.remote_from, warnings=notes)
    if root_rec.remote_from == "default":
        report.warnings.append(_default_remote_note(root))
    files = list(walk(root))
    report.scanned = len(files)
    prog = progress if isinstance(progress, Progress) else Progress(len(files), enabled=progress)
    own_pool = pool is None
    pool = pool or ExtractionPool()
    seen: set[str] = set()
    in_flight: dict[cf.Future, tuple[FileRecord, str]] = {}   # future -> (record, hash of its bytes)
    max_in_flight = pool.workers * 2  # bounds memory: at most this many files' bytes held at once

    def drain(block_until: int) -> None:
        while len(in_flight) > block_until:
            done, _ = cf.wait(list(in_flight), return_when=cf.FIRST_COMPLETED)
            stored = []
            with writer.transaction():  # everything finished so far in one commit
                for fut in done:
                    rec, digest = in_flight.pop(fut)
                    writer.set_hash(rec.id, digest)  # same commit as the text: they always agree
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
        known = {rec.local_path: rec for rec in index.root_records(root_rec.id)}
        walked = {os.path.abspath(abs_path) for abs_path, _rel, _st in files}
        gone = _MoveSources(rec for lp, rec in known.items() if lp not in walked)
        # Phase 1: record every file (pending when new or changed), a few hundred per commit.
        todo: list[tuple[FileRecord, str, os.stat_result]] = []
        for i in range(0, len(files), 500):
            with writer.transaction():
                for abs_path, _rel, st in files[i:i + 500]:
                    meta = file_meta(root, abs_path, st, journal, root_rec)
                    seen.add(meta.local_path)
                    old = known.get(meta.local_path)
                    # A new path, or one whose file was replaced (mv b a): maybe a vanished file's bytes.
                    if old is None or (old.size, round(old.mtime, 3)) != (meta.size, round(meta.mtime, 3)):
                        source = gone.take(meta)
                    else:
                        source = None
                    try:
                        if source is not None:
                            writer.move(source.id, meta, report.warnings)  # same bytes elsewhere: keep the text
                            report.moved += 1
                            report.unchanged += 1
                            continue
                        rec, needs = writer.upsert(meta, report.warnings)
                    except PathCollision as exc:
                        report.warnings.append(str(exc))
                        continue
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
            in_flight[pool.submit(data, os.path.basename(abs_path), rec.mime)] = (rec, content_hash(data))
            drain(max_in_flight)
        drain(0)
        # Whatever of this folder was not seen is gone (moved records carry their new local path).
        for rec in index.root_records(root_rec.id):
            if rec.local_path not in seen:
                writer.remove(rec.id)
                report.removed += 1
        writer.set_root_indexed(root_rec.id, report.journal)
        writer.set_meta("last_indexed_at", f"{time.time():.3f}")
        writer.set_meta("local_root", root)
    finally:
        prog.close()
        if own_pool:
            pool.close()
    report.seconds = round(time.monotonic() - t0, 3)
    return report
