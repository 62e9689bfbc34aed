"""Answers an agent can trust (issue 9): no empty answer without its reason, no hit that cannot be read, no stall.

Every scenario runs the real server (in-process MCP Client) against the
emulator: a wrong app password, a server that cannot be reached, a SEARCH
that hangs (fault injection), a first sync slowed by delayed downloads, and
an index shared by a plain local folder and the account. Assertions are on
the text the agent reads.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

import anyio
import pytest

from mcp_nextcloud.indexer.jobs.pool import IN_PROCESS
from mcp_nextcloud.server.context import Settings

ALICE = "alice"
ROOT = Path(__file__).resolve().parents[2]


def _text(result: Any) -> str:
    return result.content[0].text


def _answer(payload: dict[str, Any]) -> str:
    """Everything an agent reads besides the hits: hint and warnings."""
    return " ".join([payload.get("hint") or "", *payload.get("warnings", [])])


def _serve(ctx: Any) -> Callable[[str, dict[str, Any]], Any]:
    from mcp import Client

    from mcp_nextcloud.server.app import build_server

    server = build_server(ctx)

    def call(name: str, args: dict[str, Any]) -> Any:
        async def go() -> Any:
            async with Client(server) as client:
                return await client.call_tool(name, args)
        return anyio.run(go)

    return call


@pytest.fixture
def notes_emulator(emulator_factory):
    emu = emulator_factory(seed="empty")
    emu.state.makedirs(ALICE, "/Notes")
    emu.state.put_file(ALICE, "/Notes/one.md", b"# One\n\nthe first note about herons\n")
    emu.state.put_file(ALICE, "/two.txt", b"second note about otters\n")
    return emu


def _context(emu: Any, index_path: Path, *, password: str | None = None, **settings: Any) -> Any:
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.config import Account
    from mcp_nextcloud.server.context import ServerContext

    creds = dict(emu.account(ALICE))
    if password is not None:
        creds["app_password"] = password
    return ServerContext(account=Account(**creds), index=Index.open(index_path),
                         settings=Settings(freshness_interval_s=0.0, **settings))


def _synced(emu: Any, index_path: Path) -> None:
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.config import Account

    with Index.open(index_path) as index, NextcloudClient(Account(**emu.account(ALICE))) as client:
        assert sync(client, index, pool=IN_PROCESS).complete


def _wait(predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


# -- 1. a failed sync is not "no such text" ---------------------------------------------------------------
def test_wrong_password_with_a_never_synced_index_says_why_nothing_is_found(notes_emulator, tmp_path, ok):
    """serve with a wrong app password: the background sync fails, grep says so (not "no such text")."""
    ctx = _context(notes_emulator, tmp_path / "index.db", password="wrong-password", sync_interval_s=3600.0)
    try:
        ctx.start_background_sync()
        _wait(lambda: ctx.index.get_meta("last_sync_failure"))
        res = ok(_serve(ctx)("files_grep", {"query": "install"}))
    finally:
        ctx.close()
    assert res["hits"] == []
    text = _answer(res)
    assert "could not be brought up to date" in text and "refused the credentials" in text
    assert "never been synced" in text and "not evidence" in text
    assert "nothing is indexed under /" not in text and "check the path" not in text
    assert "No indexed document contains this" not in text
    assert "Tell the user" in text  # the login is the person's step, never the agent's
    assert "wrong-password" not in _text_all(res)


def _text_all(payload: dict[str, Any]) -> str:
    return json.dumps(payload)


def test_wrong_password_from_the_host_environment_says_to_fix_the_host_config(notes_emulator, tmp_path, ok,
                                                                                 monkeypatch):
    _synced(notes_emulator, tmp_path / "index.db")
    monkeypatch.setenv("NEXTCLOUD_APP_PASSWORD", "revoked-password")
    ctx = _context(notes_emulator, tmp_path / "index.db", password="revoked-password")
    try:
        res = ok(_serve(ctx)("files_grep", {"query": "install"}))
        found = ok(_serve(ctx)("files_grep", {"query": "herons"}))
    finally:
        ctx.close()
    text = _answer(res)
    assert "could not be brought up to date" in text and "refused the credentials" in text
    assert "MCP host's configuration" in text and "NEXTCLOUD_APP_PASSWORD" in text
    assert "last synced" in text and "not evidence" in text
    assert "revoked-password" not in _text_all(res)
    # What the index holds is still answered, with the same warning.
    assert [h["path"] for h in found["hits"]] == ["/Notes/one.md"]
    assert any("could not be brought up to date" in w for w in found["warnings"])


def test_unreachable_server_answers_from_the_index_with_its_age(notes_emulator, tmp_path, ok):
    _synced(notes_emulator, tmp_path / "index.db")
    ctx = _context(notes_emulator, tmp_path / "index.db")
    notes_emulator.stop()  # connection refused from now on
    try:
        empty = ok(_serve(ctx)("files_grep", {"query": "install"}))
        found = ok(_serve(ctx)("files_grep", {"query": "otters"}))
    finally:
        ctx.close()
    text = _answer(empty)
    assert "could not be brought up to date" in text and "Could not reach the Nextcloud server" in text
    assert "last synced" in text and "ago" in text and "not evidence" in text
    assert [h["path"] for h in found["hits"]] == ["/two.txt"]


def test_a_failed_sync_is_recorded_and_cleared_by_the_next_one(notes_emulator, tmp_path):
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.config import Account
    from mcp_nextcloud.nextcloud.errors import NextcloudError

    good = Account(**notes_emulator.account(ALICE))
    bad = Account(url=good.url, user=good.user, app_password="nope")
    with Index.open(tmp_path / "index.db") as index:
        with NextcloudClient(bad) as client, pytest.raises(NextcloudError):
            sync(client, index, pool=IN_PROCESS)
        failure = json.loads(index.get_meta("last_sync_failure") or "{}")
        assert failure["kind"] == "auth" and "credentials" in failure["message"] and failure["at"]
        with NextcloudClient(good) as client:
            assert sync(client, index, pool=IN_PROCESS).complete
        assert index.get_meta("last_sync_failure") == ""


# -- 2. cold start ----------------------------------------------------------------------------------------
def test_first_grep_during_a_slow_first_sync_says_it_is_running_and_how_far(emulator_factory, tmp_path, ok):
    emu = emulator_factory(seed="empty")
    emu.state.put_file(ALICE, "/a-fast.txt", b"a note about kingfishers\n")
    for i in range(4):
        emu.state.put_file(ALICE, f"/slow-{i}.txt", f"slow file {i} about zebras\n".encode())
        emu.faults.add(method="GET", path_prefix=f"/remote.php/dav/files/alice/slow-{i}", delay=4.0)
    ctx = _context(emu, tmp_path / "index.db", sync_interval_s=3600.0)
    try:
        ctx.start_background_sync()
        _wait(lambda: (rec := ctx.index.get_file(path="/a-fast.txt")) is not None and rec.status == "indexed")
        call = _serve(ctx)
        empty = ok(call("files_grep", {"query": "zebras"}))
        partial = ok(call("files_grep", {"query": "kingfishers"}))
        names = ok(call("files_search", {"name": "fast"}))
    finally:
        ctx.close()
    assert empty["hits"] == []
    text = _answer(empty)
    assert "first sync of this account is running" in text and "files known so far are done" in text
    assert "of 5 files" in text and "Retry in about" in text and "not evidence" in text
    assert "No indexed document contains this" not in text
    # Where the index has something it answers, and says the answer is partial.
    assert [h["path"] for h in partial["hits"]] == ["/a-fast.txt"]
    assert "index is partial" in " ".join(partial["warnings"]) and "incomplete" in partial["hint"]
    assert any("first sync" in w for w in names.get("warnings", []))


# -- 4. no stall: the freshness check is bounded ----------------------------------------------------------
def test_a_hanging_search_costs_about_a_second_not_the_request_deadline(world, ctx, ok):
    ctx.settings = Settings(freshness_interval_s=0.0, best_effort_s=1.0)
    hang = world.emulator.faults.add(method="SEARCH", delay=20.0, times=5)
    call = _serve(ctx)
    t0 = time.monotonic()
    res = ok(call("files_grep", {"query": "quota"}))
    took = time.monotonic() - t0
    assert res["hits"], "answered from the index"
    assert any("did not answer within 1 s" in w and "from the index" in w for w in res["warnings"])
    assert hang.times == 4, "one attempt, no retry on the hot path"  # the log only counts answered requests
    assert took < 10.0, f"the answer waited on the hung server ({took:.1f} s)"  # the fault answers after 20 s
    # The next grep, before the check is due again, does not ask, and still says the server was not asked.
    ctx.settings = Settings(freshness_interval_s=3600.0)
    again = ok(call("files_grep", {"query": "quota"}))
    assert hang.times == 4 and any("did not answer within 1 s" in w for w in again["warnings"])


def test_a_hanging_download_of_a_changed_file_is_named_not_waited_for(notes_emulator, tmp_path, ok):
    _synced(notes_emulator, tmp_path / "index.db")
    notes_emulator.state.put_file(ALICE, "/Notes/late.md", b"a late note about walruses\n", mtime=time.time() + 5)
    hang = notes_emulator.faults.add(method="GET", path_prefix="/remote.php/dav/files/alice/Notes/late", delay=20.0)
    ctx = _context(notes_emulator, tmp_path / "index.db")
    try:
        t0 = time.monotonic()
        res = ok(_serve(ctx)("files_grep", {"query": "walruses"}))
        took = time.monotonic() - t0
    finally:
        ctx.close()
    assert hang.times == 0 and res["hits"] == []
    assert any("not searched yet: /Notes/late.md" in w and "files_read" in w for w in res["warnings"])
    assert took < 10.0, f"the answer waited on the hung download ({took:.1f} s)"


def test_files_search_fallback_does_not_stall_either(world, ctx, ok):
    ctx.settings = Settings(freshness_interval_s=0.0, best_effort_s=1.0)
    world.emulator.faults.add(method="SEARCH", delay=20.0, times=5)
    res = ok(_serve(ctx)("files_search", {"name": "no-such-name-anywhere"}))
    assert res["files"] == [] and "not evidence" in res["hint"]
    assert any("did not answer within 1 s" in w for w in res["warnings"])


# -- 3. every hit can be read -------------------------------------------------------------------------------
def test_plain_local_folder_and_account_share_an_index_and_every_hit_reads(emulator, tmp_path, ok):
    """The README's trial (index add fixtures/docs) then an account sync, into one database."""
    from mcp_nextcloud.indexer.local.folder import index_folder
    from mcp_nextcloud.indexer.index import Index

    index_path = tmp_path / "shared.db"
    with Index.open(index_path) as index:
        index_folder(index, ROOT / "mcp_nextcloud" / "fixtures" / "docs", progress=None)
        assert index.get_file(path="/notes.txt") is not None  # the plain folder's copy, no fileId
    _synced(emulator, index_path)
    ctx = _context(emulator, index_path)
    call = _serve(ctx)
    read = 0
    try:
        for query in ("badger", "budget", "manual", "report", "slides", "data"):
            res = ok(call("files_grep", {"query": query, "limit": 20}))
            for hit in res["hits"]:
                assert hit["fileId"] is not None, hit
                by_path = ok(call("files_read", {"path": hit["path"], "limit": 200}))
                by_id = ok(call("files_read", {"fileId": hit["fileId"], "limit": 200}))
                assert by_path["path"] == by_id["path"] == hit["path"]
                read += 1
        names = ok(call("files_search", {"name": "notes"}))
    finally:
        ctx.close()
    assert read >= 6
    assert all(f["fileId"] is not None for f in names["files"]) and names["files"]
    assert "/notes.txt" not in [f["path"] for f in names["files"]]


# -- 5. empty answers caused by filters name the filter ---------------------------------------------------
def test_files_search_mime_is_checked_locally_and_suggests_the_type(world, ctx, err):
    world.emulator.reset_requests()
    text = err(_serve(ctx)("files_search", {"mime": "pdf"}))
    assert "application/pdf" in text and "Do not repeat this call unchanged" in text
    assert world.emulator.request_count("SEARCH") == 0


def test_grep_path_naming_a_file_says_it_is_a_file(world, ctx, ok):
    call = _serve(ctx)
    res = ok(call("files_grep", {"query": "zzqqxx-nowhere", "path": "/Documents/notes.txt"}))
    assert res["hits"] == [] and "is a file, not a folder" in res["hint"] and "files_read" in res["hint"]
    assert "does not exist" not in _answer(res)
    inside = ok(call("files_grep", {"query": "badger", "path": "/Documents/notes.txt"}))
    assert [h["path"] for h in inside["hits"]] == ["/Documents/notes.txt"]


def test_grep_path_naming_a_file_the_index_does_not_know(world, ctx, ok):
    world.emulator.state.put_file(ALICE, "/Documents/unindexed-trust.txt", b"fresh words\n", mtime=1.0)
    res = ok(_serve(ctx)("files_grep", {"query": "zzqqxx-nowhere", "path": "/Documents/unindexed-trust.txt"}))
    assert "is a file, not a folder" in res["hint"]


# -- 8. the hint matches the answer -----------------------------------------------------------------------
def test_hint_speaks_of_more_only_when_a_hit_has_more(world, ctx, ok):
    call = _serve(ctx)
    single = ok(call("files_grep", {"query": "badger"}))
    assert single["hits"] and not any(h["more"] for h in single["hits"])
    assert "more=true" not in single["hint"] and "files_read(path, offset=...)" in single["hint"]
    many = ok(call("files_grep", {"query": "quota"}))
    assert any(h["more"] for h in many["hits"]) and "more=true" in many["hint"]


def test_a_refused_password_from_the_host_environment_in_a_tool_error(notes_emulator, tmp_path, err, monkeypatch):
    """files_read fails outright with a revoked password: the error points at the host's configuration."""
    monkeypatch.setenv("NEXTCLOUD_APP_PASSWORD", "revoked-password")
    ctx = _context(notes_emulator, tmp_path / "index.db", password="revoked-password")
    try:
        text = err(_serve(ctx)("files_read", {"path": "/two.txt"}))
    finally:
        ctx.close()
    assert "refused the credentials" in text and "MCP host's configuration" in text and "NEXTCLOUD_APP_PASSWORD" in text
    assert "Do not retry" in text and "revoked-password" not in text


def test_a_refused_password_of_a_team_server_person_says_to_sign_in_again(notes_emulator, tmp_path, ok, err,
                                                                          monkeypatch):
    """On the team server a person's password came from their sign-in (team/people.py sets TEAM_SIGN_IN in their
    calls): a refused one is answered with signing in again from the MCP client, not with the single-user
    advice about NEXTCLOUD_APP_PASSWORD or `mcp-nextcloud login` on a machine they never see."""
    from mcp_nextcloud.server.tools.files.coverage import TEAM_SIGN_IN

    _synced(notes_emulator, tmp_path / "index.db")
    monkeypatch.setenv("NEXTCLOUD_APP_PASSWORD", "revoked-password")
    monkeypatch.setenv(TEAM_SIGN_IN, "1")
    ctx = _context(notes_emulator, tmp_path / "index.db", password="revoked-password")
    try:
        grep = _answer(ok(_serve(ctx)("files_grep", {"query": "install"})))
        read = err(_serve(ctx)("files_read", {"path": "/two.txt"}))
    finally:
        ctx.close()
    for text in (grep, read):
        assert "refused the credentials" in text and "Signed out: sign in again from your MCP client" in text, text
        assert "NEXTCLOUD_APP_PASSWORD" not in text and "mcp-nextcloud login" not in text, text
        assert "revoked-password" not in text
