"""files_grep's view of the server between syncs: changes during a sync, deletions, folders that do not exist.

Each test drives the real server through the in-process MCP Client against the
emulator; the ones that need a sync of their own use a small emulator and index
so the shared session index stays as the other tests expect it.
"""
from __future__ import annotations

import re
import time
import uuid
from typing import Any

import anyio
import pytest

from mcp_nextcloud.indexer.jobs.pool import IN_PROCESS
from mcp_nextcloud.server.context import Settings

ALICE = "alice"


def _word(stem: str) -> str:
    return stem + uuid.uuid4().hex[:6]


@pytest.fixture
def small(emulator_factory, tmp_path):
    """(emulator, index, call) on an emulator holding two small notes, not yet synced."""
    from mcp import Client

    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.config import Account
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    emu = emulator_factory(seed="empty")
    emu.state.makedirs(ALICE, "/Notes")
    emu.state.put_file(ALICE, "/Notes/one.md", b"# One\n\nthe first note about herons\n")
    emu.state.put_file(ALICE, "/two.txt", b"second note about otters\n")
    index = Index.open(tmp_path / "index.db")
    ctx = ServerContext(account=Account(**emu.account(ALICE)), index=index,
                        settings=Settings(freshness_interval_s=0.0))
    server = build_server(ctx)

    def call(name: str, args: dict[str, Any]) -> Any:
        async def go() -> Any:
            async with Client(server) as client:
                return await client.call_tool(name, args)
        return anyio.run(go)

    yield emu, ctx, call
    ctx.close()


def test_grep_finds_a_file_changed_while_the_sync_was_running(small, ok):
    from mcp_nextcloud.indexer.remote.sync import sync

    emu, ctx, call = small
    word = _word("kingfisher")
    changed: list[str] = []

    def edit_while_walking(done: int, total: int, path: str) -> None:
        if not changed:  # after the root was listed: this sync cannot see the new file
            emu.state.put_file(ALICE, "/late.md", f"written during the sync: a {word}".encode(), mtime=time.time())
            changed.append("/late.md")
            time.sleep(1.1)  # the sync finishes a second later: a finish-time mark would miss the file

    report = sync(ctx.client(), ctx.index, pool=IN_PROCESS, progress=edit_while_walking)
    assert report.complete and ctx.index.get_file(path="/late.md") is None
    res = ok(call("files_grep", {"query": word}))
    assert [h["path"] for h in res["hits"]] == ["/late.md"]


def test_a_file_deleted_after_the_sync_is_not_a_hit(small, ok, err):
    """Issue 22, item 6: the hits are checked against the server (one SEARCH on their fileIds)."""
    from mcp_nextcloud.indexer.remote.sync import sync

    emu, ctx, call = small
    assert sync(ctx.client(), ctx.index, pool=IN_PROCESS).complete
    first = ok(call("files_grep", {"query": "herons"}))
    assert [h["path"] for h in first["hits"]] == ["/Notes/one.md"]
    assert not any("deleted" in w for w in first.get("warnings", []))   # the sync is fresh: nothing to say
    emu.state.delete(ALICE, "/Notes/one.md")
    ctx.settings = Settings(freshness_interval_s=3600.0, stale_after_s=0.0)   # the check is not due either
    gone = ok(call("files_grep", {"query": "herons"}))
    assert gone["hits"] == [] and gone["total"] == 0
    assert any("no longer has" in w and "/Notes/one.md" in w for w in gone["warnings"])
    assert ctx.index.get_file(path="/Notes/one.md") is None, "dropped from the index at once"
    text = err(call("files_read", {"path": "/Notes/one.md"}))
    assert "files_search" in text and "Do not repeat this call unchanged" in text


def test_hits_the_server_cannot_vouch_for_are_warned_about(small, ok):
    from mcp_nextcloud.indexer.remote.sync import sync

    emu, ctx, call = small
    assert sync(ctx.client(), ctx.index, pool=IN_PROCESS).complete
    emu.faults.add(method="SEARCH", status=503, times=5)
    ctx.settings = Settings(freshness_interval_s=0.0, stale_after_s=0.0)
    stale = ok(call("files_grep", {"query": "herons"}))
    assert [h["path"] for h in stale["hits"]] == ["/Notes/one.md"]
    last = ctx.index.get_meta("last_full_sync_at")
    assert any("deleted on the server since the last full sync" in w and last in w for w in stale["warnings"])


def test_a_deleted_file_read_by_file_id_is_dropped_too(small, ok, err):
    from mcp_nextcloud.indexer.remote.sync import sync

    emu, ctx, call = small
    assert sync(ctx.client(), ctx.index, pool=IN_PROCESS).complete
    hit = ok(call("files_grep", {"query": "otters"}))["hits"][0]
    emu.state.delete(ALICE, "/two.txt")
    assert "files_search" in err(call("files_read", {"fileId": hit["fileId"]}))
    assert ok(call("files_grep", {"query": "otters"}))["hits"] == []


@pytest.mark.parametrize("fresh_check", [True, False], ids=["freshness-search", "stat"])
def test_grep_in_a_folder_the_server_does_not_have(small, err, fresh_check):
    from mcp_nextcloud.indexer.remote.sync import sync

    emu, ctx, call = small
    assert sync(ctx.client(), ctx.index, pool=IN_PROCESS).complete
    if not fresh_check:  # the freshness check ran a moment ago: the folder is checked by one PROPFIND
        ctx.settings = Settings(freshness_interval_s=3600.0)
        assert ctx.claim_fresh_check(3600.0) and not ctx.claim_fresh_check(3600.0)
    emu.reset_requests()
    text = err(call("files_grep", {"query": "herons", "path": "/No-such-folder"}))
    assert "/No-such-folder does not exist on the server" in text and "files_search" in text
    assert "Do not repeat this call unchanged" in text
    assert "Could not ask" not in text and "mcp-nextcloud" not in text
    # The freshness check (the root's etag, then the SEARCH, which cannot tell a missing folder from a file),
    # then one PROPFIND that can; an empty answer asks even when the check is not due (a file added since
    # would be missed).
    assert emu.request_count("SEARCH") == 1 and emu.request_count("GET", "/remote.php") == 0, emu.requests
    assert emu.request_count("PROPFIND") == 2, emu.requests
    assert ctx.telemetry is None or ctx.telemetry.rows()[-1]["kind"] == "misuse"


def test_grep_in_an_existing_folder_with_nothing_indexed_points_at_tools(small, ok):
    emu, ctx, call = small
    emu.state.makedirs(ALICE, "/Empty")     # never synced: no freshness check, the folder is stat-ed
    res = ok(call("files_grep", {"query": "herons", "path": "/Empty"}))
    assert res["hits"] == [] and "files_search" in res["hint"] and "files_read" in res["hint"]
    answer = " ".join([res["hint"], *res.get("warnings", [])])
    assert "mcp-nextcloud" not in answer and "index add" not in answer
    assert not any(w.lower().startswith("nothing is indexed") for w in res.get("warnings", []))


def test_tool_answers_never_carry_cli_steps():
    from mcp_nextcloud.nextcloud.errors import error_for, no_credentials
    from mcp_nextcloud.cli.errors import person_text
    from mcp_nextcloud.server.errors import from_nextcloud

    for err in (error_for("webdav", 401), no_credentials()):
        agent, person = str(from_nextcloud(err)), person_text(err)
        assert agent.startswith(err.cause) and person.startswith(err.cause)
        assert "Tell the user (no tool can do this) to run `mcp-nextcloud login URL`" in agent
        assert "Run `mcp-nextcloud login URL`" in person and "Tell the user" not in person
        # The retry is a field: the agent is told explicitly, the person only when trying again helps.
        said = "Do not repeat this call unchanged." if err.category.value == "misuse" else "Do not retry."
        assert agent.endswith(said) and "retry" not in person.lower()
        assert "repeat" not in person.lower()


def test_a_file_uploaded_inside_the_check_interval_is_found_by_the_next_grep(small, ok):
    """Issue 22, item 6: an empty answer asks the server now, whatever the interval (a PDF just uploaded)."""
    from mcp_nextcloud.indexer.remote.sync import sync

    emu, ctx, call = small
    assert sync(ctx.client(), ctx.index, pool=IN_PROCESS).complete
    ctx.settings = Settings(freshness_interval_s=3600.0)
    assert ok(call("files_grep", {"query": "herons"}))["hits"]          # this grep used the check
    word = _word("pelican")
    emu.state.put_file(ALICE, "/Notes/new.md", f"just uploaded: a {word}".encode(), mtime=time.time() + 2)
    found = ok(call("files_grep", {"query": word}))
    assert [h["path"] for h in found["hits"]] == ["/Notes/new.md"]
    assert "No indexed document contains this" not in found["hint"]


def test_hits_say_when_the_server_was_last_asked_only_when_that_is_older_than_the_interval(small, ok):
    """Issue 36: an answer inside the check interval is as fresh as promised and carries no warning; one whose
    last check is older than the interval (it failed since, or has not finished) says when it was."""
    from mcp_nextcloud.indexer.remote.sync import sync

    emu, ctx, call = small
    assert sync(ctx.client(), ctx.index, pool=IN_PROCESS).complete
    ctx.settings = Settings(freshness_interval_s=3600.0)
    first = ok(call("files_grep", {"query": "herons"}))
    assert not any("last asked" in w for w in first.get("warnings", []))   # asked during this call
    again = ok(call("files_grep", {"query": "otters"}))
    assert again["hits"] and not any("last asked" in w for w in again.get("warnings", []))   # 0 s ago
    ctx.last_checked_at = time.time() - 7200      # the last check that reached the server: two hours ago
    stale = ok(call("files_grep", {"query": "otters"}))
    assert any("The server was last asked what changed at" in w and re.search(r"\(72\d\d s ago\)", w)
               for w in stale["warnings"])


def test_a_file_uploaded_a_second_before_a_question_with_other_hits_is_found(small, ok):
    """Issue 48: inside the check interval an answer with hits used to miss a file uploaded a moment before
    (for up to the interval, silently); the account root's etag (one PROPFIND) tells the grep to look now."""
    from mcp_nextcloud.indexer.remote.sync import sync

    emu, ctx, call = small
    assert sync(ctx.client(), ctx.index, pool=IN_PROCESS).complete
    ctx.settings = Settings(freshness_interval_s=3600.0)
    assert ok(call("files_grep", {"query": "note"}))["hits"]            # this grep used the check
    emu.state.put_file(ALICE, "/Notes/fresh.md", b"a new note about herons and kingfishers\n", mtime=time.time() + 2)
    found = ok(call("files_grep", {"query": "note"}))
    assert "/Notes/fresh.md" in [h["path"] for h in found["hits"]]
    quiet = ok(call("files_grep", {"query": "note"}))                   # nothing moved since: no second SEARCH
    assert "/Notes/fresh.md" in [h["path"] for h in quiet["hits"]]
