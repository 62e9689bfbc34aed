"""The HTTP transport's request-body limit, derived from files_write's content cap, and its answer.

One limit: `MAX_WRITE_BYTES` (server/context.py) caps a write's content; a
request carrying that much content as JSON may be up to six times larger
(a control character is escaped as \\u00XX), plus the JSON-RPC envelope. So any
content under the cap reaches files_write, which answers with its own limit,
and a body beyond the transport's limit gets a JSON-RPC error that names the
write cap instead of a plain-text 413.
"""
from __future__ import annotations

import json
from collections import deque
from typing import Any

import anyio

from mcp_nextcloud.server.context import MAX_WRITE_BYTES
from mcp_nextcloud.server.http_auth import Receive, Scope, Send, refusal

ENVELOPE_BYTES = 64 * 1024
MAX_BODY_BYTES = 6 * MAX_WRITE_BYTES + ENVELOPE_BYTES
BODY_SECONDS = 30.0   # a whole body (the largest write's too, on loopback) arrives well within this


def too_large_body(limit: int = MAX_BODY_BYTES) -> bytes:
    """The JSON-RPC error sent for a body over `limit`: what the limit is and what to do."""
    parts = refusal("too_large", f"Request body over {limit} bytes: refused before reading",
                    f"files_write accepts at most {MAX_WRITE_BYTES // (1024 * 1024)} MiB ({MAX_WRITE_BYTES} bytes) "
                    "of content; write a shorter file or split it")
    return _rpc_error(parts)


class BodyLimit:
    """ASGI middleware: bodies over `limit` bytes get 413 with a JSON-RPC error; others are replayed whole."""

    def __init__(self, app: Any, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        for key, value in scope.get("headers") or []:
            if key.lower() == b"content-length" and value.isdigit() and int(value) > self.limit:
                await self._refuse(send)
                return
        messages: deque[dict[str, Any]] = deque()
        size = 0
        with anyio.move_on_after(BODY_SECONDS) as deadline:   # a body that never ends holds no task for long
            while True:
                message = await receive()
                messages.append(message)
                if message.get("type") != "http.request":
                    break
                size += len(message.get("body", b""))
                if size > self.limit:
                    await self._refuse(send)
                    return
                if not message.get("more_body", False):
                    break
        if deadline.cancelled_caught:
            await _send_json(send, 408, _rpc_error(refusal(
                "timeout", f"The request body did not arrive within {BODY_SECONDS:g} s",
                "Send the whole request at once", retry=True)))
            return

        async def replay() -> dict[str, Any]:
            return messages.popleft() if messages else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        await _send_json(send, 413, too_large_body(self.limit))


def _rpc_error(parts: dict[str, Any]) -> bytes:
    message = parts.pop("message")   # JSON-RPC's own field; the parts go in its `data`
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message, "data": parts}},
                      separators=(",", ":")).encode()


async def _send_json(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
