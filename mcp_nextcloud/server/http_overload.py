"""Overload on the HTTP transports, answered as such and logged once a minute (serve --http, the team server).

uvicorn's own concurrency limit answers a plain-text "503 Service Unavailable": no JSON-RPC error an MCP client
can show, no Retry-After (issue 53: 200 concurrent tools/call got 110 of them). Here requests past the limit
get a 503 whose body is a JSON-RPC error naming the cause and the limit, with Retry-After; uvicorn's limit stays
above ours as the ceiling for what never reaches the app.

Resource exhaustion is logged once per minute with a count, never per event: asyncio reports every accept()
that fails for want of descriptors (EMFILE) with a traceback, and a server out of files logged 490,305 lines
in 89 s.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from mcp_nextcloud.server.http_auth import Receive, Scope, Send, refusal

RETRY_AFTER_S = 1
LOG_EVERY_S = 60.0
_log = logging.getLogger("mcp_nextcloud.http")


class EveryMinute:
    """A warning logged at most once per LOG_EVERY_S, with how many times it happened since the last line."""

    def __init__(self, what: str, every_s: float = LOG_EVERY_S) -> None:
        self.what, self.every_s = what, every_s
        self.count = 0
        self._logged_at = float("-inf")

    def happened(self, detail: str = "") -> None:
        self.count += 1
        now = time.monotonic()
        if now - self._logged_at >= self.every_s:
            since = "" if self._logged_at == float("-inf") else f" in the last {now - self._logged_at:.0f} s"
            _log.warning("%s: %d time(s)%s%s", self.what, self.count, since, f" ({detail})" if detail else "")
            self.count, self._logged_at = 0, now


def overloaded_body(limit: int) -> bytes:
    """The JSON-RPC error of a refused request (its id is unknown: the body was not read)."""
    parts = refusal("overloaded", f"This server is answering {limit} requests at once, its limit",
                    f"Wait {RETRY_AFTER_S} s (Retry-After) and send the request again", retry=True)
    message = parts.pop("message")
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message, "data": parts}},
                      separators=(",", ":")).encode()


class Overload:
    """ASGI middleware: at most `limit` HTTP requests in the app at once; past it a 503 with Retry-After and a
    JSON-RPC error, at once (a queue would only make every caller wait longer)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit
        self.active = 0                   # one event loop: no lock needed
        self.refused = EveryMinute(f"requests refused over the limit of {limit} at once")
        self._body = overloaded_body(limit)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        if self.active >= self.limit:
            self.refused.happened()
            headers = [(b"content-type", b"application/json"), (b"retry-after", str(RETRY_AFTER_S).encode()),
                       (b"content-length", str(len(self._body)).encode())]
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": self._body})
            return
        self.active += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1


_EXHAUSTED = "socket.accept() out of system resource"


def quiet_exhaustion(loop: asyncio.AbstractEventLoop) -> None:
    """Report the loop's accept() failures for want of resources once a minute with a count (asyncio retries
    the accept itself); every other exception goes to the handler the loop had."""
    previous = loop.get_exception_handler()
    exhausted = EveryMinute("connections not accepted: out of system resources")

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") == _EXHAUSTED:
            exc = context.get("exception")
            exhausted.happened(f"{type(exc).__name__}: {exc}" if exc is not None else "")
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
