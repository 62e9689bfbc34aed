"""The index is the full text of every document: private file modes, repaired on open (issue 10, item 11)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


@pytest.fixture
def loose_umask():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_new_index_is_private(tmp_path, loose_umask):
    from mcp_nextcloud.indexer.index import Index

    folder = tmp_path / "data" / "mcp-nextcloud"
    with Index.open(folder / "local.db") as index:
        index.writer()   # opens the write connection: -wal and -shm exist now
        assert index.notes == []
    assert _mode(folder) == 0o700
    created = [p for p in folder.iterdir() if p.name.startswith("local.db")]
    assert {p.name for p in created} >= {"local.db"}
    for p in created:
        assert _mode(p) == 0o600, p


def test_looser_modes_are_repaired_on_open_with_a_note(tmp_path, loose_umask):
    from mcp_nextcloud.indexer.index import Index

    db = tmp_path / "local.db"
    Index.open(db).close()
    for p in [db, db.with_name("local.db-wal"), db.with_name("local.db-shm")]:
        if p.exists():
            p.chmod(0o644)
    with Index.open(db) as index:
        assert any("mode is now 600" in n and str(db) in n for n in index.notes)
    assert _mode(db) == 0o600


def test_a_folder_chosen_by_the_person_is_left_alone(tmp_path, loose_umask):
    from mcp_nextcloud.indexer.index import Index

    tmp_path.chmod(0o755)
    Index.open(tmp_path / "mine.db").close()
    assert _mode(tmp_path) == 0o755 and _mode(tmp_path / "mine.db") == 0o600


def test_default_data_folder_is_tightened(tmp_path, loose_umask, monkeypatch):
    from mcp_nextcloud.indexer.store.filemodes import secure_database

    home = tmp_path / "share" / "mcp-nextcloud"
    home.mkdir(parents=True)
    home.chmod(0o755)
    monkeypatch.setattr("mcp_nextcloud.indexer.store.filemodes.default_data_dir", lambda: home)
    notes = secure_database(home / "local.db")
    assert _mode(home) == 0o700 and any("data folder" in n for n in notes)


def test_call_log_and_job_store_are_private(tmp_path, loose_umask):
    from mcp_nextcloud.indexer.jobs.store import JobStore
    from mcp_nextcloud.server.telemetry import CallLog

    CallLog(tmp_path / "logs" / "calls.sqlite").close()
    JobStore(tmp_path / "jobs" / "jobs.db")
    assert _mode(tmp_path / "logs") == 0o700 and _mode(tmp_path / "logs" / "calls.sqlite") == 0o600
    assert _mode(tmp_path / "jobs" / "jobs.db") == 0o600


def test_index_cli_prints_the_repair_note(tmp_path):
    db = tmp_path / "cli.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MCP_NEXTCLOUD_INDEX": str(db)}
    # `index status` reads an index, it does not create one (a typo'd path must not make a database).
    missing = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "index", "status"], env=env, cwd=str(ROOT),
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "no index at" in missing.stderr and not db.exists()
    (tmp_path / "empty").mkdir()
    subprocess.run([sys.executable, "-m", "mcp_nextcloud", "index", "add", str(tmp_path / "empty")], env=env,
                   cwd=str(ROOT), capture_output=True, text=True, timeout=60, check=True)
    db.chmod(0o644)
    proc = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "index", "status"], env=env, cwd=str(ROOT),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "mode is now 600" in proc.stderr, proc.stderr
    assert _mode(db) == 0o600
