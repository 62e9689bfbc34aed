"""One file's extraction for a caller that reads a single file (`inspect`): forked children, no pool.

ExtractionPool(1) for one file starts a fork server (a whole interpreter that preloads the reader),
multiprocessing's resource tracker (another one), then forks its worker: most of a cold `inspect`.
A process with one thread can fork the extraction child itself (indexer.jobs.forked) with the pool's
protections: the address space capped, the time limit enforced by the parent (the child is killed at
`limits.max_seconds` plus the pool's grace), the answer pickled through a pipe, the same ReaderErrors
(memory, timeout, crash: indexer.jobs.child), nothing left running afterwards, Ctrl-C honoured.
A process with threads, or a platform that cannot fork safely, goes through the pool as before.

A big PDF may be read by several children at once, each one run of its pages with the reader's own
page code (reader.formats.pdf.read_part), assembled here into the Document a single child would have
made; anything unusual on the way (no text, pdfium refusing the file) is left to the single route, so
the pdfminer fallback and its errors stay exactly the reader's.
"""
from __future__ import annotations

import os
from typing import Any, Callable

from mcp_nextcloud.reader.document import DEFAULT_LIMITS, Document, Limits, ReaderCode, ReaderError

from mcp_nextcloud.indexer.jobs import forked
from mcp_nextcloud.indexer.jobs.pool import ExtractionPool
from mcp_nextcloud.indexer.models import too_large_reason
from mcp_nextcloud.indexer.jobs.child import (DEFAULT_MEMORY_BYTES, GRACE_SECONDS, died, overran, reader_error,
                                              reported, work)

# Pages per child from which a split is worth a process: CPU of the children, manual-like pages, one child
# against two: 8 pages 8-12 ms / 6-8 ms each, 16 pages 18-20 / 10-14, 32 pages 37 / 17-22, 51 pages
# 60 / 31-33, 102 pages 107 / 55-58 (each extra child costs 2-3 ms of CPU; benchmarks/test_pdf_split_bench.py).
MIN_PAGES_PER_PART = 16
# A PDF smaller than this is not split (a cheap look before any child: a few pages of text weigh less).
MIN_SPLIT_BYTES = 64 * 1024
MAX_PARTS = 4
IDLE_CPUS_TO_SPLIT = 0.5     # see _parts_for


def extract_once(data: bytes, name: str, mime: str | None = None, *, limits: Limits = DEFAULT_LIMITS,
                 memory_bytes: int | None = DEFAULT_MEMORY_BYTES, grace_seconds: float = GRACE_SECONDS,
                 parts: int | None = None) -> Document:
    """Extract one file in capped child process(es); a ReaderError says why not.

    `parts`: how many children share a PDF's pages (default: the usable CPUs, at most MAX_PARTS, for a
    PDF of MIN_SPLIT_BYTES or more); each child still reads at least MIN_PAGES_PER_PART pages.
    """
    if len(data) > limits.max_bytes:
        raise ReaderError(f"{name}: " + too_large_reason(len(data), limits.max_bytes), code=ReaderCode.TOO_LARGE)
    if not forked.can_fork():
        with ExtractionPool(1, limits=limits, memory_bytes=memory_bytes, grace_seconds=grace_seconds) as pool:
            return pool.extract(data, name, mime, rows=False).document
    _preload(data)
    run = _Runner(name, limits, memory_bytes, grace_seconds, pdf=data.startswith(b"%PDF-"))
    count = _parts_for(data, parts)
    if count > 1:
        doc = _split_pdf(run, data, count)
        if doc is not None:
            return doc
    return _single(run, data, mime)


def _preload(data: bytes) -> None:
    """Import here what the children need, once: forked children share it (copy-on-write), and a
    long-lived caller (`mcp-nextcloud warm`) keeps it for every later call instead of each child
    importing it again."""
    import pickle  # noqa: F401 - each child pickles its answer (the parent unpickles it anyway)

    import mcp_nextcloud.reader.extract  # noqa: F401

    if data.startswith(b"%PDF-"):
        import mcp_nextcloud.reader.formats.pdf  # noqa: F401
        import mcp_nextcloud.reader.formats.pdfium  # noqa: F401 - the raw bindings only: pypdfium2's helpers cost ~6 ms


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _parts_for(data: bytes, parts: int | None) -> int:
    """How many children read this file: one, unless it is a PDF big enough to share between idle CPUs.

    Two children read the manual in 31-33 ms of CPU each against ~60 ms for one, but together they
    spend ~5% more CPU: on a machine whose CPUs are all busy they would only take time from others,
    and the wall time does not improve (measured at load 3-6 on 2 CPUs: 0.93-1.09x). So they split
    while the 1-minute load average leaves at least half a CPU idle (IDLE_CPUS_TO_SPLIT). Half, not
    one: the load average counts the caller itself, and an agent running one call after another keeps
    it near 1 on its own while the other CPU idles (2 CPUs at load 0.9: 0.79x the one-child wall time).
    """
    if not data.startswith(b"%PDF-"):
        return 1
    if parts is not None:
        return max(1, parts)
    if len(data) < MIN_SPLIT_BYTES:
        return 1
    cpus = _usable_cpus()
    try:
        idle = cpus - os.getloadavg()[0]
    except OSError:   # no load average on this platform: assume the CPUs are there
        idle = cpus
    return min(MAX_PARTS, cpus) if idle >= IDLE_CPUS_TO_SPLIT else 1


class _Runner:
    """Runs jobs for one file in capped children; turns a child that overran or died into its ReaderError."""

    def __init__(self, name: str, limits: Limits, memory_bytes: int | None, grace_seconds: float,
                 pdf: bool) -> None:
        self.name, self.limits, self.memory_bytes = name, limits, memory_bytes
        self.seconds = limits.max_seconds + grace_seconds
        self.pdf = pdf

    def __call__(self, jobs: list[Callable[[], Any]]) -> list[Any]:
        finished, children = forked.run(jobs, self.memory_bytes, self.seconds, keep_heap=self.pdf)
        if not finished:
            raise overran(self.name, self.limits)
        answers = []
        for child in children:
            try:
                answers.append(child.answer())
            except LookupError:
                raise died(self.name, child.exitcode, self.memory_bytes) from None
        return answers


def _single(run: _Runner, data: bytes, mime: str | None) -> Document:
    """The whole file in one child, exactly as a pool worker extracts it (indexer.jobs.child.work)."""
    def job() -> Any:
        return work(data, run.name, mime, run.limits, False)

    status, value, extra = run([job])[0]
    if status == "ok":
        assert isinstance(value, Document)
        return value
    raise reader_error(value, extra)


def _split_pdf(run: _Runner, data: bytes, count: int) -> Document | None:
    """A PDF's pages shared by `count` children; None when the single route must decide (see the module doc)."""
    def job(part: int) -> Callable[[], Any]:
        return lambda: _read_part(data, run.name, run.limits, part, count)

    answers = run([job(k) for k in range(count)])
    for status, value, extra in answers:
        if status == "error":
            raise reader_error(value, extra)
    if any(status != "ok" for status, _value, _extra in answers):
        return None
    from mcp_nextcloud.reader.extract import finish
    from mcp_nextcloud.reader.formats.pdf import assemble

    doc = assemble(run.name, run.limits, [value for _status, value, _extra in answers])
    if not doc.text.strip():   # scanned or empty: pdfminer's try and the warning belong to the single route
        return None
    return finish(doc, run.limits)


def _read_part(data: bytes, name: str, limits: Limits, part: int, parts: int) -> tuple[str, Any, Any]:
    """In a child: ("ok", PdfPart), ("error", code, parts) for what no fallback changes, else ("whole", ...)."""
    from mcp_nextcloud.reader.formats.pdf import FINAL_CODES, read_part

    try:
        return "ok", read_part(data, name, limits, part, parts, min_pages=MIN_PAGES_PER_PART), None
    except ReaderError as exc:
        if exc.code in FINAL_CODES:
            return reported(exc)
    except Exception:  # noqa: BLE001 - pdfium refused the file: the single route tries pdfminer
        pass
    return "whole", None, None
