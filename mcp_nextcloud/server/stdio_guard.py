"""serve's stdio transport, with an answer for the one request the SDK's reader drops unanswered.

A JSON string may escape a lone surrogate ("\\ud800"): valid JSON, but no Unicode text. The SDK parses each
line with pydantic, which refuses it, and passes the error on without the request's id: the host never gets
an answer and waits. Here such a request is answered with a JSON-RPC "invalid params" error that names the
field and the code point (never the value), through the transport's own writer; every other line goes to the
SDK untouched.
"""
from __future__ import annotations

import io
import json
import sys
from typing import Any

import anyio

INVALID_PARAMS = -32602


def lone_surrogate(value: Any, where: str = "") -> tuple[str, int, int] | None:
    """(field path, code point, character index) of the first lone surrogate in a decoded JSON value."""
    if isinstance(value, str):
        for i, char in enumerate(value):
            if 0xD800 <= ord(char) <= 0xDFFF:
                return where or "the value", ord(char), i
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = lone_surrogate(key, f"{where}.(a key)".lstrip(".")) if isinstance(key, str) else None
        found = found or lone_surrogate(item, f"{where}.{key}".lstrip("."))
        if found:
            return found
    return None


def refusal(line: str) -> dict[str, Any] | None:
    """The JSON-RPC error answering `line`, when it is a request holding a lone surrogate; else None."""
    if "\\ud" not in line.lower():
        return None                  # the fast path: no escaped surrogate at all
    try:
        message = json.loads(line)
    except ValueError:
        return None                  # not JSON: the SDK's own parse error
    if not isinstance(message, dict) or "id" not in message or "method" not in message:
        return None
    found = lone_surrogate(message.get("params"), "params")
    if found is None:
        return None
    field, code, index = found
    text = (f"Invalid params: {field} holds a lone surrogate (U+{code:04X}) at character {index}, half of a UTF-16 "
            "pair and not a character; send the text as valid Unicode. Do not repeat this call unchanged.")
    return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": INVALID_PARAMS, "message": text}}


class GuardedStdin:
    """The lines of stdin for the SDK's stdio reader; requests it would drop are answered through `replies`."""

    def __init__(self) -> None:
        wrapper = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
        self._lines: anyio.AsyncFile[str] = anyio.wrap_file(wrapper)
        self.replies: Any = None     # the transport's write stream, set once it exists

    def __aiter__(self) -> "GuardedStdin":
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._lines.readline()
            if not line:
                raise StopAsyncIteration
            error = refusal(line) if self.replies is not None else None
            if error is None:
                return line
            import mcp.types as types
            from mcp.shared.message import SessionMessage

            await self.replies.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(error)))


async def run_stdio(server: Any) -> None:
    """server.run_stdio_async, with stdin guarded (the SDK still claims and restores stdout)."""
    from mcp.server.stdio import stdio_server

    stdin = GuardedStdin()
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):   # type: ignore[arg-type]
        stdin.replies = write_stream
        low = server._lowlevel_server
        await low.run(read_stream, write_stream,
                      low.create_initialization_options(getattr(server, "notification_options", None)))
