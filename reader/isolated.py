"""Run extract() in a child process with a memory cap and a hard wall-clock kill.

A hostile or huge file can make a C library (pdfium, zlib, libxml) spin or
allocate without end; the child's address space is capped with RLIMIT_AS and
the parent kills it at limits.max_seconds. `run_extract` is the picklable
worker the indexer can also submit to its own process pool.
"""
from __future__ import annotations

import multiprocessing
from typing import Any

from .document import DEFAULT_LIMITS, DO_NOT_RETRY, Document, Limits, ReaderError
from .limits import RETRY_WHEN_CHANGED

DEFAULT_MEMORY_BYTES = 1536 * 1024 * 1024  # 1.5 GiB of address space per extraction
_CONTEXT = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def _start_method() -> str:
    """fork when this process has one thread (a CLI `inspect`): safe then, and it spares the child a new
    interpreter and a forkserver that would cost more than the extraction of a typical file. With other
    threads (the server, the indexer) a fork could copy a held lock: forkserver."""
    import threading

    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return _CONTEXT


def _cap_memory(memory_bytes: int | None) -> None:
    if not memory_bytes:
        return
    try:
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, ValueError, OSError):  # not on this platform: the time cap still applies
        pass


def run_extract(data: bytes, name: str, mime: str | None = None, limits: Limits = DEFAULT_LIMITS,
                memory_bytes: int | None = DEFAULT_MEMORY_BYTES) -> tuple[str, Any, Any]:
    """Picklable worker: cap this process's memory, extract, return a picklable outcome.

    Returns ("ok", Document, None) or ("error", code, (cause, action, retry_text));
    plain data crosses the process boundary, `outcome_to_document` rebuilds the
    ReaderError. Meant to run in a throw-away child (the memory cap stays for
    the life of the process).
    """
    _cap_memory(memory_bytes)
    from .extract import extract

    try:
        return "ok", extract(data, name, mime, limits=limits), None
    except ReaderError as exc:
        return "error", exc.code.value, (exc.cause, exc.action, exc.retry_text)
    except MemoryError:
        return "error", "memory", _memory_parts(memory_bytes)


def outcome_to_document(outcome: tuple[str, Any, Any]) -> Document:
    """Turn run_extract's result back into a Document or raise its ReaderError."""
    status, value, parts = outcome
    if status == "ok":
        return value
    if isinstance(parts, str):   # a message written whole
        raise ReaderError(parts, code=value)
    cause, action, retry_text = parts
    raise ReaderError(cause, action, retry_text=retry_text or None, code=value)


def _memory_parts(memory_bytes: int | None) -> tuple[str, str, str]:
    limit = f" (limit {memory_bytes // (1024 * 1024)} MiB)" if memory_bytes else ""
    return f"extraction ran out of memory{limit}", RETRY_WHEN_CHANGED, DO_NOT_RETRY


def _child(conn: Any, data: bytes, name: str, mime: str | None, limits: Limits, memory_bytes: int | None) -> None:
    try:
        conn.send(run_extract(data, name, mime, limits, memory_bytes))
    except MemoryError:
        conn.send(("error", "memory", _memory_parts(memory_bytes)))
    finally:
        conn.close()


def extract_isolated(data: bytes, name: str, mime: str | None = None, *, limits: Limits = DEFAULT_LIMITS,
                     memory_bytes: int | None = DEFAULT_MEMORY_BYTES) -> Document:
    """extract() in a child process: ReaderError "timeout" after limits.max_seconds, "memory" if it dies."""
    ctx: Any = multiprocessing.get_context(_start_method())   # typeshed's BaseContext has no Process
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, data, name, mime, limits, memory_bytes), daemon=True)
    proc.start()
    child.close()
    try:
        if parent.poll(limits.max_seconds):
            try:
                return outcome_to_document(parent.recv())
            except (EOFError, OSError):
                pass  # the child died before answering: treated below
        else:
            raise ReaderError(f"extraction took longer than {limits.max_seconds:g} s", RETRY_WHEN_CHANGED,
                              code="timeout")
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        parent.close()
    raise ReaderError(f"extraction crashed or ran out of memory (exit code {proc.exitcode}{_limit(memory_bytes)})",
                      RETRY_WHEN_CHANGED, code="memory")


def _limit(memory_bytes: int | None) -> str:
    return f", limit {memory_bytes // (1024 * 1024)} MiB" if memory_bytes else ""
