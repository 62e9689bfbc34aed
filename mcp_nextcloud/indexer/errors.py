"""The indexer's own refusals, in the parts the one error table uses, and the category of a reader failure.

An `IndexerError` is a request the index cannot take as given (a folder inside
one it holds, two sync folders mirroring one Nextcloud folder, a schema newer
than this program): the person fixes the command or the setup, so its category
is MISUSE and trying again as is never helps. Each subclass keeps the builtin
it has always been (`except ValueError` keeps catching a `PathCollision`) and
names its stable `code`, the name on the wire (the CLI's JSON, the exit code
through the category). `str(err)` is the instruction in the table's plain voice.
"""
from __future__ import annotations

import errno
from enum import Enum
from pathlib import Path

from mcp_nextcloud.nextcloud.errors import PLAIN, STORED, Category, Voice, instruction
from mcp_nextcloud.reader.document import ReaderCode


class IndexCode(Enum):
    """The stable code of an IndexerError; compare by identity, `.value` is the name on the wire."""

    INDEX_REFUSED = "index_refused"
    PATH_COLLISION = "path_collision"
    FOLDER_OVERLAP = "folder_overlap"
    REMOTE_PATH_CONFLICT = "remote_path_conflict"
    SCHEMA_TOO_NEW = "schema_too_new"
    BAD_REMOTE_PATH = "bad_remote_path"
    INDEX_UNUSABLE = "index_unusable"


class IndexerError(Exception):
    """A request the index refuses: `cause`, `action`, a stable `code`, category MISUSE, `retry` False."""

    code = IndexCode.INDEX_REFUSED
    category = Category.MISUSE
    retry = False

    def __init__(self, cause: str, action: str = "") -> None:
        self.cause, self.action = cause, action
        super().__init__(self.render())

    def render(self, voice: Voice = PLAIN) -> str:
        """The instruction in one audience's words: cause, next action, the retry from `retry`."""
        return instruction(self.cause, self.action, self.retry, voice, self.category)

    @property
    def reason(self) -> str:
        """Cause and action without the retry: what a report or a warning keeps."""
        return self.render(STORED)

    def __reduce__(self) -> tuple[type[IndexerError], tuple[str, str]]:
        return type(self), (self.cause, self.action)


def reader_category(code: ReaderCode) -> Category:
    """The table's category of a reader failure (the reader is pure and knows no table): a cap that stopped
    the extraction or a reader bug is a fault on our side; any other refusal is about the file."""
    return Category.FAULT if code.is_fault else Category.REFUSED


class IndexUnusable(IndexerError):
    """The index file cannot be used (damaged, full disk, busy, permissions): the cause and the one step that
    fixes it, the same from every face (the CLI's commands, serve's tools, the team server, the background sync).
    A fault on this machine, not the request's: retrying helps only where the file is busy."""

    code = IndexCode.INDEX_UNUSABLE
    category = Category.FAULT

    def __init__(self, cause: str, action: str = "", retry: bool = False, where: str = "") -> None:
        self.retry, self.where = retry, where    # where: the index file, opened again once it is fixed
        super().__init__(cause, action)

    def line(self) -> str:
        """Cause and step as the one line a command prints (no retry advice: the step says what to do)."""
        return f"{self.cause}. {self.action}" if self.action else self.cause

    def __reduce__(self) -> tuple[type[IndexUnusable], tuple[str, str, bool, str]]:   # type: ignore[override]
        return type(self), (self.cause, self.action, self.retry, self.where)


REBUILD_STEP = ("Move it aside (or pass --index with another path) and run `mcp-nextcloud index sync` to build a "
                "new one (nothing on the server is affected)")


def is_storage_error(exc: BaseException) -> bool:
    """An error of SQLite (apsw's, checked by module: apsw need not be imported) or of the disk under it."""
    return type(exc).__module__ == "apsw" or isinstance(exc, OSError)


def index_unusable(where: Path | str, exc: BaseException) -> IndexUnusable:
    """What an apsw.Error or OSError raised while opening, reading or writing the index at `where` means.

    A full disk leaves the index intact (free space, never move it away); a damaged or foreign file is the
    case for setting it aside and rebuilding; a busy one only needs a moment."""
    name = type(exc).__name__
    if name == "FullError" or (isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)):
        return IndexUnusable(f"the disk holding the index {where} is full; the index is intact (the interrupted "
                             "write was rolled back)", "Free some space, then run the command again", where=str(where))
    if name in ("BusyError", "LockedError"):
        return IndexUnusable(f"the index {where} is busy (another mcp-nextcloud process is writing)",
                             "Wait a moment and run again", retry=True, where=str(where))
    if Path(where).is_dir():
        what = "is a folder, not an index file"
    elif name in ("NotADBError", "CorruptError"):
        what = f"is damaged or not an index (SQLite says: {exc})"
    elif name in ("ReadOnlyError", "PermissionError", "CantOpenError"):
        return IndexUnusable(f"the index {where} cannot be opened for writing ({name}: {exc})",
                             "Check its and its folder's permissions", where=str(where))
    else:
        what = f"could not be used ({name}: {exc})"
    return IndexUnusable(f"the index {where} {what}", REBUILD_STEP, where=str(where))
