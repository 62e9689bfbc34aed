"""One caller's connection to the index service: frames out (thread-safe), stdin on demand, hang-up watched.

A request's output streams are text streams whose writes become frames to the caller; its stdin is read from
the caller, all at once, the first time the command reads it. A watcher notices the caller hanging up (Ctrl-C,
a killed process, `| head`) and sets the request's CancelToken; the work stops at its next safe point.
"""
from __future__ import annotations

import contextlib
import io
import select
import socket
import threading
from collections.abc import Iterator

from mcp_nextcloud.service.client import (DECLINED, ERR, EXIT, OUT, REPEATABLE, STDIN, Frames, ServiceGone, netstring,
                                          unpack)
from mcp_nextcloud.service.requests import Cancelled, CancelToken

SMALL_REQUEST = 1 << 20   # a command line; a tool call may be larger (_request_limit)


def _request_limit() -> int:
    """The largest request: a tool call as large as serve's HTTP transport takes (files_write near its cap).
    Imported only for a large request: a command line's service never loads the tool stack for it."""
    from mcp_nextcloud.server.http_limits import MAX_BODY_BYTES

    return MAX_BODY_BYTES


class Connection:
    """A caller's connection: the Channel a handler answers through (service/requests.py)."""

    def __init__(self, sock: socket.socket, ttys: str = "000") -> None:
        self.sock = sock
        self.frames = Frames(sock)
        self._lock = threading.Lock()
        self.gone = False
        self.cancel: CancelToken | None = None
        self.set_ttys(ttys)

    def set_ttys(self, ttys: str) -> None:
        """Whether the caller's stdin, stdout and stderr are terminals (progress bars draw only on one)."""
        self.out = _Output(self, OUT, ttys[1:2] == "1")
        self.err = _Output(self, ERR, ttys[2:3] == "1")
        self.inp = _CallerStdin(self, ttys[:1] == "1")

    # -- frames out --
    def send(self, tag: bytes, data: bytes) -> None:
        with self._lock:
            if self.gone:
                return
            try:
                self.sock.sendall(tag + netstring(data))
            except OSError:
                self.gone = True     # the caller went away: the request is cancelled (see watching)
                if self.cancel is not None:
                    self.cancel.cancel()

    def answer(self, payload: bytes) -> None:
        self.send(EXIT, payload)

    def exit(self, code: int) -> None:
        self.send(EXIT, str(code).encode())

    def repeatable(self) -> None:
        """Tell the caller the request is a read: asked again of a new service if this one ends during it."""
        self.send(REPEATABLE, b"")

    def decline(self, why: str) -> None:
        self.send(DECLINED, why.encode("utf-8", "replace"))

    # -- frames in --
    def read_request(self) -> list[str]:
        data = self._read_netstring()
        if len(data) > SMALL_REQUEST and len(data) > _request_limit():
            raise ValueError("request too large")
        return unpack(data)

    def ask_stdin(self) -> bytes:
        self.send(STDIN, b"")
        return self._read_netstring()

    def _read_netstring(self) -> bytes:
        frames = self.frames
        frames.buf = b"_" + frames.buf     # a netstring without a tag: read it as one with a dummy tag
        try:
            return frames.read()[1]
        except ServiceGone:
            return b""

    def wait_closed(self) -> None:
        """Block until the caller closes its end (an attached serve)."""
        self.sock.settimeout(None)
        while self.sock.recv(1 << 10):
            pass

    # -- hang-up --
    @contextlib.contextmanager
    def watching(self) -> Iterator[CancelToken]:
        """A CancelToken for the request, set when the caller hangs up while it runs."""
        token = self.cancel = CancelToken()
        done = threading.Event()
        watcher = threading.Thread(target=self._watch, args=(token, done), name="hangup", daemon=True)
        watcher.start()
        try:
            yield token
        finally:
            done.set()
            watcher.join(1.0)   # before the socket closes: select never sees a closed descriptor

    def _watch(self, token: CancelToken, done: threading.Event) -> None:
        # poll, not select: select refuses a descriptor numbered past 1023 (ValueError), which read as a hang-up
        # and dropped the answer; a service hosting a team holds that many (each person's index, logs, sockets).
        poller = select.poll()
        poller.register(self.sock, select.POLLIN | select.POLLPRI)
        while not done.is_set():
            try:
                readable = poller.poll(200)
                if not readable or done.is_set():
                    continue
                peeked = self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            except BlockingIOError:
                continue
            except (OSError, ValueError):
                peeked = b""
            if peeked:                       # the caller's stdin, for the command to read
                done.wait(0.05)
                continue
            self.gone = True
            token.cancel()
            return

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class _Output(io.TextIOBase):
    """One request's stdout or stderr: each write goes to the caller as a frame."""

    def __init__(self, conn: Connection, tag: bytes, tty: bool) -> None:
        self._conn, self._tag, self._tty = conn, tag, tty

    def write(self, text: str) -> int:
        if self._conn.cancel is not None and self._conn.cancel.cancelled:
            raise Cancelled()            # nobody reads any more: a write is a safe point to stop
        if text:
            self._conn.send(self._tag, text.encode("utf-8", "surrogateescape"))
        return len(text)

    def isatty(self) -> bool:
        return self._tty

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:   # type: ignore[override]
        return "utf-8"


class _CallerStdin(io.TextIOBase):
    """One request's stdin: read from the caller, all at once, the first time the command reads it."""

    def __init__(self, conn: Connection, tty: bool) -> None:
        self._conn, self._tty = conn, tty
        self._data: io.BytesIO | None = None
        self.buffer = _LazyBytes(self)

    def raw(self) -> io.BytesIO:
        if self._data is None:
            self._data = io.BytesIO(self._conn.ask_stdin())
        return self._data

    def read(self, size: int | None = -1) -> str:
        return self.raw().read(-1 if size is None else size).decode("utf-8", "surrogateescape")

    def readline(self, size: int | None = -1) -> str:   # type: ignore[override]
        return self.raw().readline(-1 if size is None else size).decode("utf-8", "surrogateescape")

    def isatty(self) -> bool:
        return self._tty

    def readable(self) -> bool:
        return True


class _LazyBytes:
    def __init__(self, owner: _CallerStdin) -> None:
        self._owner = owner

    def read(self, size: int = -1) -> bytes:
        return self._owner.raw().read(size)

    def readline(self, size: int = -1) -> bytes:
        return self._owner.raw().readline(size)
