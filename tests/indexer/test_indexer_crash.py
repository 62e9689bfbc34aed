"""Crash safety: kill -9 of `mcp-nextcloud index add` mid-batch leaves a usable index that resumes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw

from indexer.store.index import Index

ROOT = Path(__file__).resolve().parents[2]
N_FILES = 400


def run_cli(*args: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "server", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def indexed_count(db: Path) -> int:
    try:
        con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return con.execute("SELECT count(*) FROM files WHERE status='indexed'").fetchall()[0][0]
        finally:
            con.close()
    except apsw.Error:
        return 0  # not created yet, or mid-migration


def test_kill_9_mid_index_then_resume_without_reextracting(tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(N_FILES):
        (folder / f"doc{i:04d}.md").write_text(
            f"# Document {i}\n\nUnique token zq{i}x. " + ("The slow brown heron waits by the river. " * 300))
    db = tmp_path / "crash.db"
    proc = run_cli("index", "add", str(folder), "--index", str(db), "--json")
    deadline = time.monotonic() + 120
    killed_at = 0
    while time.monotonic() < deadline and proc.poll() is None:
        killed_at = indexed_count(db)
        if killed_at >= 40:
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.005)
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL, "the indexer finished before it could be killed mid-batch"
    assert 0 < killed_at < N_FILES

    # The database opens, passes both integrity checks and answers queries.
    ix = Index.open(db)
    assert ix.writer().integrity_check() == []
    done = ix.status()["counts"].get("indexed", 0)
    assert done >= killed_at
    res = ix.grep("heron")
    assert res.total == done and res.hits[0].passages
    ix.close()

    # Resume: only what was not finished is extracted.
    proc = run_cli("index", "add", str(folder), "--index", str(db), "--json")
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    report = json.loads(out)
    assert report["scanned"] == N_FILES
    assert report["unchanged"] == done
    assert report["extracted"] == N_FILES - done
    ix = Index.open(db)
    assert ix.status()["counts"] == {"indexed": N_FILES}
    assert ix.grep(f"zq{N_FILES - 1}x").hits[0].path == f"/doc{N_FILES - 1:04d}.md"
    ix.close()
