"""One event loop per request thread of the index service, kept across the calls that thread runs.

A tool call is async (the MCP SDK's), and the service runs it from a plain request thread. `anyio.run` made a
new event loop per call, and with it a new worker thread for the tool's synchronous body (the SDK runs sync
tools in anyio's worker threads, which belong to their loop): about 0.5-0.8 ms of every call, the most of the
hop a serve or the team server pays to reach the service. A loop kept per request thread keeps its worker too
(idle ones end after 10 s; their index readers close with them: indexer/store/thread_connections.py).
"""
from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Awaitable, Callable, TypeVar

T = TypeVar("T")
_local = threading.local()


def run(async_fn: Callable[[], Awaitable[T]]) -> T:
    """Run `async_fn()` to its end on this thread's kept loop, in a copy of the caller's context (as anyio.run
    does: the call's environment, profile and context variables, and nothing it sets leaks into the next)."""
    runner: asyncio.Runner | None = getattr(_local, "runner", None)
    if runner is None:
        runner = _local.runner = asyncio.Runner()
    return runner.run(_awaited(async_fn), context=contextvars.copy_context())


async def _awaited(async_fn: Callable[[], Awaitable[T]]) -> T:
    return await async_fn()
