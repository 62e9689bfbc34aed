"""The one-shot route (indexer.jobs.oneshot): forked capped children, the pool's answers, nothing left behind.

The fork route only runs in a process with one thread, which a pytest process is not guaranteed to be:
each case runs in a fresh interpreter (`_driver`) that asserts it took the fork route, and sends back
its outcome pickled. Hostile inputs are real files: a page that takes seconds inside one pdfium call
(fixtures.large_docs.slow_page_pdf), a CSV too big for a small address space.
"""
from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest

from mcp_nextcloud.reader.document import ReaderCode
from mcp_nextcloud.fixtures.large_docs import bookmarked_pdf, slow_page_pdf
from mcp_nextcloud.indexer.jobs import forked, oneshot
from mcp_nextcloud.indexer.jobs.pool import ExtractionPool
from mcp_nextcloud.reader.document import Document, ReaderError

ROOT = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024

DRIVER = """
import os, pickle, sys
from mcp_nextcloud.indexer.jobs import forked
from mcp_nextcloud.indexer.jobs.oneshot import extract_once
from mcp_nextcloud.reader.document import Limits, ReaderError
import psutil

cases = pickle.load(sys.stdin.buffer)
assert forked.can_fork(), "the driver must take the fork route"
out = []
for path, name, kwargs in cases:
    data = open(path, "rb").read()
    try:
        out.append(("ok", extract_once(data, name, None, **kwargs)))
    except ReaderError as exc:
        out.append(("error", exc.code.value, str(exc)))
    out.append(("children", [p.pid for p in psutil.Process().children()]))
sys.stdout.buffer.write(pickle.dumps(out))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "MCP_NEXTCLOUD_SERVICE": "0"}


def _driver(cases: list[tuple[Path, str, dict[str, Any]]]) -> list[Any]:
    """Run extract_once on each case in a fresh single-threaded interpreter: outcomes, each checked childless."""
    done = subprocess.run([sys.executable, "-c", DRIVER], input=pickle.dumps(cases), cwd=ROOT, env=_env(),
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    answers = pickle.loads(done.stdout)
    outcomes, leftovers = answers[0::2], answers[1::2]
    assert all(kind == "children" and pids == [] for kind, pids in leftovers), leftovers
    return outcomes


def _pool_outcome(path: Path, name: str) -> tuple[Any, ...]:
    with ExtractionPool(1) as p:
        try:
            return ("ok", p.extract(path.read_bytes(), name, None, rows=False).document)
        except ReaderError as exc:
            return ("error", exc.code.value, str(exc))


@pytest.fixture(scope="module")
def slow_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("slow") / "slow.pdf"
    path.write_bytes(slow_page_pdf())
    return path


def test_every_fixture_reads_as_through_the_pool(fixture_docs: Path, fixture_bad: Path) -> None:
    """Documents and errors (code and words) identical to the pool route's, for every fixture, good or bad."""
    files = sorted([*fixture_docs.iterdir(), *fixture_bad.iterdir()])
    outcomes = _driver([(f, f.name, {}) for f in files])
    for f, got in zip(files, outcomes, strict=True):
        assert got == _pool_outcome(f, f.name), f.name
    assert sum(o[0] == "ok" for o in outcomes) >= len(list(fixture_docs.iterdir()))
    assert {o[1] for o in outcomes if o[0] == "error"} >= {"encrypted", "corrupt", "binary", "zip_bomb"}


def test_a_pdf_split_between_children_is_the_single_childs_document(tmp_path: Path, fixture_docs: Path,
                                                                    fixture_bad: Path) -> None:
    """2 and 3 children, bookmarks across parts, tiny and scanned PDFs (the single route takes over)."""
    big = tmp_path / "bookmarked.pdf"
    big.write_bytes(bookmarked_pdf(chapters=40, sections=2, subsections=2))
    pdfs = [big, fixture_docs / "manual.pdf", fixture_docs / "tex-accents.pdf", fixture_bad / "scanned.pdf",
            fixture_bad / "damaged.pdf", fixture_bad / "encrypted.pdf", fixture_bad / "truncated.pdf"]
    cases = [(f, f.name, {"parts": parts}) for f in pdfs for parts in (1, 2, 3)]
    outcomes = _driver(cases)
    for (f, _name, kwargs), got in zip(cases, outcomes, strict=True):
        assert got == _pool_outcome(f, f.name), (f.name, kwargs)
    split = outcomes[1]   # bookmarked.pdf in two parts: a real split, bookmarks on pages of both halves
    assert split[0] == "ok" and len(split[1].pages) == 40 and len(split[1].outline) > 40


def test_a_page_that_never_ends_is_killed_at_the_deadline(slow_pdf: Path) -> None:
    from mcp_nextcloud.reader.document import Limits

    quick = Limits(max_seconds=0.3)
    outcomes = _driver([(slow_pdf, "slow.pdf", {"limits": quick, "grace_seconds": 0.0}),
                        (slow_pdf, "slow.pdf", {"limits": quick, "grace_seconds": 0.0, "parts": 2})])
    with ExtractionPool(1, limits=quick, grace_seconds=0.0) as p, pytest.raises(ReaderError) as err:
        p.extract(slow_pdf.read_bytes(), "slow.pdf", None)
    assert err.value.code is ReaderCode.TIMEOUT
    for got in outcomes:
        assert got == ("error", "timeout", str(err.value)), got
    assert str(err.value).startswith("slow.pdf: extraction took longer than 0.3 s and was stopped")


def test_memory_cap(tmp_path: Path) -> None:
    big = tmp_path / "big.csv"
    big.write_bytes(b"a,b\n" * 5_000_000)  # decoding needs far more than 64 MiB of address space
    [got] = _driver([(big, "big.csv", {"memory_bytes": 64 * MIB})])
    assert got[0] == "error" and got[1] == "memory" and got[2].endswith("; do not retry"), got


def test_too_large_is_refused_before_any_child(tmp_path: Path) -> None:
    from mcp_nextcloud.reader.document import Limits

    f = tmp_path / "big.txt"
    f.write_bytes(b"x" * 11)
    [got] = _driver([(f, "big.txt", {"limits": Limits(max_bytes=10)})])
    with ExtractionPool(1, limits=Limits(max_bytes=10)) as p, pytest.raises(ReaderError) as err:
        p.extract(b"x" * 11, "big.txt", None)
    assert got == ("error", "too_large", str(err.value))


def _grandchild(proc: subprocess.Popen[bytes]) -> psutil.Process:
    """The extraction child of `proc`, once it exists."""
    parent = psutil.Process(proc.pid)
    for _ in range(6000):
        kids = parent.children()
        if kids:
            return kids[0]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.005)
    raise AssertionError("no extraction child appeared")


def _inspect(path: Path, marker: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", "inspect", str(path), "--json"], cwd=ROOT,
                            env={**_env(), "L3_ONESHOT_MARK": marker}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)


def _gone(child: psutil.Process) -> bool:
    """Ended and reaped (a zombie still counts as there)."""
    return not child.is_running()


def _marked(marker: str) -> list[int]:
    """Processes that still carry this test's environment marker (inherited by every descendant)."""
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get("L3_ONESHOT_MARK") == marker:
                found.append(p.pid)
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found


def test_a_child_that_crashes_is_reported_as_the_pool_reports_it(slow_pdf: Path) -> None:
    """A parser crash (SIGSEGV sent to the child mid-page): exit code -11, the pool's words, nothing left."""
    marker = uuid.uuid4().hex
    proc = _inspect(slow_pdf, marker)
    child = _grandchild(proc)
    os.kill(child.pid, signal.SIGSEGV)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, (out, err)
    assert err.decode() == ""      # --json: the failure is the JSON on stdout
    error = json.loads(out)["error"]
    cause = ("slow.pdf: the extraction process died (out of memory or a crash in a parser; exit code -11, "
             "limit 1536 MiB).")
    assert error == {"code": "memory", "cause": cause, "action": "Ask for a smaller or simpler copy of the file.",
                     "retry": False, "message": f"{cause} Ask for a smaller or simpler copy of the file."}
    assert error["message"].count("slow.pdf") == 1      # named once, not once by the pool and again by inspect
    assert _gone(child) and _marked(marker) == []


def test_ctrl_c_stops_inspect_and_its_child(slow_pdf: Path) -> None:
    marker = uuid.uuid4().hex
    proc = _inspect(slow_pdf, marker)
    child = _grandchild(proc)
    os.killpg(proc.pid, signal.SIGINT)   # what a terminal does: the whole foreground group
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and err.decode().strip() == "interrupted", (out, err)
    assert _gone(child) and _marked(marker) == []


def test_inspect_leaves_no_process_behind(fixture_docs: Path) -> None:
    marker = uuid.uuid4().hex
    proc = _inspect(fixture_docs / "manual.pdf", marker)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert b'"pages":51' in out and _marked(marker) == []


def test_a_process_with_threads_goes_through_the_pool(fixture_docs: Path) -> None:
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait)
    helper.start()
    try:
        assert not forked.can_fork()
        doc = oneshot.extract_once((fixture_docs / "report.docx").read_bytes(), "report.docx")
    finally:
        stop.set()
        helper.join()
    assert isinstance(doc, Document) and "amber heron" in doc.text
    assert doc == _pool_outcome(fixture_docs / "report.docx", "report.docx")[1]



def test_only_a_big_pdf_is_shared_between_children(fixture_docs: Path) -> None:
    manual = (fixture_docs / "manual.pdf").read_bytes()
    assert len(manual) >= oneshot.MIN_SPLIT_BYTES
    assert oneshot._parts_for((fixture_docs / "report.docx").read_bytes(), None) == 1
    assert oneshot._parts_for((fixture_docs / "report.docx").read_bytes(), 3) == 1   # pages are a PDF's
    assert oneshot._parts_for((fixture_docs / "tex-accents.pdf").read_bytes(), None) == 1   # too small
    assert oneshot._parts_for(manual, 3) == 3
    assert 1 <= oneshot._parts_for(manual, None) <= min(oneshot.MAX_PARTS, oneshot._usable_cpus())


def test_no_time_limit_means_waiting_without_one(fixture_docs: Path) -> None:
    import math

    from mcp_nextcloud.reader.document import Limits

    f = fixture_docs / "notes.txt"
    [got] = _driver([(f, f.name, {"limits": Limits(max_seconds=math.inf)})])
    assert got[0] == "ok" and got[1].text == _pool_outcome(f, f.name)[1].text
