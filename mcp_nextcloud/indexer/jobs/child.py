"""What an extraction child does with one file, and how its parent words a child it gave up on.

Shared by every route that extracts in a child process: the pool's long-lived workers
(indexer.jobs.pool) and the one-shot fork of a CLI read (indexer.jobs.oneshot). Cheap to import
(the reader's error type, nothing of multiprocessing or concurrent.futures): a one-shot `inspect`
loads this module, not the pool.
"""
from __future__ import annotations

from typing import Any

from mcp_nextcloud.reader.document import Limits, ReaderError
from mcp_nextcloud.reader.extract import extract
from mcp_nextcloud.reader.limits import RETRY_WHEN_CHANGED

from mcp_nextcloud.indexer.store.prepare import prepare

MIB = 1024 * 1024
DEFAULT_MEMORY_BYTES = 1536 * MIB  # 1.5 GiB of address space per child
GRACE_SECONDS = 2.0                # on top of Limits.max_seconds before a child is killed


def cap_memory(memory_bytes: int | None) -> None:
    """Cap this (child) process's address space (RLIMIT_AS): a parser blowing up costs its file, not the machine."""
    if not memory_bytes:
        return
    try:
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, ValueError, OSError):  # not on this platform: the time cap still applies
        pass


def work(data: bytes, name: str, mime: str | None, limits: Limits, with_rows: bool) -> tuple[str, Any, Any]:
    """One file, in a child: ("ok", Document, Prepared | None) or ("error", code, (cause, action, retry)).

    A ReaderError travels as plain parts; the parent rebuilds it (`reader_error`), so the front ends can
    word the cause, the next step and the retry statement for their audience.
    """
    try:
        doc = extract(data, name, mime, limits=limits)
        if not with_rows:
            return "ok", doc, None
        return "ok", doc, prepare(doc)
    except ReaderError as exc:
        return reported(exc)
    except MemoryError:
        return "error", "memory", (f"{name}: extraction ran out of memory", RETRY_WHEN_CHANGED, "")
    except Exception as exc:  # a reader bug costs one file, not the run
        return "error", "failed", (f"{name}: the reader failed ({type(exc).__name__}: {exc})",
                                   RETRY_WHEN_CHANGED, "")


def reported(exc: ReaderError) -> tuple[str, Any, Any]:
    """A ReaderError as a child sends it: ("error", code, (cause, action, retry)); `reader_error` undoes it."""
    return "error", exc.code.value, (exc.cause, exc.action, exc.retry_text)


def reader_error(code: str, parts: Any) -> ReaderError:
    """The ReaderError a child reported as plain parts (a whole message from an older worker still works)."""
    if isinstance(parts, str):
        return ReaderError(parts, code=code)
    cause, action, retry_text = parts
    return ReaderError(cause, action, retry_text=retry_text or None, code=code)


def died(name: str, exitcode: int | None, memory_bytes: int | None) -> ReaderError:
    """The child ended without an answer: killed at its memory cap, or a crash in a parser (exit code < 0: signal)."""
    limit = f", limit {memory_bytes // MIB} MiB" if memory_bytes else ""
    return ReaderError(f"{name}: the extraction process died (out of memory or a crash in a parser; exit code "
                       f"{exitcode}{limit})", RETRY_WHEN_CHANGED, code="memory")


def overran(name: str, limits: Limits) -> ReaderError:
    """The child was still working at its deadline (limits.max_seconds plus a grace) and was killed."""
    return ReaderError(f"{name}: extraction took longer than {limits.max_seconds:g} s and was stopped",
                       RETRY_WHEN_CHANGED, code="timeout")
