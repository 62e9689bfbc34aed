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
from typing import Any, Protocol

from mcp_nextcloud.nextcloud.errors import STORED, ErrorCode, NextcloudError
from mcp_nextcloud.reader.extract import is_light

from mcp_nextcloud.indexer.remote.digest import content_digest
from mcp_nextcloud.indexer.jobs.pool import IN_PROCESS, Extracted, ExtractionPool, Extractor, store_outcome
from mcp_nextcloud.indexer.models import DOWNLOAD_FAILED, FileRecord, RecordStatus
from mcp_nextcloud.indexer.store.writer import IndexWriter

DOWNLOAD_THREADS = 4
INLINE_MIMES = frozenset({"text/plain", "text/markdown", "text/csv", "text/tab-separated-values",
                          "application/json"})
INLINE_MAX_BYTES = 512 * 1024
STORES_IN_FLIGHT = 64   # stores handed to the writer and not yet reported (the writer commits them together)


def inline(rec: FileRecord, data: bytes) -> bool:
    """Cheap, safe formats extracted in this process: decoding costs microseconds, a child ~40 ms.

    The bytes decide, not the name: a `notes.txt` that is really a zip goes to the capped pool.
    """
    return (len(data) <= INLINE_MAX_BYTES and (rec.mime or "").split(";")[0].strip() in INLINE_MIMES
            and is_light(data, posixpath.basename(rec.path), rec.mime))


class FetchSink(Protocol):
    """What a Fetcher reports to (as ripgrep's searcher reports to a Sink): the sync that owns it."""

    def fetched(self, path: str, nbytes: int) -> None:
        """A download completed."""

    def fetch_failed(self, path: str, exc: NextcloudError) -> None:
        """A download failed (it is recorded on the file next); raise to stop the sync (the server is gone)."""

    def stored(self, path: str, rec: FileRecord) -> None:
        """An extraction outcome was stored: `rec` says indexed or failed, and why."""

    def done(self, path: str) -> None:
        """One file is dealt with (progress)."""


class Fetcher:
    """Downloads (threads) and extractions (an Extractor) in flight for one sync."""

    def __init__(self, dav: Any, writer: IndexWriter, sink: FetchSink, *, max_file_bytes: int,
                 pool: Extractor | None = None, threads: int = DOWNLOAD_THREADS) -> None:
        self.dav, self.writer, self.sink, self.max_file_bytes = dav, writer, sink, max_file_bytes
        self._given = pool
        self._own_pool: ExtractionPool | None = None
        self.threads = max(1, threads)
        self._executor = cf.ThreadPoolExecutor(self.threads, thread_name_prefix="sync-download")
        self.downloads: deque[tuple[FileRecord, str, cf.Future[bytes]]] = deque()
        self.extractions: deque[tuple[FileRecord, str, cf.Future[Extracted], str]] = deque()
        self.stores: deque[tuple[str, cf.Future[FileRecord]]] = deque()   # submitted to the writer, not yet reported
        self.owed = False     # a download failed since the last flush: the folder must be revisited

    # -- downloads -------------------------------------------------------------
    def add(self, rec: FileRecord, path: str) -> None:
        """Start downloading a file; completes the oldest downloads beyond the window."""
        self.downloads.append((rec, path, self._executor.submit(_download, self.dav, path, self.max_file_bytes)))
        while len(self.downloads) > self.threads:
            self._complete(*self.downloads.popleft())

    def flush(self) -> bool:
        """Complete every started download; True when none failed since the last flush."""
        while self.downloads:
            self._complete(*self.downloads.popleft())
        owed, self.owed = self.owed, False
        return not owed

    def _complete(self, rec: FileRecord, path: str, fut: cf.Future[bytes]) -> None:
        try:
            data: bytes = fut.result()
        except NextcloudError as exc:
            self.sink.fetch_failed(path, exc)  # may raise: the server is gone
            if exc.code is ErrorCode.TOO_LARGE:        # the server sent more than PROPFIND said
                self.writer.record_failure(rec.id, RecordStatus.TOO_LARGE, exc.render(STORED))
            else:
                self.writer.record_failure(rec.id, RecordStatus.FAILED, DOWNLOAD_FAILED + exc.render(STORED))
                self.owed = True
            self.sink.done(path)
            return
        self.sink.fetched(path, len(data))
        digest = content_digest(data)   # what this version holds: files_write compares it before replacing
        if inline(rec, data):
            self._store(rec, path, IN_PROCESS.submit(data, posixpath.basename(path), rec.mime), digest)
        else:
            pool = self._pool()
            self.extractions.append((rec, path, pool.submit(data, posixpath.basename(path), rec.mime), digest))
            self.drain(keep=2 * pool.workers)
        self.sink.done(path)

    # -- extractions -----------------------------------------------------------
    def _pool(self) -> Extractor:
        if self._given is not None:
            return self._given
        if self._own_pool is None:
            self._own_pool = ExtractionPool()
        return self._own_pool

    def drain(self, keep: int = 0) -> None:
        """Store finished extractions, oldest first, until at most `keep` are in flight.

        With keep=0 every store is also committed and reported before it returns
        (the caller then marks the folder done).
        """
        while len(self.extractions) > keep:
            rec, path, fut, digest = self.extractions.popleft()
            self._store(rec, path, fut, digest)
        self._report_stores(keep=STORES_IN_FLIGHT if keep else 0)

    def _store(self, rec: FileRecord, path: str, extraction: cf.Future[Extracted], digest: str) -> None:
        """Hand an extraction's outcome and the bytes' digest to the writer without waiting; reported once stored."""
        try:
            outcome: Extracted | BaseException = extraction.result()
        except Exception as exc:  # noqa: BLE001 - ReaderError, or a pool failure: costs this one file
            outcome = exc

        def store(tx: Any) -> FileRecord:
            stored = store_outcome(tx, rec, outcome)
            tx.set_hash(rec.id, digest)
            return stored
        self.stores.append((path, self.writer.submit(store)))
        self._report_stores(keep=STORES_IN_FLIGHT)

    def _report_stores(self, keep: int) -> None:
        while self.stores and (len(self.stores) > keep or self.stores[0][1].done()):
            path, fut = self.stores.popleft()
            self.sink.stored(path, fut.result())

    def close(self, *, finish_started: bool = True) -> None:
        """Store what is in flight (so nothing started is lost) unless the sync is failing; release threads."""
        try:
            if finish_started:
                self.flush()
            elif self._own_pool is not None:
                # Failing or interrupted (Ctrl-C): the extractions in hand are not waited for (a big file may
                # take a minute); they end as ExtractionStopped and their files stay pending for the next run.
                self._own_pool.close(wait=False)
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
