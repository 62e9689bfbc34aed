"""OCR of one page image with Tesseract (the distribution's `tesseract` program), bounded in time and memory.

Why Tesseract from the distribution: measured against RapidOCR (ONNX models in
its wheel) on generated 150 dpi scans in benchmarks/test_ocr_bench.py, it
reads accented French and German letters (RapidOCR's bundled models read
Chinese and English only) at a lower character error rate, and it adds no
Python dependency. It runs as a child process per page, so a page that
hangs or balloons is killed (timeout, RLIMIT_AS) without the worker:
OCR_SECONDS and OCR_MEMORY bound each page. One thread per page
(OMP_THREAD_LIMIT=1): the extraction pool is already one process per core.
"""
from __future__ import annotations

import functools
import shutil
import subprocess
import sys

from typing import NamedTuple
from mcp_nextcloud.environment import for_child

DPI = 150                          # scans are rendered (PDF) and read at this resolution
OCR_SECONDS = 20.0                 # one page's OCR is killed past this
OCR_MEMORY = 512 * 1024 * 1024     # address space one page's OCR may use
WANTED_LANGUAGES = ("eng", "fra", "deu", "spa", "ita", "nld", "por")
MISSING = ("no OCR engine on this machine: scanned pages and images are not searchable; install Tesseract "
           "(Debian/Ubuntu: apt-get install tesseract-ocr tesseract-ocr-fra tesseract-ocr-deu), then "
           "re-index the files")


class OcrPage(NamedTuple):
    """What OCR read on one page: its text and the mean word confidence (0..1)."""

    text: str
    confidence: float


class OcrError(Exception):
    """OCR of a page failed (timeout, memory, a damaged image): the reason, for the document's warnings."""


@functools.cache
def engine() -> tuple[str, str] | None:
    """(name with version, languages as Tesseract's -l) of the OCR engine here, or None when there is none."""
    exe = shutil.which("tesseract")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10)
        listed = subprocess.run([exe, "--list-langs"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    words = (out.stdout or out.stderr).split()
    version = words[1] if len(words) > 1 else "?"
    have = set(listed.stdout.split()[1:])   # the first line says where the data is
    langs = [lang for lang in WANTED_LANGUAGES if lang in have] or sorted(have - {"osd"})[:1]
    if not langs:
        return None
    return f"tesseract {version}", "+".join(langs)


def _child_limits() -> None:
    """In the OCR child before exec: its address space capped (never above the worker's own cap), and on
    Linux killed with the worker (the pool kills a worker past its time cap: no orphan OCR runs on)."""
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = OCR_MEMORY if hard == resource.RLIM_INFINITY else min(OCR_MEMORY, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))   # PR_SET_PDEATHSIG


def read_tsv(tsv: str) -> OcrPage:
    """Tesseract's TSV output -> the page's text (its lines, paragraphs apart) and mean word confidence."""
    lines: dict[tuple[int, int, int], list[str]] = {}
    confs: list[float] = []
    for row in tsv.splitlines()[1:]:
        cols = row.split("\t")
        if len(cols) < 12 or cols[0] != "5" or not cols[11].strip():
            continue
        block, par, line = int(cols[2]), int(cols[3]), int(cols[4])
        lines.setdefault((block, par, line), []).append(cols[11])
        confs.append(max(0.0, float(cols[10])))
    out: list[str] = []
    last: tuple[int, int] | None = None
    for (block, par, _), words in lines.items():
        if last is not None and last != (block, par):
            out.append("")
        out.append(" ".join(words))
        last = (block, par)
    conf = sum(confs) / len(confs) / 100 if confs else 0.0
    return OcrPage("\n".join(out) + "\n" if out else "", round(conf, 3))


def ocr_image(image: bytes, seconds: float = OCR_SECONDS) -> OcrPage:
    """OCR one image (PNG/JPEG... bytes) at DPI; OcrError when it fails or runs past `seconds`."""
    found = engine()
    if found is None:
        raise OcrError(MISSING)
    exe = shutil.which("tesseract") or "tesseract"
    env = {**for_child(), "OMP_THREAD_LIMIT": "1"}
    try:
        done = subprocess.run([exe, "stdin", "stdout", "-l", found[1], "--dpi", str(DPI), "tsv"], input=image,
                              capture_output=True, timeout=seconds, env=env, preexec_fn=_child_limits)
    except subprocess.TimeoutExpired:
        raise OcrError(f"OCR of a page took over {seconds:g} s and was stopped") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise OcrError(f"OCR could not start ({type(exc).__name__})") from None
    if done.returncode != 0:
        raise OcrError(f"OCR failed on a page (tesseract exit {done.returncode}; the page may be damaged "
                       "or need more than the memory cap)")
    return read_tsv(done.stdout.decode("utf-8", "replace"))
