"""Remote sync: keep the index in step with the Nextcloud account over WebDAV.

The walk is the desktop client's: PROPFIND Depth 1 per folder, descending only
into folders whose etag changed since the last sync. Nextcloud propagates a
change's new etag to every ancestor, so an unchanged root etag means nothing
changed and a resync then costs exactly one PROPFIND. A folder's etag is only
remembered once everything in it was processed, so a cancelled, crashed or
partly failed sync revisits exactly the unfinished branches next time.

Files go through the same pipeline as the local source (`index_bytes`); a
file's fileId survives renames, so a move updates the path and keeps the text
(no download); files over the size cap are recorded `too_large` from their
PROPFIND size and never downloaded, and media or archives the reader always
refuses are recorded `unsupported` without a download.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from mcp_nextcloud.nextcloud.errors import STORED, ErrorCode, NextcloudError
from mcp_nextcloud.reader.document import DEFAULT_LIMITS

from mcp_nextcloud.indexer.jobs.pool import Extractor
from mcp_nextcloud.indexer.jobs.store import JobCancelled
from mcp_nextcloud.indexer.models import (DOWNLOAD_FAILED, FileMeta, FileRecord, ProgressFn, RecordStatus,
                                          too_large_reason)
from mcp_nextcloud.indexer.remote import marks
from mcp_nextcloud.indexer.remote.fetch import Fetcher
from mcp_nextcloud.indexer.store import selection as sel
from mcp_nextcloud.indexer.store.index import Index, IndexWriter
from mcp_nextcloud.indexer.store.writer import WriteTx

SOURCE = "remote"
DEFAULT_MAX_FILE_BYTES = DEFAULT_LIMITS.max_bytes
# After this many transport failures in a row the server is gone: stop early
# with its instruction instead of recording every remaining file as failed.
MAX_CONSECUTIVE_TRANSPORT_ERRORS = 5
MAX_REPORTED_FAILURES = 20



class _Job(Protocol):
    """What sync needs from a running job (indexer.jobrun.JobHandle)."""

    def check(self) -> None: ...
    def progress(self, done: int | None = None, total: int | None = None, message: str | None = None,
                 nbytes: int | None = None) -> None: ...


@dataclass
class SyncReport:
    """What one sync did; `requests` is the HTTP requests the client sent (retries included)."""

    folders_visited: int = 0
    propfinds: int = 0
    downloaded: int = 0
    indexed: int = 0
    moved: int = 0
    removed: int = 0
    skipped_too_large: int = 0
    unsupported: int = 0
    unchanged: int = 0
    over_budget: int = 0        # files left unindexed because the index reached its size budget
    failed: int = 0
    bytes_downloaded: int = 0
    seconds: float = 0.0
    requests: int = 0
    cancelled: bool = False
    complete: bool = False
    failures: list[dict[str, str]] = field(default_factory=list)
    budget_folders: list[str] = field(default_factory=list)   # folders with files the budget left out

    def to_dict(self) -> dict[str, Any]:
        """Compact, camelCase form for job results and tool answers."""
        out: dict[str, Any] = {}
        for key, value in asdict(self).items():
            head, *rest = key.split("_")
            out[head + "".join(w.capitalize() for w in rest)] = value
        out["seconds"] = round(self.seconds, 3)
        if self.failed > len(self.failures):
            out["failuresTruncated"] = True
        return out


def sync(client: Any, index: Index, *, pool: Extractor | None = None, root: str = "/",
         max_file_bytes: int = DEFAULT_MAX_FILE_BYTES, job: _Job | None = None,
         progress: ProgressFn | None = None) -> SyncReport:
    """Bring the index in step with the account below `root`; return what was done.

    `pool`: an ExtractionPool to share, or `IN_PROCESS` to extract everything in
    this process; None creates a pool on the first file that needs one (closed
    at the end). Small plain-text files are always extracted in this process
    (cheap, safe).

    Raises NextcloudError when the root cannot be listed or the server stops
    answering (the work done so far is kept); per-file failures are recorded
    on the file and in the report, never raised. A cancel requested through
    `job` stops between files and returns a report with `cancelled=True`.
    """
    from mcp_nextcloud.indexer.store.rescan import requeue_unread_scans

    requeue_unread_scans(index)   # scans extracted without OCR, now that an engine may be here
    syncer = _Syncer(client, index, pool=pool, max_file_bytes=max_file_bytes, job=job, progress=progress)
    return syncer.run(root)


def _norm(path: str) -> str:
    return "/" + path.strip("/")


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def _retryable(rec: FileRecord) -> bool:
    """A record whose content is still owed: pending, or a download that failed last time."""
    return rec.status == RecordStatus.PENDING or rec.download_failed


UNREADABLE_MIME_PREFIXES = ("video/", "audio/")
UNREADABLE_MIMES = frozenset({"application/zip", "application/x-7z-compressed", "application/x-tar",
                              "application/gzip", "application/x-gzip", "application/x-rar-compressed",
                              "application/vnd.rar", "application/x-iso9660-image", "application/x-msdownload"})


def _unreadable(mime: str | None) -> bool:
    """Mime types whose files the reader always refuses (media, archives)."""
    m = (mime or "").split(";")[0].strip().lower()
    return m.startswith(UNREADABLE_MIME_PREFIXES) or m in UNREADABLE_MIMES


def _record_listed(tx: WriteTx, meta: FileMeta, cap: int) -> tuple[FileRecord, str]:
    """Record one listed file (writer thread); what is left to do: "unchanged", "too_large" or "owed"."""
    rec, needs = tx.upsert(meta)
    if not needs and not _retryable(rec):
        return rec, "unchanged"
    if meta.size > cap:
        # Never downloaded: PROPFIND's size is enough to refuse it.
        out = tx.record_failure(rec.id, RecordStatus.TOO_LARGE, too_large_reason(meta.size, cap, downloaded=False))
        return out or rec, "too_large"
    return rec, "owed"


def _child_of(folder: str, path: str) -> str | None:
    """The name of the direct child of `folder` that `path` lies in (or is)."""
    base = folder.rstrip("/") + "/"
    if not path.startswith(base):
        return None
    return path[len(base):].split("/", 1)[0]


class _Syncer:
    """One sync's walk; the FetchSink its Fetcher reports to."""

    def __init__(self, client: Any, index: Index, *, pool: Extractor | None, max_file_bytes: int,
                 job: _Job | None, progress: ProgressFn | None) -> None:
        self.client = client
        self.dav = client.webdav
        self.index = index
        self.writer: IndexWriter = index.writer()
        self.max_file_bytes = max_file_bytes
        self.job = job
        self.progress_fn = progress
        self.report = SyncReport()
        self.missing: dict[int, str] = {}       # rec id -> path no longer seen (removed at the end)
        self.files_done = 0
        self.total = 0
        self.transport_errors = 0
        self.selection = sel.load(index)
        self.fetcher = Fetcher(self.dav, self.writer, self, max_file_bytes=max_file_bytes, pool=pool)

    # -- the walk ----------------------------------------------------------
    def run(self, root: str) -> SyncReport:
        t0 = time.monotonic()
        started = time.time()
        requests0 = getattr(self.client, "request_count", 0)
        root = _norm(root)
        try:
            self._apply_selection()
            folder, children = self._list(root)
            if folder.etag and self.index.folder_etag(root) == folder.etag:
                self.report.complete = True
            else:
                self.total = sum(1 for c in children if not c.is_dir)
                self.report.complete = self._visit(root, folder, children)
                self._remove_missing()
        except JobCancelled:
            self.report.cancelled = True
            self.report.complete = False
            self.fetcher.close()        # files already downloading are stored, not lost
        except BaseException as exc:
            self.fetcher.close(finish_started=False)
            if isinstance(exc, Exception):
                self._record_failure(exc)
            raise
        else:
            self.fetcher.close()
        finally:
            self.report.seconds = time.monotonic() - t0
            self.report.requests = getattr(self.client, "request_count", 0) - requests0
        if not self.report.cancelled:
            self._record_meta(started, whole_account=root == "/")
        return self.report

    def _list(self, path: str) -> tuple[Any, list[Any]]:
        self.report.propfinds += 1
        folder, children = self.dav.list(path)
        return folder, children

    def _visit(self, path: str, folder: Any, children: list[Any]) -> bool:
        """Process one listed folder and the changed folders below it; True when all of it is done."""
        self.report.folders_visited += 1
        complete = True
        dirs = [c for c in children if c.is_dir and _norm(c.path) != path]
        # Files of a folder the selection leaves out are not indexed (its subfolders may still be).
        files = [c for c in children if not c.is_dir] if self.selection.covers(path) else []
        here_files = {_norm(c.path) for c in files}
        here_dirs = {_child_of(path, _norm(c.path)) for c in dirs}
        known: dict[str, FileRecord] = {}
        # What the index holds here that the server no longer lists (removal deferred
        # to the end: a file missing here may reappear elsewhere, as a move).
        for rec in self.index.files_under(path, source=SOURCE):
            name = _child_of(path, rec.path)
            if name is None:
                continue
            direct = _parent(rec.path) == path
            if direct:
                known[rec.path] = rec
            if (direct and rec.path not in here_files) or (not direct and name not in here_dirs):
                self.missing[rec.id] = rec.path
        for gone in self._vanished_folders(path, here_dirs):
            self.writer.set_folder_etag(gone, None)
        try:
            self._files(files, known)
        except JobCancelled:
            self.fetcher.flush()        # what is downloading finishes: the index stays whole
            raise
        complete &= self.fetcher.flush()
        complete &= path not in self.report.budget_folders
        for sub in dirs:
            sub_path = _norm(sub.path)
            if not self.selection.walk_into(sub_path):
                continue        # excluded, or outside every included folder: never listed
            if sub.etag and self.index.folder_etag(sub_path) == sub.etag:
                continue
            self._checkpoint()
            try:
                sub_folder, sub_children = self._list(sub_path)
            except NextcloudError as exc:
                self.transport_failure(exc)
                self.fail(sub_path, exc.render(STORED))
                complete = False
                continue
            self.transport_ok()
            self.total += sum(1 for c in sub_children if not c.is_dir)
            complete &= self._visit(sub_path, sub_folder, sub_children)
        if complete:
            self.fetcher.drain()
            # Only now: a folder whose etag is remembered is one we never need to walk again
            # until something below it changes.
            self.writer.set_folder_etag(path, folder.etag)
        return complete

    def _vanished_folders(self, path: str, here_dirs: set[str | None]) -> list[str]:
        """Remembered folders directly below `path` that the server no longer lists (and their subfolders).

        Forgetting them matters: a folder moved back to its old place keeps its
        etag, and a stale remembered etag would hide its files.
        """
        con = self.index.conn()
        base = path.rstrip("/") + "/"
        rows = con.execute("SELECT path FROM folders WHERE path > ? AND path < ?", (base, base[:-1] + "0"))
        return [p for (p,) in rows if _child_of(path, p) not in here_dirs]

    # -- the files of one folder ---------------------------------------------
    def _files(self, files: list[Any], known: dict[str, FileRecord]) -> None:
        """Record a folder's listed files (one writer call for every one that changed); start the downloads owed."""
        changed: list[tuple[FileMeta, FileRecord | None]] = []
        for item in files:
            path = _norm(item.path)
            old = known.get(path)
            if (old is not None and item.etag and old.etag == item.etag and old.file_id == item.file_id
                    and old.size == int(item.size or 0) and not _retryable(old)):   # size: see tx._unchanged
                # The common case in a changed folder: this sibling did not change. No write at all.
                self.report.unchanged += 1
                self.step(path)
                continue
            meta = FileMeta(path=path, source=SOURCE, file_id=item.file_id, etag=item.etag,
                            size=int(item.size or 0), mtime=float(item.mtime or 0.0), mime=item.mime)
            before = self.index.get_file(file_id=item.file_id) if old is None and item.file_id is not None else None
            changed.append((meta, before))
        if not changed:
            return
        self._checkpoint()
        cap = self.max_file_bytes
        decided = self.writer.call(lambda tx: [_record_listed(tx, meta, cap) for meta, _ in changed])
        for (meta, before), (rec, action) in zip(changed, decided, strict=True):
            self._checkpoint()
            self.missing.pop(rec.id, None)
            if before is not None and before.source == SOURCE and before.path != meta.path and before.id == rec.id:
                self.report.moved += 1
            if action == "owed":
                self._owed(rec, meta)
                continue
            if action == "too_large":
                self.report.skipped_too_large += 1
            else:
                self.report.unchanged += 1
            self.step(meta.path)

    def _owed(self, rec: FileRecord, meta: FileMeta) -> None:
        """A file whose content is new or still owed: download it, unless the budget or its type says no."""
        if self._over_budget():
            # Recorded (so files_grep can say it is known but not indexed), not downloaded.
            self.report.over_budget += 1
            folder = _parent(meta.path)
            if folder not in self.report.budget_folders and len(self.report.budget_folders) < MAX_REPORTED_FAILURES:
                self.report.budget_folders.append(folder)
            self.step(meta.path)
        elif _unreadable(meta.mime):
            # The reader turns down these bytes whatever they hold: downloading them would be waste.
            self.writer.record_failure(
                rec.id, RecordStatus.UNSUPPORTED,
                f"{meta.mime} files hold no text the reader can extract; not downloaded")
            self.report.unsupported += 1
            self.step(meta.path)
        else:
            self.fetcher.add(rec, meta.path)

    # -- what the Fetcher reports (FetchSink) ----------------------------------
    def fetched(self, path: str, nbytes: int) -> None:
        self.transport_ok()
        self.report.downloaded += 1
        self.report.bytes_downloaded += nbytes

    def fetch_failed(self, path: str, exc: NextcloudError) -> None:
        self.transport_failure(exc)         # may re-raise: the server is gone
        if exc.code is ErrorCode.TOO_LARGE:
            self.report.skipped_too_large += 1
        else:
            self.fail(path, DOWNLOAD_FAILED + exc.render(STORED))

    def stored(self, path: str, rec: FileRecord) -> None:
        if rec.status == RecordStatus.INDEXED:
            self.report.indexed += 1
        elif rec.status == RecordStatus.FAILED:
            self.fail(path, rec.reason or "extraction failed")

    def done(self, path: str) -> None:
        self.step(path)

    # -- the selection ---------------------------------------------------------
    def _apply_selection(self) -> None:
        """When the user changed the selection: forget what it no longer covers, and walk it all anew.

        Remembered folder etags only vouch for what was walked with the old
        selection, so they are dropped; files now left out leave the index.
        """
        applied = self.index.get_meta(sel.META_APPLIED)
        if applied == self.selection.to_json() or (applied is None and self.selection.whole_account):
            return
        for rec in self.index.files_under("/", source=SOURCE):
            if not self.selection.covers(rec.path):
                self.writer.remove(rec.id)
                self.report.removed += 1
        self.writer.clear_folder_etags()
        self.writer.set_meta(sel.META_APPLIED, self.selection.to_json())

    def _over_budget(self) -> bool:
        budget = self.selection.max_index_bytes
        return budget is not None and sel.index_bytes(self.index) >= budget

    # -- bookkeeping ---------------------------------------------------------
    def transport_ok(self) -> None:
        self.transport_errors = 0

    def transport_failure(self, exc: NextcloudError) -> None:
        """Count transport failures in a row; re-raise when the server is clearly gone."""
        if exc.code in (ErrorCode.AUTH, ErrorCode.NO_CREDENTIALS):
            raise exc
        if exc.code.transport:
            self.transport_errors += 1
            if self.transport_errors >= MAX_CONSECUTIVE_TRANSPORT_ERRORS:
                raise exc
        else:
            self.transport_errors = 0

    def fail(self, path: str, reason: str) -> None:
        self.report.failed += 1
        if len(self.report.failures) < MAX_REPORTED_FAILURES:
            self.report.failures.append({"path": path, "reason": reason})

    def step(self, path: str) -> None:
        self.files_done += 1
        if self.job is not None:
            self.job.progress(done=self.files_done, total=self.total, message=path,
                              nbytes=self.report.bytes_downloaded)
        if self.progress_fn is not None:
            self.progress_fn(self.files_done, self.total, path)

    def _checkpoint(self) -> None:
        """A safe point between files: honour a cancel request here."""
        if self.job is not None:
            self.job.check()

    def _remove_missing(self) -> None:
        for rec_id, old_path in self.missing.items():
            rec = self.index.get_by_id(rec_id)
            # Still at the old path = really gone (a moved file's record now has its new path).
            if rec is not None and rec.path == old_path and rec.source == SOURCE:
                self.writer.remove(rec_id)
                self.report.removed += 1
        self.missing.clear()

    def _record_meta(self, started: float, *, whole_account: bool) -> None:
        """Record when this sync ran (see `indexer.remote.marks.record`)."""
        marks.record(self.writer, started=started, finished=time.time(), report=self.report.to_dict(),
                     whole_account=whole_account, complete=self.report.complete)
        marks.record_account(self.writer, getattr(self.client, "account", None))

    def _record_failure(self, exc: Exception) -> None:
        """Remember why this sync stopped (the error table's kind and instruction); never masks the error."""
        try:
            marks.record_failure(self.writer, exc, at=time.time())
            marks.record_account(self.writer, getattr(self.client, "account", None))
        except Exception:  # noqa: BLE001 - the sync's own error is the one to report
            pass
