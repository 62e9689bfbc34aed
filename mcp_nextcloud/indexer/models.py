"""The indexer's records: what the index knows about one file.

`FileMeta` is what a source (local folder, journal, remote PROPFIND) says about a
file; `FileRecord` adds what the index made of it (status, reason, engine).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Callable

# progress(done, total, current path): how indexing and sync report progress; only the CLI draws it.
ProgressFn = Callable[[int, int, str], None]



class RecordStatus(StrEnum):
    """A file record's status (files.status): the text the database and the answers hold, so it compares equal to it."""

    INDEXED = "indexed"
    PENDING = "pending"
    TOO_LARGE = "too_large"
    UNSUPPORTED = "unsupported"
    FAILED = "failed"


# The reason of a failed record whose *download* failed (status "failed"): unlike an extraction
# failure (kept until the file changes), a failed download is retried at the next sync or read.
DOWNLOAD_FAILED = "download failed: "


def too_large_reason(size: int, limit: int, *, downloaded: bool = True) -> str:
    """The one reason recorded for a file over the extraction size cap (local or remote, before or after download)."""
    where = "" if downloaded else "; not downloaded"
    return f"{size} bytes is above the {limit}-byte extraction limit{where}; it is listed but not searchable"


def iso_time(ts: float | None) -> str | None:
    """Unix seconds -> ISO-8601 UTC with seconds ("2025-01-31T09:30:00Z"), the one format shown; None stays None."""
    if ts is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(ts)))


@dataclass
class FileMeta:
    """A file as a source describes it, before any extraction."""

    path: str                      # the handle tools show: "/" + path relative to the account (or local folder) root
    source: str                    # "local" or "remote"
    file_id: int | None            # Nextcloud fileId when known (remote, or local with a sync journal)
    etag: str | None
    size: int
    mtime: float                   # unix seconds
    mime: str | None
    local_path: str | None = None
    root_id: int | None = None     # the local folder (roots row) the file is in; None for remote files


@dataclass
class FileRecord(FileMeta):
    """A file as the index holds it: its metadata plus the outcome of extraction."""

    id: int = 0                    # rowid
    kind: str | None = None
    status: str = "pending"        # a RecordStatus, as the database holds it
    reason: str | None = None
    engine: str | None = None
    indexed_at: float | None = None
    content_hash: str | None = None   # blake2b of the bytes last extracted (local files): recognises moves

    @property
    def download_failed(self) -> bool:
        """The last attempt failed to download (not to extract) this file: worth another try."""
        return self.status == RecordStatus.FAILED and (self.reason or "").startswith(DOWNLOAD_FAILED)


@dataclass
class Root:
    """A local folder indexed into the database and the prefix its files' paths carry.

    A plain folder's prefix is "" (the first folder) or a unique "/<name>". A
    desktop-client sync folder (one with a journal) mirrors a Nextcloud folder
    (`remote`, "/" or "/Work") and its prefix is that folder, so its files'
    paths are their Nextcloud paths.
    """

    id: int
    folder: str                    # absolute path of the folder on this machine
    prefix: str                    # "" (paths are "/" + relative path), "/<name>" or the remote folder of a sync one
    journal: str | None            # file name of its desktop-client sync journal, when it is a sync folder
    added_at: float
    indexed_at: float | None
    remote: str | None = None      # the Nextcloud folder a sync folder mirrors ("/", "/Work"); None when plain
    remote_from: str | None = None   # where `remote` came from: "option", "config" or "default"

    @property
    def is_sync(self) -> bool:
        """True when the folder's paths are Nextcloud paths (a journal-backed sync folder)."""
        return self.remote is not None

    def path_for(self, rel: str) -> str:
        """The visible path of a file at `rel` ('/'-separated, relative to the folder)."""
        return self.prefix + "/" + rel.strip("/")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"folder": self.folder, "path": self.prefix or "/", "journal": self.journal,
             "addedAt": self.added_at, "lastIndexedAt": self.indexed_at}
        if self.remote is not None:
            d["remotePath"] = self.remote
            d["remotePathFrom"] = self.remote_from
        return d
