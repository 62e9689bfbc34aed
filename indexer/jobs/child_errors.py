"""The ReaderErrors of an extraction child its parent gave up on: the child died, or it ran out of time.

One wording for every route that extracts in a child process (indexer.jobs.oneshot; the pool's
workers say the same). Cheap to import: nothing but the reader's error type.
"""
from __future__ import annotations

from reader.document import Limits, ReaderError
from reader.limits import RETRY_WHEN_CHANGED

MIB = 1024 * 1024


def died(name: str, exitcode: int | None, memory_bytes: int | None) -> ReaderError:
    """The child ended without an answer: killed at its memory cap, or a crash in a parser (exit code < 0: signal)."""
    limit = f", limit {memory_bytes // MIB} MiB" if memory_bytes else ""
    return ReaderError(f"{name}: the extraction process died (out of memory or a crash in a parser; exit code "
                       f"{exitcode}{limit})", RETRY_WHEN_CHANGED, code="memory")


def overran(name: str, limits: Limits) -> ReaderError:
    """The child was still working at its deadline (limits.max_seconds plus a grace) and was killed."""
    return ReaderError(f"{name}: extraction took longer than {limits.max_seconds:g} s and was stopped",
                       RETRY_WHEN_CHANGED, code="timeout")
