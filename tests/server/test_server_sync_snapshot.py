"""files_grep reads the sync marks once per call: one snapshot of the meta rows, handed to every part of the answer.

Counted with apsw's own statement tracer on every connection the call opens (apsw.connection_hooks), so the
count is the statements SQLite actually ran, whichever module ran them.
"""
from __future__ import annotations

from collections.abc import Iterator

import apsw
import pytest

from mcp_nextcloud.indexer.store.sync_keys import ACCOUNT_KEYS


@pytest.fixture
def marks_reads() -> Iterator[list[str]]:
    """The SQL of every statement that reads a meta row about the synced account, while the test runs."""
    seen: list[str] = []

    def tracer(_cursor: apsw.Cursor, sql: str, bindings: object) -> bool:
        values = list(bindings.values()) if isinstance(bindings, dict) else list(bindings or ())
        if "from meta" in sql.lower() and set(values) & set(ACCOUNT_KEYS):
            seen.append(sql)
        return True

    def hook(con: apsw.Connection) -> None:
        con.exec_trace = tracer

    apsw.connection_hooks.append(hook)
    try:
        yield seen
    finally:
        apsw.connection_hooks.remove(hook)


@pytest.mark.parametrize("query", ["manual", "zzqx-no-such-word"])
def test_a_grep_reads_the_sync_marks_once(call, ok, marks_reads: list[str], query: str) -> None:
    res = ok(call("files_grep", {"query": query}))
    assert (len(res["hits"]) > 0) == (query == "manual")   # the hit path and the empty-answer path both ran
    assert len(marks_reads) == 1, marks_reads


def test_the_snapshot_holds_every_mark_the_sync_wrote(ctx) -> None:
    """One read gives the same marks the single-key reads gave (the sync of the session's world wrote them)."""
    from mcp_nextcloud.indexer.remote import marks

    snap = marks.snapshot(ctx.index)
    assert snap.marks.last_sync_at is not None and snap.marks.last_full_sync_at is not None
    assert snap.marks.changes_since is not None and snap.marks.changes_since < snap.marks.last_sync_at
    assert snap.failure is None and snap.account and "alice" in snap.account
    assert snap.marks.last_sync_at == pytest.approx(marks._meta_time({"k": ctx.index.get_meta("last_sync_at")}, "k"))
