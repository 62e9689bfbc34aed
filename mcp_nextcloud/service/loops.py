"""The index service runs a tool call in its own request thread, on an event loop kept per thread.

A tool call is async (the MCP SDK's), and the service runs it from a plain request thread. `anyio.run` made a
new event loop per call: about 0.5-0.8 ms of every call. The SDK runs a synchronous tool in an anyio worker
thread, kept only while the loop's root task lives: with a loop run per call every call was its root task, so
every call also started a worker thread and ended it (and the worker opened an index reader of its own). Here
the loop is kept per request thread, and the service's tools run inline (`inline_tools`): each request thread
already runs one call at a time, so the call's synchronous body runs in it, with no thread started and no hop
to another thread and back.
"""
from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any, Awaitable, Callable, TypeVar

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


def inline_tools(server: Any) -> Any:
    """`server`, its synchronous tools run in the calling thread (the SDK awaits them as async ones) instead of
    an anyio worker thread. Only for a server whose calls each run in a thread of their own (`run` above)."""
    for tool in server._tool_manager.list_tools():
        if not tool.is_async:
            tool.fn, tool.is_async = _awaitable(tool.fn), True
    return server


def _awaitable(fn: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    async def call(**kwargs: Any) -> Any:
        return fn(**kwargs)

    return call
