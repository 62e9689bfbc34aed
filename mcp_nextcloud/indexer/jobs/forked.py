"""Run a function in a forked child with its address space capped; collect its pickled answer, or kill it.

The process mechanics of indexer.jobs.oneshot, kept apart from what the children do. A child is
forked from the caller (no new interpreter, no fork server, no resource tracker), caps its address
space (RLIMIT_AS, as the pool's workers do) and its CPU time (a backstop should the parent vanish),
ignores Ctrl-C (the parent decides when it ends), runs its job and writes the pickled result to a
pipe, then leaves with os._exit: none of the parent's atexit handlers, buffers or `finally` blocks
run twice. The parent reads every child's pipe until EOF or the deadline, kills whoever is still
working at the deadline or when the parent itself is interrupted, and always reaps every child:
nothing outlives the call, not even a zombie.

Forking is only safe in a process with one thread (a fork copies other threads' locks mid-use);
`can_fork` says whether this process qualifies.
"""
from __future__ import annotations

import os
import pickle
import selectors
import signal
import sys
import threading
import time
from typing import Any, Callable, NoReturn

from mcp_nextcloud.indexer.jobs.child import cap_memory

CPU_MARGIN_SECONDS = 5       # the CPU backstop sits this far past the parent's own deadline
# glibc's malloc gives the top of its heap back at each large free and grows it again at the next
# allocation: pdfium reading the manual takes ~5,000 page faults and ~10 ms of its ~60 ms CPU that way.
# A child that lives for one file keeps a 64 MiB pad instead (M_TOP_PAD; its address space stays capped).
HEAP_PAD_BYTES = 64 * 1024 * 1024
_M_TOP_PAD = -2              # glibc's mallopt parameter number (malloc.h)
_FOREVER = 1e9                # seconds: a time limit beyond this (math.inf) waits without a timeout
_NO_ANSWER = 70              # exit status of a child whose job raised (os.EX_SOFTWARE)


def thread_count() -> int:
    """Threads in this process, C threads included where the platform tells (Linux /proc)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def can_fork() -> bool:
    """True when a child may be forked here: the platform forks safely and this process has one thread.

    macOS is left out: its system frameworks may abort in a forked child (CPython's multiprocessing
    stopped forking there for that reason).
    """
    return hasattr(os, "fork") and sys.platform != "darwin" and thread_count() == 1


class Child:
    """A forked child: its pid, the read end of its answer pipe, what it sent, how it ended.

    A plain class: dataclasses costs a CLI read ~5 ms of imports."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd
        self.chunks: list[bytes] = []
        self.exitcode: int | None = None      # as multiprocessing reports it: -N when killed by signal N
        self.reaped = False

    def answer(self) -> Any:
        """The child's unpickled result; LookupError when it sent none (it died, or its job raised)."""
        payload = b"".join(self.chunks)
        if self.exitcode != 0 or not payload:
            raise LookupError(self.exitcode)
        try:
            return pickle.loads(payload)
        except Exception:   # a child killed mid-write: a cut pickle
            raise LookupError(self.exitcode) from None


def run(jobs: list[Callable[[], Any]], memory_bytes: int | None, seconds: float, *,
        keep_heap: bool = False) -> tuple[bool, list[Child]]:
    """Run each job in its own child; (True, children) when all answered within `seconds`, else (False, ...).

    `keep_heap`: the children keep their heap grown (see HEAP_PAD_BYTES), for jobs that allocate and
    free large blocks over and over (pdfium).

    Every child has been reaped when this returns or raises: those still running at the deadline,
    or when the wait is interrupted (Ctrl-C), are killed first. Ctrl-C is held while forking: a
    KeyboardInterrupt raised inside os.fork's at-fork hooks would be printed and lost, and one raised
    between a fork and its bookkeeping would leave a child nobody waits for.
    """
    children: list[Child] = []
    finished = False
    try:
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            for job in jobs:
                children.append(_start(job, memory_bytes, seconds, keep_heap))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)   # a Ctrl-C that came meanwhile is raised now
        finished = _read(children, seconds)
        return finished, children
    finally:
        _end(children, kill=not finished)


def _start(job: Callable[[], Any], memory_bytes: int | None, seconds: float, keep_heap: bool) -> Child:
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except BaseException:
        os.close(read_end)
        os.close(write_end)
        raise
    if pid == 0:   # the child: never returns into the caller's stack
        try:
            os.close(read_end)
            _child_main(write_end, job, memory_bytes, seconds, keep_heap)
        finally:
            os._exit(_NO_ANSWER)
    os.close(write_end)
    return Child(pid, read_end)


def _child_main(fd: int, job: Callable[[], Any], memory_bytes: int | None, seconds: float,
                keep_heap: bool) -> NoReturn:
    status = _NO_ANSWER
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl-C reaches the whole group; the parent kills us
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})   # held by the parent while forking
        import mcp_nextcloud.reader.extract  # noqa: F401 - loaded before the cap, as in the pool's workers

        cap_memory(memory_bytes)
        _cap_cpu(seconds)
        if keep_heap:
            _keep_heap()
        view = memoryview(pickle.dumps(job(), pickle.HIGHEST_PROTOCOL))
        while view:
            view = view[os.write(fd, view):]
        status = 0
    except BaseException:   # no answer: the parent reports the child as died
        pass
    finally:
        os._exit(status)


def _keep_heap() -> None:
    """Let glibc's malloc keep HEAP_PAD_BYTES at the top of the heap (elsewhere: nothing to do)."""
    try:
        import ctypes

        mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    except (ImportError, OSError):
        return
    if mallopt is not None and sys.platform.startswith("linux"):
        mallopt(_M_TOP_PAD, HEAP_PAD_BYTES)


def _cap_cpu(seconds: float) -> None:
    """RLIMIT_CPU past the parent's deadline: a child whose parent was killed still ends (SIGXCPU, then SIGKILL)."""
    try:
        import resource

        soft = int(seconds) + CPU_MARGIN_SECONDS
        _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if hard == resource.RLIM_INFINITY or soft < hard:
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (ImportError, ValueError, OverflowError, OSError):   # not here, or no finite limit: the parent decides
        pass


def _read(children: list[Child], seconds: float) -> bool:
    """Read every child's answer until all pipes are closed (True) or `seconds` have passed (False)."""
    end = time.monotonic() + seconds
    with selectors.DefaultSelector() as sel:
        for child in children:
            sel.register(child.fd, selectors.EVENT_READ, child)
        while sel.get_map():
            left = end - time.monotonic()
            if left <= 0:
                return False
            for key, _events in sel.select(left if left < _FOREVER else None):
                chunk = os.read(key.fd, 1 << 20)
                if chunk:
                    key.data.chunks.append(chunk)
                else:
                    sel.unregister(key.fd)
    return True


def _end(children: list[Child], kill: bool) -> None:
    """Close the pipes and reap every child; kill first those that may still run."""
    for child in children:
        os.close(child.fd)
        if child.reaped:
            continue
        if kill:
            try:
                os.kill(child.pid, signal.SIGKILL)
            except ProcessLookupError:   # already gone (it is still ours to reap)
                pass
        _, status = os.waitpid(child.pid, 0)
        child.exitcode, child.reaped = os.waitstatus_to_exitcode(status), True
