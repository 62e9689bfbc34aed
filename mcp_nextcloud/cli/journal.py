"""A durable per-item journal for CLI batches: what was started, what completed, with what result.

One small SQLite file (stdlib sqlite3, WAL, one row per batch item). An item
is marked `started` (with the resolved target and what already existed there)
before its write and `done` after, each in its own committed transaction, so
a batch killed at any instant is rerun without replaying a completed item:
`done` items are reported from here, and a `started` one is reconciled by
reading the server's state before anything is written again.
"""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any
from mcp_nextcloud.environment import environ, user_dir
from mcp_nextcloud.cli.console import current

STARTED, DONE, FAILED = "started", "done", "failed"


def default_journal_path() -> Path:
    """$MCP_NEXTCLOUD_JOURNAL, else batches.sqlite in the platform data directory."""
    env = environ().get("MCP_NEXTCLOUD_JOURNAL")
    if env:
        return current().path(env)

    return user_dir("data") / "batches.sqlite"


class Journal:
    """Item states of batches, keyed by (batch id, caller's item id)."""

    def __init__(self, path: Path) -> None:
        from mcp_nextcloud.indexer.store.filemodes import secure_database

        secure_database(path)   # 0700 folder, 0600 file and side files: it names the cards being made
        self._db = sqlite3.connect(str(path), timeout=10, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")   # a `done` row must survive a power cut
        self._db.execute("CREATE TABLE IF NOT EXISTS items (batch TEXT, item TEXT, state TEXT, target TEXT, "
                         "result TEXT, updated REAL, PRIMARY KEY (batch, item))")

    def get(self, batch: str, item: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT state, target, result FROM items WHERE batch=? AND item=?",
                               (batch, item)).fetchone()
        if row is None:
            return None
        return {"state": row[0], "target": json.loads(row[1] or "null"), "result": json.loads(row[2] or "null")}

    def mark(self, batch: str, item: str, state: str, *, target: Any = None, result: Any = None) -> None:
        """Record an item's state durably (committed before returning)."""
        self._db.execute("INSERT INTO items (batch, item, state, target, result, updated) VALUES (?,?,?,?,?,?) "
                         "ON CONFLICT (batch, item) DO UPDATE SET state=excluded.state, "
                         "target=coalesce(excluded.target, items.target), result=excluded.result, "
                         "updated=excluded.updated",
                         (batch, item, state, None if target is None else json.dumps(target),
                          None if result is None else json.dumps(result), time.time()))

    def states(self, batch: str) -> dict[str, str]:
        return dict(self._db.execute("SELECT item, state FROM items WHERE batch=?", (batch,)).fetchall())

    def close(self) -> None:
        self._db.close()
