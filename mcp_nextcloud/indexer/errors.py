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

from enum import Enum

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
