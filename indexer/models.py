"""The indexer's records: what the index knows about one file.

`FileMeta` is what a source (local folder, journal, remote PROPFIND) says about a
file; `FileRecord` adds what the index made of it (status, reason, engine).
"""
from __future__ import annotations

from dataclasses import dataclass

STATUSES = ("indexed", "pending", "too_large", "unsupported", "failed")


@dataclass
class FileMeta:
    """A file as a source describes it, before any extraction."""

    path: str                 # the handle tools show: "/" + path relative to the account (or local folder) root
    source: str               # "local" or "remote"
    file_id: int | None       # Nextcloud fileId when known (remote, or local with a sync journal)
    etag: str | None
    size: int
    mtime: float              # unix seconds
    mime: str | None
    local_path: str | None = None


@dataclass
class FileRecord(FileMeta):
    """A file as the index holds it: its metadata plus the outcome of extraction."""

    id: int = 0               # rowid
    kind: str | None = None
    status: str = "pending"   # indexed | pending | too_large | unsupported | failed
    reason: str | None = None
    engine: str | None = None
    indexed_at: float | None = None
