"""Guards shared by the format converters: capped zip opening and the wall-clock deadline.

The reader is otherwise clock-free; the deadline is the one exception, and it
only ever turns a runaway extraction into a clear ReaderError.
"""
from __future__ import annotations

import time
import zipfile

from .document import Limits, ReaderCode, ReaderError
from .ziparchive import CappedZipFile

class Deadline:
    """A monotonic wall-clock budget checked between pages, rows or slides."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def check(self) -> None:
        """Raise ReaderError(code=ReaderCode.TIMEOUT) once the budget is spent."""
        if time.monotonic() > self.end:
            raise ReaderError(
                f"extraction took longer than {self.seconds:g} s", "read a smaller export of the file instead",
                code=ReaderCode.TIMEOUT,
            )


def open_zip(data: bytes, limits: Limits, kind: str) -> CappedZipFile:
    """Open a zip-based document: its directory checked, its members inflated under caps (see ziparchive)."""
    return CappedZipFile(data, limits, kind)


def read_member(zf: zipfile.ZipFile, name: str, kind: str) -> bytes:
    """Read one zip member, turning a missing or broken member into a 'corrupt' ReaderError."""
    try:
        return zf.read(name)
    except KeyError:
        raise ReaderError(
            f"corrupt {kind.upper()} file: {name} is missing", "ask for a fresh copy",
            code=ReaderCode.CORRUPT,
        ) from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ReaderError(
            f"corrupt {kind.upper()} file ({type(exc).__name__} in {name})", "ask for a fresh copy",
            code=ReaderCode.CORRUPT,
        ) from None
