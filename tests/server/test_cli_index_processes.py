"""`index add` leaves no process behind: the extraction pool's workers, forkserver and helpers end with it.

A real `python -m mcp_nextcloud index add` over files that need the capped workers (PDF, DOCX); every
descendant seen while it ran must be gone the moment it has exited.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]


def test_index_add_leaves_no_process_behind(tmp_path: Path, fixture_docs: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("manual.pdf", "report.docx", "slides.pptx", "notes.txt"):
        (folder / name).write_bytes((fixture_docs / name).read_bytes())
    proc = psutil.Popen([sys.executable, "-m", "mcp_nextcloud", "index", "add", str(folder), "--index",
                         str(tmp_path / "index.db")], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    seen: dict[int, float] = {}
    while proc.poll() is None:
        try:
            for child in proc.children(recursive=True):
                seen.setdefault(child.pid, child.create_time())
        except psutil.Error:
            pass
        time.sleep(0.01)
    assert proc.returncode == 0
    assert seen, "no worker process was seen: the test would prove nothing"
    left = []
    for pid, created in seen.items():
        try:
            p = psutil.Process(pid)
            if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:   # not a reused pid
                left.append((pid, p.cmdline()))
        except psutil.NoSuchProcess:
            pass
    assert left == [], f"still running after `index add` exited: {left}"
