"""Guards shared by the format converters: zip-bomb checks and the wall-clock deadline.

The reader is otherwise clock-free; the deadline is the one exception, and it
only ever turns a runaway extraction into a clear ReaderError.
"""
from __future__ import annotations

import io
import time
import zipfile

from .document import Limits, ReaderError

RETRY_WHEN_CHANGED = "the file is recorded as failed and not retried until it changes"


class Deadline:
    """A monotonic wall-clock budget checked between pages, rows or slides."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def check(self) -> None:
        """Raise ReaderError(code="timeout") once the budget is spent."""
        if time.monotonic() > self.end:
            raise ReaderError(
                f"extraction took longer than {self.seconds:g} s", RETRY_WHEN_CHANGED,
                retry_text="do not retry (read a smaller export of the file instead)",
                code="timeout",
            )


def open_zip(data: bytes, limits: Limits, kind: str) -> zipfile.ZipFile:
    """Open a zip-based document after checking its declared sizes (zip bomb guard).

    Checks run on the central directory only, before any member is inflated:
    the total declared size and each member's compression ratio.
    """
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ReaderError(
            f"corrupt {kind.upper()} file (not a readable zip archive: {type(exc).__name__})",
            "ask for a fresh copy of the file", retry_text="do not retry until it changes",
            code="corrupt",
        ) from None
    total = 0
    for info in infos:
        total += info.file_size
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > 1024 * 1024 and ratio > limits.max_zip_ratio:
            zf.close()
            raise ReaderError(
                f"{kind.upper()} file refused as a zip bomb (member {info.filename!r} inflates "
                f"{ratio:.0f}x, limit {limits.max_zip_ratio}x)", "ask the owner for a normal copy",
                code="zip_bomb",
            )
    if total > limits.max_unzipped_bytes:
        zf.close()
        raise ReaderError(
            f"{kind.upper()} file refused as a zip bomb: it inflates to {total // (1024 * 1024)} MiB "
            f"(limit {limits.max_unzipped_bytes // (1024 * 1024)} MiB)", "ask the owner for a normal copy",
            code="zip_bomb",
        )
    return zf


def read_member(zf: zipfile.ZipFile, name: str, kind: str) -> bytes:
    """Read one zip member, turning a missing or broken member into a 'corrupt' ReaderError."""
    try:
        return zf.read(name)
    except KeyError:
        raise ReaderError(
            f"corrupt {kind.upper()} file: {name} is missing", "ask for a fresh copy",
            code="corrupt",
        ) from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ReaderError(
            f"corrupt {kind.upper()} file ({type(exc).__name__} in {name})", "ask for a fresh copy",
            retry_text="do not retry until it changes",
            code="corrupt",
        ) from None
