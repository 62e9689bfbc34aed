"""What an extraction child does with one file, and how its parent words a child it gave up on.

Shared by every route that extracts in a child process: the pool's long-lived workers
(indexer.jobs.pool) and the one-shot fork of a CLI read (indexer.jobs.oneshot). Cheap to import
(the reader's error type, nothing of multiprocessing or concurrent.futures): a one-shot `inspect`
loads this module, not the pool.
"""
from __future__ import annotations

from typing import Any

from mcp_nextcloud.reader.document import Limits, ReaderCode, ReaderError
from mcp_nextcloud.reader.extract import extract

from mcp_nextcloud.indexer.store.prepare import prepare

MIB = 1024 * 1024
DEFAULT_MEMORY_BYTES = 1536 * MIB  # 1.5 GiB of address space per child
GRACE_SECONDS = 2.0                # on top of Limits.max_seconds before a child is killed
# The next step after a cap stopped a file (the same caps apply next time: a smaller copy is the way on).
SMALLER_COPY = "ask for a smaller or simpler copy of the file"
REPORT_BUG = "report it: the reader failed on this file, the file itself may be fine"


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

    A ReaderError travels as plain parts (its code's wire name, its cause, action and `retry` flag); the
    parent rebuilds it (`reader_error`), so the front ends can word each part for their audience.
    """
    try:
        doc = extract(data, name, mime, limits=limits)
        if not with_rows:
            return "ok", doc, None
        return "ok", doc, prepare(doc)
    except ReaderError as exc:
        return reported(exc)
    except MemoryError:
        return "error", ReaderCode.MEMORY.value, (f"{name}: extraction ran out of memory", SMALLER_COPY, False)
    except Exception as exc:  # a reader bug costs one file, not the run
        return "error", ReaderCode.FAILED.value, (f"{name}: the reader failed ({type(exc).__name__}: {exc})",
                                                  REPORT_BUG, False)


def reported(exc: ReaderError) -> tuple[str, Any, Any]:
    """A ReaderError as a child sends it: ("error", code, (cause, action, retry)); `reader_error` undoes it."""
    return "error", exc.code.value, (exc.cause, exc.action, exc.retry)


def reader_error(code: str, parts: tuple[str, str, bool]) -> ReaderError:
    """The ReaderError a child reported as plain parts."""
    cause, action, retry = parts
    return ReaderError(cause, action, code=ReaderCode(code), retry=bool(retry))


def died(name: str, exitcode: int | None, memory_bytes: int | None) -> ReaderError:
    """The child ended without an answer: killed at its memory cap, or a crash in a parser (exit code < 0: signal)."""
    limit = f", limit {memory_bytes // MIB} MiB" if memory_bytes else ""
    return ReaderError(f"{name}: the extraction process died (out of memory or a crash in a parser; exit code "
                       f"{exitcode}{limit})", SMALLER_COPY, code=ReaderCode.MEMORY)


def overran(name: str, limits: Limits) -> ReaderError:
    """The child was still working at its deadline (limits.max_seconds plus a grace) and was killed."""
    return ReaderError(f"{name}: extraction took longer than {limits.max_seconds:g} s and was stopped",
                       SMALLER_COPY, code=ReaderCode.TIMEOUT)
