"""One SQLite connection per live thread, closed when its thread ends (the index's readers, the jobs store).

Threads that use a connection are not all long-lived: the MCP SDK runs a synchronous tool in an anyio worker
thread, and a fresh event loop per call (the index service, the CLI) starts a fresh worker for every call.
A connection kept "for this thread" in a list until the index closes was one database and one WAL descriptor
per call, never given back (issue 53: 100 files_grep through `serve` took the service from 22 to 227 open
files). Here a connection lives exactly as long as the thread that opened it: it is closed when the thread
ends (the thread's local storage is released), and any that outlived a dead thread are closed before a new
one is opened, so the open connections never exceed the threads alive.
"""
from __future__ import annotations

import itertools
import threading
import weakref
from typing import Callable

import apsw

Opener = Callable[[], apsw.Connection]


class _Lease:
    """Held in the thread's local storage only: released with it when the thread ends, closing the connection."""

    __slots__ = ("con", "key", "owner")

    def __init__(self, con: apsw.Connection, key: int, owner: "weakref.ReferenceType[ThreadConnections]") -> None:
        self.con, self.key, self.owner = con, key, owner

    def __del__(self) -> None:
        owner = self.owner()
        if owner is not None:
            owner._forget(self.key)
        _close(self.con)


class ThreadConnections:
    """The calling thread's connection (opened on first use by `opener`); every one closed by `close_all`."""

    def __init__(self, opener: Opener) -> None:
        self._opener = opener
        self._local = threading.local()
        self._lock = threading.Lock()
        self._keys = itertools.count()
        # Not the leases themselves: a reference here would keep them from going with their thread.
        self._open: dict[int, tuple[apsw.Connection, threading.Thread]] = {}

    def get(self) -> apsw.Connection:
        lease: _Lease | None = getattr(self._local, "lease", None)
        if lease is not None:
            return lease.con
        con = self._opener()
        with self._lock:
            orphans = [key for key, (_, thread) in self._open.items() if not thread.is_alive()]
            stale = [self._open.pop(key)[0] for key in orphans]
            key = next(self._keys)
            self._open[key] = (con, threading.current_thread())
        for old in stale:   # a thread that ended without its local storage being released (yet)
            _close(old)
        self._local.lease = _Lease(con, key, weakref.ref(self))
        return con

    def release(self) -> None:
        """Close the calling thread's connection now (the next `get` in this thread opens another)."""
        lease = getattr(self._local, "lease", None)
        if lease is not None:
            self._local.lease = None    # the lease goes: it forgets and closes its connection

    def open_count(self) -> int:
        """Connections open now (at most one per live thread that used this)."""
        with self._lock:
            return len(self._open)

    def close_all(self) -> None:
        with self._lock:
            cons, self._open = [con for con, _ in self._open.values()], {}
        for con in cons:
            _close(con)

    def _forget(self, key: int) -> None:
        with self._lock:
            self._open.pop(key, None)


def _close(con: apsw.Connection) -> None:
    """Close, also with statements still open (their thread is gone, or the owner is closing)."""
    try:
        con.close(True)
    except apsw.Error:
        pass
