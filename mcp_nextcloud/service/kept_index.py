"""The index a long-lived process keeps open across calls while its file is the same one (cli/index.py _open).

The index service (service/daemon.py) keeps one: a grep then pays neither for opening the database nor for
starting its writer, and every call and tool in the service shares that one writer.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp_nextcloud.indexer.index import Index


class KeptIndex:
    """The service's index, open across calls while its file is the same one (cli/index.py _open).

    "The same one": the file at the path has the inode of the one opened. A descriptor of our own keeps that
    inode allocated, so a new file there (`index reset`, then `index add`) cannot get its number back."""

    def __init__(self) -> None:
        self._index: Index | None = None
        self._fd: int | None = None
        self._lock = threading.Lock()    # command lines and serves' tool calls share it

    def open(self, path: Path) -> Index:
        """The open index at path, opened again when the file there is another one; its notes are this call's."""
        with self._lock:
            return self._open(path)

    def _open(self, path: Path) -> Index:
        from mcp_nextcloud.indexer.store.filemodes import secure_database
        from mcp_nextcloud.indexer.index import Index

        st = os.stat(path)
        if self._index is not None and self._fd is not None and _same_file(st, os.fstat(self._fd)):
            self._index.notes = secure_database(path)   # what opening it in its own process would repair
            return self._index
        self._close()
        fd = os.open(path, os.O_RDONLY)  # first: a file replaced after this is reopened by the next call
        try:
            index = Index.open(path.absolute())          # absolute: later calls come from other folders
        except BaseException:
            os.close(fd)
            raise
        self._index, self._fd = index, fd
        return index

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        # The index first: closing a descriptor of a database file drops this process's SQLite locks on it.
        if self._index is not None:
            self._index.close()
        if self._fd is not None:
            os.close(self._fd)
        self._index, self._fd = None, None


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
