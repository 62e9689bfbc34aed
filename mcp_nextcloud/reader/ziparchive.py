"""Office / OpenDocument zips opened so that what they inflate is bounded by what was checked.

A zip's central directory can lie: a 522 KB file may declare a 40-byte member
that inflates to a gigabyte. `zipfile.ZipFile.read()` asks zlib for the whole
member at once and cuts it to the declared size only afterwards, so the lie
costs the full gigabyte. `CappedZipFile` is a ZipFile whose members are
inflated as streams, at most `CHUNK` bytes per zlib call, never past their
declared size (zipfile stops there and the CRC check then fails on a lying
member), and never past `limits.max_unzipped_bytes` in total for the archive.

The directory is checked before any member is inflated: only stored and
deflated members (what Office and ODF write; bzip2/lzma decompress without a
bound), the total declared size, the ratio of each large member, and the
ratio of the archive as a whole (480 members of 1 MiB each from 672 KB is a
bomb even though no single member is large).

Libraries that open the zip themselves (python-docx, python-pptx) get
`materialize()`: an honest copy with every member stored, built through the
capped streams, so nothing they read can inflate.
"""
from __future__ import annotations

import io
import zipfile
import zlib
from typing import IO, Any, cast

from .document import Limits, ReaderCode, ReaderError

CHUNK = 64 * 1024                    # bytes asked of zlib per call
LARGE_MEMBER = 1024 * 1024           # members above this must respect limits.max_zip_ratio
WHOLE_RATIO_FLOOR = 16 * 1024 * 1024  # archives inflating past this must respect it as a whole too
MAX_MEMBERS = 20_000
METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}


def _corrupt(kind: str, why: str) -> ReaderError:
    return ReaderError(f"corrupt {kind.upper()} file ({why})", "ask for a fresh copy of the file",
                       code=ReaderCode.CORRUPT)


def _bomb(kind: str, why: str) -> ReaderError:
    return ReaderError(f"{kind.upper()} file refused as a zip bomb: {why}", "ask the owner for a normal copy",
                       code=ReaderCode.ZIP_BOMB)


class CappedZipFile(zipfile.ZipFile):
    """A read-only ZipFile over bytes whose members inflate in bounded steps under a total budget."""

    def __init__(self, data: bytes, limits: Limits, kind: str) -> None:
        try:
            super().__init__(io.BytesIO(data))
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise _corrupt(kind, f"not a readable zip archive: {type(exc).__name__}") from None
        self.kind = kind
        self.budget = limits.max_unzipped_bytes
        self.produced = 0
        try:
            self._check(limits)
        except BaseException:
            self.close()
            raise

    def _check(self, limits: Limits) -> None:
        infos = self.infolist()
        if len(infos) > MAX_MEMBERS:
            raise _bomb(self.kind, f"{len(infos)} members (limit {MAX_MEMBERS})")
        total = packed = 0
        for info in infos:
            if info.compress_type not in METHODS:
                raise _corrupt(self.kind, f"member {info.filename[:80]!r} uses compression method "
                                          f"{info.compress_type}, which Office and OpenDocument never write")
            total += info.file_size
            packed += info.compress_size
            ratio = info.file_size / max(info.compress_size, 1)
            if info.file_size > LARGE_MEMBER and ratio > limits.max_zip_ratio:
                raise _bomb(self.kind, f"member {info.filename[:80]!r} inflates {ratio:.0f}x "
                                       f"(limit {limits.max_zip_ratio}x)")
        if total > self.budget:
            raise _bomb(self.kind, f"it inflates to {total // (1024 * 1024)} MiB "
                                   f"(limit {self.budget // (1024 * 1024)} MiB)")
        if total > WHOLE_RATIO_FLOOR and total / max(packed, 1) > limits.max_zip_ratio:
            raise _bomb(self.kind, f"its members inflate {total / max(packed, 1):.0f}x together, to "
                                   f"{total // (1024 * 1024)} MiB (limit {limits.max_zip_ratio}x)")

    def open(self, name: Any, mode: str = "r", pwd: bytes | None = None, *,
             force_zip64: bool = False) -> IO[bytes]:
        if mode != "r":
            raise ValueError("CappedZipFile is read-only")
        inner = super().open(name, "r", pwd)
        return cast(IO[bytes], _CappedMember(inner, self, getattr(name, "filename", name)))

    def count(self, produced: int) -> None:
        """Add inflated bytes to the archive's total; a zip-bomb error once it passes the budget."""
        self.produced += produced
        if self.produced > self.budget:
            raise _bomb(self.kind, f"its members produced more than {self.budget // (1024 * 1024)} MiB")

    def member(self, name: str, *, max_bytes: int | None = None) -> bytes:
        """A member's bytes (at most `max_bytes`); a missing or broken member is a 'corrupt' ReaderError."""
        try:
            with self.open(name) as src:
                return src.read() if max_bytes is None else src.read(max_bytes)
        except KeyError:
            raise _corrupt(self.kind, f"{name} is missing") from None

    def materialize(self) -> bytes:
        """The same archive with every member stored (no compression), read through the caps."""
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
            for info in self.infolist():
                if info.is_dir():
                    continue
                copy = zipfile.ZipInfo(info.filename, info.date_time)
                copy.external_attr = info.external_attr
                dst.writestr(copy, self.member(info.filename))
        return out.getvalue()


class _CappedMember(io.RawIOBase):
    """One member's stream: reads inflate at most CHUNK bytes per zlib call and count toward the budget."""

    def __init__(self, inner: Any, owner: CappedZipFile, name: str) -> None:
        super().__init__()
        self._inner = inner
        self._owner = owner
        self._name = str(name)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            parts = []
            while chunk := self._chunk(CHUNK):
                parts.append(chunk)
            return b"".join(parts)
        parts, wanted = [], size
        while wanted > 0:
            chunk = self._chunk(min(wanted, CHUNK))
            if not chunk:
                break
            parts.append(chunk)
            wanted -= len(chunk)
        return b"".join(parts)

    def readall(self) -> bytes:
        return self.read(-1)

    def _chunk(self, size: int) -> bytes:
        try:
            data: bytes = self._inner.read(size)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
            raise _corrupt(self._owner.kind, f"{type(exc).__name__} in {self._name[:80]}") from None
        self._owner.count(len(data))
        return data

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            super().close()
