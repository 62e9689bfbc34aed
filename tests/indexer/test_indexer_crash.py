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

from mcp_nextcloud.indexer.index import Index

ROOT = Path(__file__).resolve().parents[2]
N_FILES = 400


def run_cli(*args: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", *args], cwd=ROOT, env=env,
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


BULK_THEN_HANG = """
import sys, time
from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.indexer.models import FileMeta
from mcp_nextcloud.reader.document import Document
from mcp_nextcloud.indexer.store.prepare import prepare
ix = Index.open(sys.argv[1])
w = ix.writer()
with w.bulk():
    for i in range(300):
        rec, _ = w.upsert(FileMeta(path=f"/b{i}.txt", source="local", file_id=None, etag=None, size=1, mtime=1.0,
                                   mime="text/plain"))
        w.store(rec.id, prepare(Document(text=f"bulk heron {i} " * 50, kind="text")))
    print("in bulk", flush=True)
    time.sleep(60)
"""


def test_kill_9_during_a_bulk_load_leaves_normal_merge_settings(tmp_path):
    """A bulk load turns FTS merging down in the table's persistent config; after kill -9 a new writer restores it."""
    from mcp_nextcloud.indexer.store.writer import FTS_BULK, FTS_DEFAULTS, fts_config

    db = tmp_path / "bulk.db"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", BULK_THEN_HANG, str(db)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "in bulk", proc.stderr.read()
        con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        assert fts_config(con) == FTS_BULK      # what a killed bulk load leaves behind
        con.close()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    ix = Index.open(db)
    w = ix.writer()                              # a new writer restores the defaults at once
    assert w.call(lambda tx: fts_config(tx.con)) == FTS_DEFAULTS
    assert w.integrity_check() == []
    assert ix.grep("heron").total == 300         # every committed file is there and searchable
    ix.close()
