"""The index service's one event loop, running in a thread of its own for as long as the process lives.

A tool call is async (the MCP SDK's), and the service runs it from a plain request thread. The SDK runs a
synchronous tool in an anyio worker thread, and anyio keeps its workers as long as the loop's root task lives
(the task `run_until_complete` runs): a loop run per call (`anyio.run`, or a loop kept per request thread and
run until each call's end) made every call its root task, so every call started a new worker thread, which
ended with it, and that worker opened a new index reader (indexer/store/thread_connections.py). Here the root
task is the loop thread's, which never ends: the workers are kept and reused, as in `serve --http`'s own process
(uvicorn's loop), and a call pays no thread start. A worker idle for 10 s ends at the next call (anyio), and with
it the index readers it opened (one per index it read: on a team's service, one per person it served).

Each call runs as its own task in a copy of the caller's context (as anyio.run does: the call's environment,
profile and context variables, and nothing it sets leaks into the next). Every tool of ours is synchronous, so
the loop itself does only the SDK's short async steps; calls run side by side in their workers.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from typing import Any, Awaitable, Callable, TypeVar

T = TypeVar("T")
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def run(async_fn: Callable[[], Awaitable[T]]) -> T:
    """Run `async_fn()` to its end on the service's loop, in a copy of the caller's context; its result, or
    its exception raised here."""
    context = contextvars.copy_context()
    loop = _running_loop()
    done: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def start() -> None:
        task = loop.create_task(_awaited(async_fn), context=context)
        task.add_done_callback(lambda finished: _settle(finished, done))

    loop.call_soon_threadsafe(start)
    ok, value = done.result()
    if not ok:
        raise value
    return value


def _settle(task: asyncio.Task[Any], done: concurrent.futures.Future[Any]) -> None:
    if task.cancelled():
        done.set_exception(asyncio.CancelledError())
    elif task.exception() is not None:
        done.set_exception(task.exception())
    else:
        done.set_result(task.result())


def _running_loop() -> asyncio.AbstractEventLoop:
    """The loop, started in its thread on first use (and again should that thread have ended)."""
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive():
            ready: concurrent.futures.Future[asyncio.AbstractEventLoop] = concurrent.futures.Future()
            _thread = threading.Thread(target=asyncio.run, args=(_home(ready),), name="tool-loop", daemon=True)
            _thread.start()
            _loop = ready.result()
        return _loop


async def _home(ready: concurrent.futures.Future[asyncio.AbstractEventLoop]) -> None:
    """The loop's root task: it lives as long as the process, and with it anyio's worker threads."""
    ready.set_result(asyncio.get_running_loop())
    await asyncio.Event().wait()


async def _awaited(async_fn: Callable[[], Awaitable[T]]) -> tuple[bool, Any]:
    """(True, the result), or (False, the KeyboardInterrupt or SystemExit it raised): a command cancelled by its
    caller raises service.requests.Cancelled, which must end the call, never the loop every call shares."""
    try:
        return True, await async_fn()
    except (KeyboardInterrupt, SystemExit) as exc:
        return False, exc
