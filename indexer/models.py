"""The indexer's records: what the index knows about one file.

`FileMeta` is what a source (local folder, journal, remote PROPFIND) says about a
file; `FileRecord` adds what the index made of it (status, reason, engine).
Plain classes, not dataclasses: every CLI grep imports them (see
reader/document.py).
"""
from __future__ import annotations

import time

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Callable

    # progress(done, total, current path): how indexing and sync report progress; only the CLI draws it.
    ProgressFn = Callable[[int, int, str], None]

STATUSES = ("indexed", "pending", "too_large", "unsupported", "failed")

# The reason of a failed record whose *download* failed (status "failed"): unlike an extraction
# failure (kept until the file changes), a failed download is retried at the next sync or read.
DOWNLOAD_FAILED = "download failed: "


def too_large_reason(size: int, limit: int, *, downloaded: bool = True) -> str:
    """The one reason recorded for a file over the extraction size cap (local or remote, before or after download)."""
    where = "" if downloaded else "; not downloaded"
    return (f"{size} bytes is above the {limit}-byte extraction limit{where}; it is listed but not searchable; "
            "do not retry")


def iso_time(ts: float | None) -> str | None:
    """Unix seconds -> ISO-8601 UTC with seconds ("2025-01-31T09:30:00Z"), the one format shown; None stays None."""
    if ts is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(ts)))


class FileMeta:
    """A file as a source describes it, before any extraction."""

    def __init__(self, path: str, source: str, file_id: int | None, etag: str | None, size: int, mtime: float,
                 mime: str | None, local_path: str | None = None, root_id: int | None = None) -> None:
        self.path = path              # the handle tools show: "/" + path relative to the account (or local folder) root
        self.source = source          # "local" or "remote"
        self.file_id = file_id        # Nextcloud fileId when known (remote, or local with a sync journal)
        self.etag = etag
        self.size = size
        self.mtime = mtime            # unix seconds
        self.mime = mime
        self.local_path = local_path
        self.root_id = root_id        # the local folder (roots row) the file is in; None for remote files

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class FileRecord(FileMeta):
    """A file as the index holds it: its metadata plus the outcome of extraction."""

    def __init__(self, path: str, source: str, file_id: int | None, etag: str | None, size: int, mtime: float,
                 mime: str | None, local_path: str | None = None, root_id: int | None = None, id: int = 0,
                 kind: str | None = None, status: str = "pending", reason: str | None = None,
                 engine: str | None = None, indexed_at: float | None = None, content_hash: str | None = None,
                 ) -> None:
        super().__init__(path, source, file_id, etag, size, mtime, mime, local_path, root_id)
        self.id = id                  # rowid
        self.kind = kind
        self.status = status          # indexed | pending | too_large | unsupported | failed
        self.reason = reason
        self.engine = engine
        self.indexed_at = indexed_at
        self.content_hash = content_hash   # blake2b of the bytes last extracted (local files): recognises moves

    @property
    def download_failed(self) -> bool:
        """The last attempt failed to download (not to extract) this file: worth another try."""
        return self.status == "failed" and (self.reason or "").startswith(DOWNLOAD_FAILED)


class Root:
    """A local folder indexed into the database and the prefix its files' paths carry.

    A plain folder's prefix is "" (the first folder) or a unique "/<name>". A
    desktop-client sync folder (one with a journal) mirrors a Nextcloud folder
    (`remote`, "/" or "/Work") and its prefix is that folder, so its files'
    paths are their Nextcloud paths.
    """

    def __init__(self, id: int, folder: str, prefix: str, journal: str | None, added_at: float,
                 indexed_at: float | None, remote: str | None = None, remote_from: str | None = None) -> None:
        self.id = id
        self.folder = folder          # absolute path of the folder on this machine
        self.prefix = prefix          # "" (paths are "/" + relative path), "/<name>" or the remote folder of a sync one
        self.journal = journal        # file name of its desktop-client sync journal, when it is a sync folder
        self.added_at = added_at
        self.indexed_at = indexed_at
        self.remote = remote          # the Nextcloud folder a sync folder mirrors ("/", "/Work"); None when plain
        self.remote_from = remote_from   # where `remote` came from: "option", "config" or "default"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Root) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"Root(id={self.id}, folder={self.folder!r}, prefix={self.prefix!r}, remote={self.remote!r})"

    @property
    def is_sync(self) -> bool:
        """True when the folder's paths are Nextcloud paths (a journal-backed sync folder)."""
        return self.remote is not None

    def path_for(self, rel: str) -> str:
        """The visible path of a file at `rel` ('/'-separated, relative to the folder)."""
        return self.prefix + "/" + rel.strip("/")

    def to_dict(self) -> dict:
        d = {"folder": self.folder, "path": self.prefix or "/", "journal": self.journal,
             "addedAt": self.added_at, "lastIndexedAt": self.indexed_at}
        if self.remote is not None:
            d["remotePath"] = self.remote
            d["remotePathFrom"] = self.remote_from
        return d
