"""Downloading and extracting the files a remote sync decided it needs, with bounded overlap.

A few downloads run at once in threads (latency, not bandwidth, dominates a
tree of small files), while this thread stores results in listing order;
heavy formats go to the ExtractionPool and are stored as they finish. Every
window is bounded, so memory stays within a few files of the size cap.
"""
from __future__ import annotations

import concurrent.futures as cf
import io
import posixpath
from collections import deque
from typing import TYPE_CHECKING, Any

from nextcloud.errors import NextcloudError
from reader.document import ReaderError

from indexer.models import DOWNLOAD_FAILED, FileRecord
from indexer.jobs.pool import ExtractionPool, finish, index_bytes

if TYPE_CHECKING:  # pragma: no cover
    from indexer.remote.sync import _Syncer

DOWNLOAD_THREADS = 4
INLINE_MIMES = frozenset({"text/plain", "text/markdown", "text/csv", "text/tab-separated-values",
                          "application/json"})
INLINE_MAX_BYTES = 512 * 1024


def inline(rec: FileRecord, data: bytes) -> bool:
    """Cheap, safe formats extracted in this process: decoding costs microseconds, a child ~40 ms.

    The bytes decide, not the name: a `notes.txt` that is really a zip goes to the capped pool.
    """
    from reader.extract import is_light

    return (len(data) <= INLINE_MAX_BYTES and (rec.mime or "").split(";")[0].strip() in INLINE_MIMES
            and is_light(data, posixpath.basename(rec.path), rec.mime))


class Fetcher:
    """Downloads (threads) and extractions (pool) in flight for one sync."""

    def __init__(self, owner: "_Syncer", *, pool: Any, threads: int = DOWNLOAD_THREADS) -> None:
        self.owner = owner
        self.pool = pool
        self._own_pool: ExtractionPool | None = None
        self.threads = max(1, threads)
        self._executor = cf.ThreadPoolExecutor(self.threads, thread_name_prefix="sync-download")
        self.downloads: deque[tuple[FileRecord, str, cf.Future]] = deque()
        self.extractions: deque[tuple[FileRecord, str, cf.Future]] = deque()
        self.owed = False     # a download failed since the last flush: the folder must be revisited

    # -- downloads -------------------------------------------------------------
    def add(self, rec: FileRecord, path: str) -> None:
        """Start downloading a file; completes the oldest downloads beyond the window."""
        dav, cap = self.owner.dav, self.owner.max_file_bytes
        self.downloads.append((rec, path, self._executor.submit(_download, dav, path, cap)))
        while len(self.downloads) > self.threads:
            self._complete(*self.downloads.popleft())

    def flush(self) -> bool:
        """Complete every started download; True when none failed since the last flush."""
        while self.downloads:
            self._complete(*self.downloads.popleft())
        owed, self.owed = self.owed, False
        return not owed

    def _complete(self, rec: FileRecord, path: str, fut: cf.Future) -> None:
        owner = self.owner
        try:
            data: bytes = fut.result()
        except NextcloudError as exc:
            owner.transport_failure(exc)       # may re-raise: the server is gone
            if exc.kind == "too_large":        # the server sent more than PROPFIND said
                owner.writer.record_failure(rec.id, "too_large", str(exc))
                owner.report.skipped_too_large += 1
            else:
                owner.writer.record_failure(rec.id, "failed", DOWNLOAD_FAILED + str(exc))
                owner.fail(path, DOWNLOAD_FAILED + str(exc))
                self.owed = True
            owner.step(path)
            return
        owner.transport_ok()
        owner.report.downloaded += 1
        owner.report.bytes_downloaded += len(data)
        if self.pool is False or inline(rec, data):
            self._account(path, index_bytes(owner.writer, rec, data, pool=None))
        else:
            fut2 = self._pool().submit(data, posixpath.basename(path), rec.mime)
            self.extractions.append((rec, path, fut2))
            self.drain(keep=2 * getattr(self.pool, "workers", 1))
        owner.step(path)

    # -- extractions -----------------------------------------------------------
    def _pool(self) -> ExtractionPool:
        if self.pool is None:
            self.pool = self._own_pool = ExtractionPool()
        return self.pool

    def drain(self, keep: int = 0) -> None:
        """Store finished extractions, oldest first, until at most `keep` are in flight."""
        while len(self.extractions) > keep:
            rec, path, fut = self.extractions.popleft()
            try:
                outcome: Any = fut.result()
            except ReaderError as exc:
                outcome = exc
            except Exception as exc:  # noqa: BLE001 - a pool failure costs this one file
                outcome = exc
            self._account(path, finish(self.owner.writer, rec, outcome))

    def _account(self, path: str, out: FileRecord) -> None:
        if out.status == "indexed":
            self.owner.report.indexed += 1
        elif out.status == "failed":
            self.owner.fail(path, out.reason or "extraction failed")

    def close(self, *, finish_started: bool = True) -> None:
        """Store what is in flight (so nothing started is lost) unless the sync is failing; release threads."""
        try:
            if finish_started:
                self.flush()
            self.drain()
        finally:
            for _, _, fut in self.downloads:
                fut.cancel()
            self._executor.shutdown(wait=True, cancel_futures=True)
            if self._own_pool is not None:
                self._own_pool.close()


def _download(dav: Any, path: str, max_bytes: int) -> bytes:
    """Streamed GET into memory, bounded by the size cap (runs in a download thread)."""
    buf = io.BytesIO()
    dav.download(path, buf, max_bytes=max_bytes)
    return buf.getvalue()
