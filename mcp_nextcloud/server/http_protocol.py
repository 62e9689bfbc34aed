"""The HTTP transport's connection protocol: uvicorn's h11 protocol with a deadline on the request head.

uvicorn bounds the idle time between two requests (keep-alive) but not the time a client takes to send a
request's head: a client that connects and sends its headers a byte at a time, or never finishes them,
holds one of the `limit_concurrency` slots forever, and 64 of them lock every host out. Here a request head
(request line and headers) must be complete within `HEAD_SECONDS` of the connection or of its first byte
after a response; otherwise the connection gets a 408 and is closed. The body has its own deadline
(http_limits.BODY_SECONDS), checked once the token has been.
"""
from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_SECONDS = 10.0   # a request head is a few hundred bytes: any live client sends it within this
_TIMEOUT_TEXT = f"The request head did not arrive within {HEAD_SECONDS:g} s: send it in one go.\r\n".encode()
_TIMEOUT_ANSWER = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                   b"connection: close\r\ncontent-length: %d\r\n\r\n" % len(_TIMEOUT_TEXT)) + _TIMEOUT_TEXT


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
