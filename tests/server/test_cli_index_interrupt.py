"""Ctrl-C during `index add` ends the build at once: workers killed, nothing left running, the index consistent.

A real `python -m mcp_nextcloud index add` gets a real SIGINT while a worker extracts a file that needs
seconds of CPU. Promptness is judged without a clock: the interrupted worker must have spent far less
CPU than the same file costs when a later run extracts it in full (a close that waited for it would
have let it finish). The interrupted file stays pending, not failed, and the next run completes it.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.indexer.test_worker_memory import large_text

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _index_add(folder: Path, db: Path, *, interrupt: bool) -> tuple[int, str, dict[int, float], list[int]]:
    """Run `index add`; with `interrupt`, SIGINT once a worker has spent 0.3 s of CPU.

    Returns (exit code, stderr, the most CPU seen per descendant, descendants still running after exit).
    """
    proc = psutil.Popen([sys.executable, "-m", "mcp_nextcloud", "index", "add", str(folder), "--index", str(db)],
                        cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    cpu: dict[int, float] = {}
    seen: dict[int, float] = {}
    sent = False
    while proc.poll() is None:
        try:
            for child in proc.children(recursive=True):
                seen.setdefault(child.pid, child.create_time())
                cpu[child.pid] = max(cpu.get(child.pid, 0.0), child.cpu_times().user)
        except psutil.Error:
            pass
        if interrupt and not sent and max(cpu.values(), default=0.0) > 0.3:
            proc.send_signal(signal.SIGINT)
            sent = True
        time.sleep(0.01)
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    left = []
    for pid, created in seen.items():
        try:
            p = psutil.Process(pid)
            if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                left.append(pid)
        except psutil.NoSuchProcess:
            pass
    return proc.returncode, stderr, cpu, left


def _status(db: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "index", "status", "--index", str(db), "--json"],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_ctrl_c_ends_a_build_at_once_and_the_next_run_completes_it(tmp_path: Path, fixture_docs: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    data = large_text(300_000)   # ~24 MB of text: seconds of CPU in a worker
    (folder / "a-large.txt").write_bytes(data)
    for name in ("manual.md", "notes.txt"):
        (folder / name).write_bytes((fixture_docs / name).read_bytes())
    db = tmp_path / "index.db"

    code, stderr, cpu, left = _index_add(folder, db, interrupt=True)
    assert code == 130 and "interrupted" in stderr, stderr[-2000:]
    assert left == [], f"still running after the interrupted `index add` exited: {left}"
    counts = _status(db)["counts"]
    assert set(counts) <= {"pending", "indexed"} and counts.get("pending", 0) >= 1, counts   # nothing failed

    code, stderr, full_cpu, left = _index_add(folder, db, interrupt=False)
    assert code == 0, stderr[-2000:]
    assert left == []
    assert _status(db)["counts"] == {"indexed": 3}
    interrupted, completed = max(cpu.values()), max(full_cpu.values())
    assert interrupted < completed / 2, (
        f"the interrupted worker spent {interrupted:.2f} s of CPU, a full extraction {completed:.2f} s: "
        "the build waited for the file in hand")
