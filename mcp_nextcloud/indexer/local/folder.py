"""The local source: a folder on disk (often the Nextcloud desktop client's sync folder).

`index_folder` walks the folder, skips what is not a user document (hidden
and system files, sync journals, partial downloads, office lock files), upserts
each file (unchanged size+mtime means nothing to do), extracts the changed
ones in the ExtractionPool and removes records of files that are gone. A file
that vanished while a file with the same size, mtime and content hash
appeared is a move: the record takes the new path and keeps its text. Each
folder is a root with its own path prefix (see `indexer.store.roots`): a sync folder's
files get their Nextcloud paths (the Nextcloud folder it mirrors, from
`remote_path`, the desktop client's config or "/", + the journal's path).
Results go to the index's writer thread, which commits whatever has queued
up together, so a kill at any moment loses at most the files not yet
committed; the next run skips everything already stored.
"""
from __future__ import annotations

import concurrent.futures as cf
import fnmatch
import functools
import hashlib
import mimetypes
import os
import time
from collections import deque
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from mcp_nextcloud.indexer.local.desktop_config import RemotePathError, configured_remote, normalize_remote_path
from mcp_nextcloud.indexer.local.journal import Journal, open_journal
from mcp_nextcloud.indexer.models import FileMeta, FileRecord, ProgressFn, RecordStatus, Root, too_large_reason
from mcp_nextcloud.indexer.jobs.pool import Extracted, ExtractionPool, Extractor, store_outcome
from mcp_nextcloud.indexer.store.index import Index, IndexWriter
from mcp_nextcloud.indexer.store.writer import PathCollision, WriteTx

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def index_one(writer: IndexWriter, root: str, abs_path: str, *, pool: Extractor,
              journal: Journal | None = None, root_rec: Root | None = None) -> FileRecord | None:
    """(Re)index one file now (used by watch); None when it vanished, is ignored or collides."""
    if is_ignored_path(root, abs_path) or not os.path.isfile(abs_path):
        return None
    try:
        st = os.stat(abs_path)
        rec, needs = writer.upsert(file_meta(root, abs_path, st, journal, root_rec))
    except (FileNotFoundError, PathCollision):
        return None
    if not needs:
        return rec
    if st.st_size > pool.limits.max_bytes:
        return writer.call(lambda tx: tx.record_failure(rec.id, RecordStatus.TOO_LARGE,
                                                        too_large_reason(st.st_size, pool.limits.max_bytes)))
    data = _read(abs_path)
    if data is None:
        return None
    digest = content_hash(data)
    try:
        outcome: Extracted | BaseException = pool.submit(data, os.path.basename(abs_path), rec.mime).result()
    except Exception as exc:  # ReaderError and anything else: recorded, never raised
        outcome = exc
    return writer.call(lambda tx: _store_hashed(tx, rec, digest, outcome))


def _store_hashed(tx: WriteTx, rec: FileRecord, digest: str, outcome: Extracted | BaseException) -> FileRecord:
    tx.set_hash(rec.id, digest)  # same commit as the text: they always agree
    return store_outcome(tx, rec, outcome)


class _MoveSources:
    """Records whose file vanished in this run, by (size, mtime): candidates for a move's source."""

    def __init__(self, recs: Iterator[FileRecord]) -> None:
        self._by_stat: dict[tuple[int, float], list[FileRecord]] = {}
        for rec in recs:
            # Only records whose text (or failure) is final and whose bytes were fingerprinted.
            if rec.content_hash and rec.status != RecordStatus.PENDING:
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


def index_folder(index: Index, folder: str | Path, *, pool: Extractor | None = None,
                 progress: ProgressFn | None = None,
                 on_extracted: Callable[[FileRecord], None] | None = None,
                 remote_path: str | None = None) -> IndexReport:
    """Index `folder` recursively into `index`; see the module docstring.

    `remote_path` states which Nextcloud folder a sync folder mirrors ("/Work");
    it wins over the desktop client's config and is remembered for later runs.
    A plain folder (no journal) with `remote_path` raises RemotePathError.
    `progress(done, total, path)` is called as files are dealt with (the CLI
    draws it); `pool` defaults to an ExtractionPool made (and closed) here.
    """
    t0 = time.monotonic()
    root = os.path.abspath(os.fspath(folder))
    if not os.path.isdir(root):
        raise FileNotFoundError(f"{root} is not a folder: give the path of a folder to index")
    from mcp_nextcloud.indexer.store.rescan import requeue_unread_scans

    requeue_unread_scans(index)   # scans extracted without OCR, now that an engine may be here
    writer = index.writer()
    journal = open_journal(root)
    report, root_rec = _open_root(writer, root, journal, remote_path)
    files = list(walk(root))
    report.scanned = len(files)
    ticker = _Ticker(len(files), progress)
    recorded = _record_files(index, writer, root, files, journal, root_rec)
    report.moved, report.unchanged = recorded.moved, recorded.unchanged
    report.warnings.extend(recorded.warnings)
    ticker.step(recorded.unchanged)
    with _own_or_given(pool) as extractor:
        report.extracted, report.failed = _extract_files(writer, extractor, recorded.todo, ticker, on_extracted)
    report.removed = _remove_unseen(index, writer, root_rec, recorded.seen)
    writer.call(lambda tx: _mark_indexed(tx, root_rec, report.journal, root))
    report.seconds = round(time.monotonic() - t0, 3)
    return report


def _mark_indexed(tx: WriteTx, root_rec: Root, journal: str | None, root: str) -> None:
    tx.roots.set_indexed(root_rec.id, journal)
    tx.set_meta("last_indexed_at", f"{time.time():.3f}")
    tx.set_meta("local_root", root)


def _open_root(writer: IndexWriter, root: str, journal: Journal | None,
               remote_path: str | None) -> tuple[IndexReport, Root]:
    """Register the folder as a root; the report that starts with what that said."""
    if remote_path is not None:
        remote_path = normalize_remote_path(remote_path)
        if journal is None:
            raise RemotePathError(
                f"{root} has no Nextcloud sync journal (.sync_*.db), so it is not a desktop-client sync folder and "
                "has no Nextcloud path",
                "index it without --remote-path (it gets its own folder name as its path), or give the sync folder "
                "itself")
    notes: list[str] = []
    journal_name = journal.path.name if journal else None
    root_rec = writer.register_root(root, journal=journal_name, remote=remote_path, configured=configured_remote,
                                    notes=notes)
    report = IndexReport(folder=root, journal=journal_name, path=root_rec.prefix or "/",
                         remote_path=root_rec.remote, remote_path_from=root_rec.remote_from, warnings=notes)
    if root_rec.remote_from == "default":
        report.warnings.append(_default_remote_note(root))
    return report, root_rec


class _Ticker:
    """Counts files dealt with and tells the caller's progress callback."""

    def __init__(self, total: int, progress: ProgressFn | None) -> None:
        self.total, self.done, self.progress = total, 0, progress

    def step(self, n: int = 1, path: str = "") -> None:
        self.done += n
        if self.progress is not None and n:
            self.progress(self.done, self.total, path)


@dataclass
class _Recorded:
    """Phase 1's outcome: what needs extraction, what was seen, and the counts."""

    todo: list[tuple[FileRecord, str, os.stat_result]] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    moved: int = 0
    unchanged: int = 0
    warnings: list[str] = field(default_factory=list)


RECORD_BATCH = 500   # files recorded per writer call (one commit)


def _record_files(index: Index, writer: IndexWriter, root: str, files: list[tuple[str, str, os.stat_result]],
                  journal: Journal | None, root_rec: Root) -> _Recorded:
    """Phase 1: record every file (pending when new or changed); a file whose bytes vanished elsewhere is a move."""
    known = {rec.local_path: rec for rec in index.root_records(root_rec.id)}
    walked = {os.path.abspath(abs_path) for abs_path, _rel, _st in files}
    gone = _MoveSources(rec for lp, rec in known.items() if lp not in walked)
    out = _Recorded()
    plan = []
    for abs_path, _rel, st in files:
        meta = file_meta(root, abs_path, st, journal, root_rec)
        old = known.get(meta.local_path)
        # A new path, or one whose file was replaced (mv b a): maybe a vanished file's bytes (hashed here,
        # not on the writer thread).
        same_stat = old is not None and (old.size, round(old.mtime, 3)) == (meta.size, round(meta.mtime, 3))
        plan.append((meta, abs_path, st, None if same_stat else gone.take(meta)))
    for i in range(0, len(plan), RECORD_BATCH):
        batch = plan[i:i + RECORD_BATCH]
        writer.call(functools.partial(_record_batch, batch=batch, out=out))
    return out


def _record_batch(tx: WriteTx, batch: list[tuple[FileMeta, str, os.stat_result, FileRecord | None]],
                  out: _Recorded) -> None:
    for meta, abs_path, st, source in batch:
        out.seen.add(meta.local_path or abs_path)
        try:
            if source is not None:
                tx.move(source.id, meta, out.warnings)  # same bytes elsewhere: keep the text
                out.moved += 1
                out.unchanged += 1
                continue
            rec, needs = tx.upsert(meta, out.warnings)
        except PathCollision as exc:
            out.warnings.append(exc.reason)
            continue
        if needs:
            out.todo.append((rec, abs_path, st))
        else:
            out.unchanged += 1


def _extract_files(writer: IndexWriter, pool: Extractor, todo: list[tuple[FileRecord, str, os.stat_result]],
                   ticker: _Ticker, on_extracted: Callable[[FileRecord], None] | None) -> tuple[int, int]:
    """Phase 2: extract what changed, storing results as they come back; return (extracted, failed).

    Whatever finished since the last look goes to the writer as one function
    (one savepoint, see IndexWriter), without waiting for it; at most `window`
    files are read and not yet stored, which bounds memory.
    """
    window = max(16, 4 * pool.workers)
    extracting: dict[cf.Future[Extracted], tuple[FileRecord, str]] = {}
    ready: list[_Store | None] = []
    storing: deque[cf.Future[list[FileRecord | None]]] = deque()
    counts = _Counts(ticker, on_extracted)
    with _bulk_if_large(writer, len(todo)):
        for rec, abs_path, st in todo:
            ready.append(_start(pool, rec, abs_path, st, extracting))
            _collect(extracting, ready, block_above=window)
            if any(ready):
                storing.append(writer.submit(_store_all(ready)))
            ready = []
            while storing and (len(storing) > window or storing[0].done()):
                counts.add(storing.popleft().result())
        _collect(extracting, ready, block_above=0)
        storing.append(writer.submit(_store_all(ready)))
        while storing:
            counts.add(storing.popleft().result())
    return counts.extracted, counts.failed


# One file's write: a function of the writer's transaction returning the record as stored (None: nothing).
_Store = Callable[[WriteTx], "FileRecord | None"]
BULK_MIN_FILES = 2000   # a load this large merges FTS segments once at its end (IndexWriter.bulk)


def _bulk_if_large(writer: IndexWriter, n: int) -> Any:
    return writer.bulk() if n >= BULK_MIN_FILES else nullcontext()


def _start(pool: Extractor, rec: FileRecord, abs_path: str, st: os.stat_result,
           extracting: dict[cf.Future[Extracted], tuple[FileRecord, str]]) -> _Store | None:
    """Read one file and start its extraction; a file too large or gone is settled at once (its write returned)."""
    limit = pool.limits.max_bytes
    if st.st_size > limit:
        return lambda tx: tx.record_failure(rec.id, RecordStatus.TOO_LARGE, too_large_reason(st.st_size, limit))
    data = _read(abs_path)
    if data is None:  # deleted since the walk
        return lambda tx: tx.remove(rec.id)
    extracting[pool.submit(data, os.path.basename(abs_path), rec.mime)] = (rec, content_hash(data))
    return None


def _collect(extracting: dict[cf.Future[Extracted], tuple[FileRecord, str]], ready: list[_Store | None], *,
             block_above: int) -> None:
    """Move finished extractions to `ready` (waiting while more than `block_above` are running)."""
    while extracting:
        done, _ = cf.wait(list(extracting), timeout=None if len(extracting) > block_above else 0,
                          return_when=cf.FIRST_COMPLETED)
        if not done:
            return
        for fut in done:
            rec, digest = extracting.pop(fut)
            try:
                outcome: Extracted | BaseException = fut.result()
            except BaseException as exc:  # ReaderError and anything else: recorded, never raised
                outcome = exc
            ready.append(functools.partial(_store_hashed, rec=rec, digest=digest, outcome=outcome))


def _store_all(stores: list[_Store | None]) -> Callable[[WriteTx], list[FileRecord | None]]:
    todo = [s for s in stores if s is not None]
    return lambda tx: [store(tx) for store in todo]


class _Counts:
    """Phase 2's counts, from records as stored; tells the progress callback and `on_extracted`."""

    def __init__(self, ticker: _Ticker, on_extracted: Callable[[FileRecord], None] | None) -> None:
        self.ticker, self.on_extracted = ticker, on_extracted
        self.extracted = self.failed = 0

    def add(self, recs: list[FileRecord | None]) -> None:
        for rec in recs:
            if rec is not None and rec.status == RecordStatus.INDEXED:
                self.extracted += 1
                if self.on_extracted:
                    self.on_extracted(rec)
            elif rec is not None and rec.status != RecordStatus.PENDING:
                self.failed += 1
            self.ticker.step(1, rec.path if rec else "")


def remove_all(tx: WriteTx, ids: list[int]) -> None:
    """Forget these records (a writer function)."""
    for rec_id in ids:
        tx.remove(rec_id)


def _remove_unseen(index: Index, writer: IndexWriter, root_rec: Root, seen: set[str]) -> int:
    """Phase 3: whatever of this folder was not seen is gone (moved records carry their new local path)."""
    gone = [rec.id for rec in index.root_records(root_rec.id) if rec.local_path not in seen]
    if gone:
        writer.call(functools.partial(remove_all, ids=gone))
    return len(gone)


@contextmanager
def _own_or_given(pool: Extractor | None) -> Iterator[Extractor]:
    """The caller's extractor, or an ExtractionPool made and closed here."""
    if pool is not None:
        yield pool
        return
    with ExtractionPool() as own:
        yield own
