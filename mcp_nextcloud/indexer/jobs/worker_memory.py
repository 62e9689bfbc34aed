"""An extraction worker's memory between documents: hand back what the last one used, or say it should go.

A worker that parsed a large document keeps its peak heap: CPython's small-object
arenas and glibc's malloc rarely return freed memory to the system, so without this
a build's memory tracks the largest document seen, not the current one. Measured
(benchmarks/test_worker_memory_bench.py, RSS of one worker after the next small
document): after 33 MB of text a worker kept 128 MiB against 17 fresh, after an
80,000-row XLSX 64-106 against 46; with `malloc_trim(0)` after the document they hold
18-19 and 49-50 MiB (a 150,000-word PDF leaves 5-12 MiB: kept, see below). The trim itself
costs 50-300 µs after a small document, but trimming after every one made the next
fault its pages in again, so it runs once a worker has grown by KEEP_FOR_NEXT since
its last trim (a build then faults no more pages than without it). `gc.collect()` found
next to nothing on the same documents (0-3 MiB, 7-20 ms), so it runs only as the
last try before a recycle. A worker still holding more than RECYCLE_ABOVE_FRESH
above its fresh size after that is past saving: it leaves, and the pool starts a
fresh one for the next file (see `Settler.settle`).

Linux (glibc) gets all of it; elsewhere the resident size is unknown (no recycle on
memory) and there is nothing to trim; the pool's other caps still apply.
"""
from __future__ import annotations

import gc
import os
from typing import Callable

MIB = 1024 * 1024
# A worker still holding more than this above its fresh resident size after a document
# (memory handed back, cycles collected) is replaced. It is a margin, not a ratio: a
# worker legitimately grows by the parsers it imports on first use (~50 MiB once it has
# met every format: openpyxl 29, python-pptx 19, pdfminer 18, python-docx 11 MiB...),
# and a recycle costs it those imports again, so only what is beyond them counts as fat.
RECYCLE_ABOVE_FRESH = 128 * MIB
# Free heap a worker keeps for its next document instead of handing it back: trimming after every
# document made the next one fault its pages in again (+27% page faults, more system time on a build
# of 126 medium documents). A worker that grew by more than this since its last trim is trimmed.
KEEP_FOR_NEXT = 32 * MIB


def _page_size() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 4096


class ResidentSize:
    """This process's resident set size in bytes, read from /proc/self/statm (Linux); None elsewhere."""

    def __init__(self) -> None:
        self._page = _page_size()
        try:
            self._fd: int | None = os.open("/proc/self/statm", os.O_RDONLY)
        except OSError:
            self._fd = None

    def __call__(self) -> int | None:
        if self._fd is None:
            return None
        try:
            # "size resident shared ...", in pages; pread on the open file: ~5 µs, no open per call.
            return int(os.pread(self._fd, 128, 0).split()[1]) * self._page
        except (OSError, ValueError, IndexError):
            return None


def _malloc_trim() -> Callable[[], object]:
    """glibc's malloc_trim(0) (return free heap pages to the system), or a no-op where there is none."""
    import ctypes   # here, not at the top: the CLI imports this module for its constant (the fork server preloads it)

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):   # not glibc (musl, macOS, Windows)
        return lambda: None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lambda: trim(0)


class Settler:
    """Made when a worker starts (its fresh size); `settle()` after each document, once its objects are dropped."""

    def __init__(self, recycle_above: int | None = RECYCLE_ABOVE_FRESH, *, release: bool = True) -> None:
        self.rss = ResidentSize()
        self.fresh = self.trimmed = self.rss()
        self.recycle_above, self.release = recycle_above, release
        self._trim = _malloc_trim() if release else (lambda: None)

    def settle(self) -> bool:
        """Hand back what the last document left; True while the worker is fit for the next one."""
        now = self.rss()
        if now is None or self.trimmed is None or now - self.trimmed > KEEP_FOR_NEXT:
            self._trim()
            now = self.trimmed = self.rss()
        if not self._fat(now):
            return True
        if self.release:   # a collection may free enough for the trim to spare a recycle
            gc.collect()
            self._trim()
            now = self.trimmed = self.rss()
        return not self._fat(now)

    def _fat(self, now: int | None) -> bool:
        if self.recycle_above is None or self.fresh is None or now is None:
            return False
        return now - self.fresh > self.recycle_above
