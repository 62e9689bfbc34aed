"""The HTTP transports' connections (serve --http and the team server): their listening socket, uvicorn's
settings, and uvicorn's h11 protocol with a deadline on the request head.

The socket is made with protocol IPPROTO_TCP: asyncio sets TCP_NODELAY only on accepted sockets whose protocol
says TCP, and an accepted socket inherits the listening one's (0 for `socket.socket(AF_INET, SOCK_STREAM)`).
Without TCP_NODELAY a response written in pieces (headers, then the streamed body) waits for the client's
delayed ACK: about 40 ms per call on a kept-alive connection (benchmarks/test_http_overhead_bench.py).

uvicorn bounds the idle time between two requests (keep-alive) but not the time a client takes to send a
request's head: a client that connects and sends its headers a byte at a time, or never finishes them,
holds its connection (a descriptor of this process) forever, and enough of them exhaust the process's open
files. Here a request head
(request line and headers) must be complete within `HEAD_SECONDS` of the connection or of its first byte
after a response; otherwise the connection gets a 408 and is closed. The body has its own deadline
(http_limits.BODY_SECONDS), checked once the token has been.
"""
from __future__ import annotations

import asyncio
import socket
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_SECONDS = 10.0   # a request head is a few hundred bytes: any live client sends it within this
_TIMEOUT_TEXT = f"The request head did not arrive within {HEAD_SECONDS:g} s: send it in one go.\r\n".encode()
_TIMEOUT_ANSWER = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                   b"connection: close\r\ncontent-length: %d\r\n\r\n" % len(_TIMEOUT_TEXT)) + _TIMEOUT_TEXT


def listening_socket(port: int) -> socket.socket:
    """A TCP socket bound to 127.0.0.1:port, not yet listening; OSError when the port cannot be had."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)   # IPPROTO_TCP: see above
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does; a listening port still fails
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited by accepted sockets where the OS does
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    return sock


def http_server(app: Any, *, connections: int, **options: Any) -> Any:
    """The uvicorn.Server both transports run (`.run(sockets=[listening_socket(...)])`): quiet, idle kept
    connections closed after 5 s, at most `connections` requests at once (past it a JSON-RPC error with
    Retry-After at once instead of a queue: server/http_overload.py), every request head under HEAD_SECONDS, and
    running out of descriptors logged once a minute. `options`: more uvicorn.Config settings."""
    import uvicorn

    from mcp_nextcloud.server.http_overload import Overload, quiet_exhaustion

    class Server(uvicorn.Server):
        async def serve(self, sockets: Any = None) -> None:
            quiet_exhaustion(asyncio.get_running_loop())
            await super().serve(sockets)

    # No uvicorn limit: it counts open connections, not requests, and answers past it with a plain-text 503 and
    # a log line each. Connections without a request are bounded by the head deadline and the keep-alive.
    return Server(uvicorn.Config(Overload(app, connections), host="127.0.0.1", log_level="warning",
                                 timeout_keep_alive=5, limit_concurrency=None, http=HeadDeadlineProtocol, **options))


class HeadDeadlineProtocol(H11Protocol):
    """H11Protocol that closes a connection whose request head is not complete within HEAD_SECONDS."""

    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            if self._head_timer is None:   # the first byte of a next request on a kept-alive connection
                self._arm()
        else:
            self._disarm()   # the head is complete: the body's and the tool's own deadlines take over

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(HEAD_SECONDS, self._head_timeout)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timeout(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.write(_TIMEOUT_ANSWER)
            self.transport.close()
