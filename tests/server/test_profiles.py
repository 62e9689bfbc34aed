"""Least-privilege profiles (issue 27): the jail, read-only and the tool allowlist, attacked.

One emulator with files that only look inside /Projects (/Projects-old, a Cyrillic "о", other case),
one index synced from it (the jailed server reads the same index), and every file tool called through
a real in-process MCP client under `profile.using(...)`. A file outside must be answered exactly as a
missing one: each test compares with the answer for a path that does not exist at all.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from mcp_nextcloud.fixtures.emulator.server import Emulator
from mcp_nextcloud.server.profile import Profile, build
from tests.helpers import list_and_call

SECRET = "zanzibar"          # a word only files outside the jail contain
LOOKALIKE = "/Prоjects"      # Cyrillic о (U+043E)
OUTSIDE = ["/Projects-old/plan.md", f"{LOOKALIKE}/plan.md", "/projects/plan.md", "/Documents/secret.md"]
JAIL = Profile(name="projects", folders=("/Projects",))


@pytest.fixture(scope="module")
def jail_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.config import Account

    with Emulator() as emu:
        for path in OUTSIDE:
            emu.state.makedirs("alice", path.rsplit("/", 1)[0])
            emu.state.put_file("alice", path, f"# Plan\n\nThe {SECRET} plan, outside.\n".encode())
        emu.state.put_file("alice", "/Projects/Alpha/inside.md", b"# Inside\n\nThe alpha widget plan.\n")
        creds = emu.account("alice")
        account = Account(url=creds["url"], user=creds["user"], app_password=creds["app_password"])
        index_path = tmp_path_factory.mktemp("jail") / "index.db"
        with Index.open(index_path) as index, NextcloudClient(account) as client:
            assert sync(client, index).complete
        yield {"emu": emu, "account": account, "index": index_path}


@pytest.fixture
def jail_ctx(jail_world: dict[str, Any], tmp_path: Path) -> Iterator[Any]:
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.server.context import ServerContext, Settings
    from mcp_nextcloud.server.telemetry import CallLog

    ctx = ServerContext(account=jail_world["account"], index=Index.open(jail_world["index"]),
                        telemetry=CallLog(tmp_path / "calls.sqlite"),
                        settings=Settings(freshness_interval_s=0.0, best_effort_s=5.0))
    yield ctx
    ctx.close()


def _client(ctx: Any, as_profile: Profile, mail: bool = False) -> Any:
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.mail_app import build_mail_server

    server = build_mail_server(ctx) if mail else build_server(ctx)
    return lambda calls: list_and_call(server, calls, as_profile)


def _text(result: Any) -> str:
    return result.content[0].text


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, _text(result)
    return json.loads(_text(result))


# -- the one path rule -------------------------------------------------------------------------------

@pytest.mark.parametrize("path, allowed", [
    ("/Projects", True), ("/Projects/", True), ("//Projects//Alpha/", True), ("/Projects/./Alpha", True),
    ("Projects/Alpha", True), ("/Proje\u0301cts", False), ("/Projects-old", False), ("/Projects-old/x", False),
    ("/projects/Alpha", False), ("/PROJECTS", False), (LOOKALIKE, False), ("/Ｐrojects", False),
    ("/Projects/../Documents", False), ("/Projects/Alpha/../../Documents/secret.md", False), ("/", False),
    ("/Documents", False), ("", False), (None, False), ("/Projects\x00/x", False),
])
def test_allows_is_the_nextcloud_name_rule(path: Any, allowed: bool) -> None:
    assert JAIL.allows(path) is allowed


def test_nfc_forms_of_one_name_are_the_same_folder() -> None:
    decomposed = build("p", folders=["/Re\u0301sume\u0301s"])   # e + combining accent: NFC makes it é
    assert decomposed.folders == ("/Résumés",) and decomposed.allows("/Résumés/cv.md")


def test_scopes_of_a_listing() -> None:
    two = build("two", folders=["/Work/Scans", "/Projects"])
    assert two.scopes(None) == ["/Work/Scans", "/Projects"]
    assert two.scopes("/Work") == ["/Work/Scans"]
    assert two.scopes("/Projects/Alpha") == ["/Projects/Alpha"]
    assert two.scopes("/Projects-old") == [] and two.scopes("/Documents") == []


def test_unknown_tools_and_bad_folders_are_refused_when_the_profile_is_built() -> None:
    with pytest.raises(ValueError, match="unknown tool name.*files_delete"):
        build("x", tools=["files_read", "files_delete"], known_tools=["files_read", "files_grep"])
    with pytest.raises(ValueError, match="not a folder path"):
        build("x", folders=["/Projects/../Documents"])


# -- the jail, by every file tool ---------------------------------------------------------------------

def test_reading_outside_is_answered_as_a_missing_file(jail_ctx: Any, jail_world: dict[str, Any]) -> None:
    jail_world["emu"].reset_requests()
    run = _client(jail_ctx, JAIL)
    calls = [("files_read", {"path": p}) for p in OUTSIDE + ["/Projects/../Documents/secret.md"]]
    _, results = run(calls + [("files_read", {"path": "/Projects/Alpha/inside.md"})])
    *outside, inside = results
    assert "alpha widget" in _data(inside)["content"]
    _, (missing,) = _client(jail_ctx, Profile())([("files_read", {"path": "/Nowhere/plan.md"})])
    for path, result in zip(OUTSIDE, outside, strict=False):
        assert result.is_error
        assert _text(result) == _text(missing).replace("/Nowhere/plan.md", path)   # word for word
    assert SECRET not in " ".join(_text(r) for r in outside)
    asked = [p for _m, p, _s in jail_world["emu"].requests]
    assert not any(name in p for p in asked for name in ("Projects-old", "secret.md", "/projects/"))  # never asked


def test_file_ids_outside_are_answered_as_unknown_ids(jail_ctx: Any) -> None:
    outside_id = jail_ctx.index.get_file(path="/Documents/secret.md").file_id
    inside_id = jail_ctx.index.get_file(path="/Projects/Alpha/inside.md").file_id
    run = _client(jail_ctx, JAIL)
    _, (read, write, share, ok_read, unknown) = run([
        ("files_read", {"fileId": outside_id}),
        ("files_write", {"fileId": outside_id, "content": "overwritten", "etag": '"x"'}),
        ("files_share_internal", {"fileId": outside_id, "shareWith": "bob"}),
        ("files_read", {"fileId": inside_id}),
        ("files_read", {"fileId": 987654321}),
    ])
    assert "alpha widget" in _data(ok_read)["content"]
    for result in (read, write, share):
        assert result.is_error
        assert _text(result) == _text(unknown).replace("987654321", str(outside_id))


def test_grep_and_search_never_show_what_is_outside(jail_ctx: Any) -> None:
    run = _client(jail_ctx, JAIL)
    _, (grep, grep_root, search, names, inside) = run([
        ("files_grep", {"query": SECRET}),
        ("files_grep", {"query": SECRET, "path": "/"}),
        ("files_search", {"name": "plan"}),
        ("files_search", {"name": "secret"}),
        ("files_grep", {"query": "widget"}),
    ])
    for result in (grep, grep_root):
        data = _data(result)
        assert data["hits"] == [] and data["total"] == 0 and not data.get("sources")
        assert not any(name in _text(result) for name in ("Documents", "Projects-old", "plan.md", LOOKALIKE))
    assert all(f["path"].startswith("/Projects/") for f in _data(search)["files"])
    assert _data(names)["files"] == []
    hits = _data(inside)["hits"]
    assert hits and all(h["path"].startswith("/Projects/") for h in hits)


@pytest.mark.parametrize("folder", ["/Projects-old", LOOKALIKE, "/projects", "/Documents", "/Projects/../Documents"])
def test_a_folder_outside_is_answered_as_a_folder_that_does_not_exist(jail_ctx: Any, folder: str) -> None:
    run = _client(jail_ctx, JAIL)
    _, (grep, search) = run([("files_grep", {"query": SECRET, "path": folder}),
                             ("files_search", {"name": "plan", "path": folder})])
    _, (real_grep,) = _client(jail_ctx, Profile())([("files_grep", {"query": SECRET, "path": "/No such folder"})])
    for result in (grep, search):
        assert result.is_error and "plan.md" not in _text(result)
        if ".." not in folder:
            assert _text(result) == _text(real_grep).replace("/No such folder", folder)


def test_writes_and_shares_outside_change_nothing(jail_ctx: Any, jail_world: dict[str, Any]) -> None:
    emu = jail_world["emu"]
    before = emu.state.find("alice", "/Documents/secret.md").data
    emu.reset_requests()
    run = _client(jail_ctx, JAIL)
    _, results = run([
        ("files_write", {"path": "/Documents/secret.md", "content": "overwritten", "etag": '"x"'}),
        ("files_write", {"path": "/Projects-old/new.md", "content": "new", "createFolders": True}),
        ("files_write", {"path": "/Projects/../Documents/x.md", "content": "x"}),
        ("files_write", {"path": "/Nowhere/at/all.md", "content": "x", "createFolders": True}),
        ("files_share_internal", {"path": "/Documents/secret.md", "shareWith": "bob"}),
        ("files_share_internal", {"path": "/Documents", "shareWith": "bob"}),
    ])
    assert all(r.is_error for r in results)
    existing, missing_place = _text(results[1]), _text(results[3])
    assert existing.replace("/Projects-old/new.md", "X") == missing_place.replace("/Nowhere/at/all.md", "X")
    writes = [(m, p) for m, p, _ in emu.requests if m in ("PUT", "MKCOL", "POST", "DELETE", "MOVE")]
    assert not any("Documents" in p or "Projects-old" in p or "Nowhere" in p for _m, p in writes)
    assert emu.state.find("alice", "/Documents/secret.md").data == before
    assert emu.state.find("alice", "/Nowhere") is None and emu.state.find("alice", "/Projects-old/new.md") is None


def test_a_write_inside_the_jail_works(jail_ctx: Any) -> None:
    _, (made,) = _client(jail_ctx, JAIL)([("files_write", {"path": "/Projects/Alpha/made-in-jail.md",
                                                           "content": "hello"})])
    assert _data(made)["path"] == "/Projects/Alpha/made-in-jail.md"


def test_two_folders_list_both_and_nothing_else(jail_ctx: Any) -> None:
    both = build("two", folders=["/Projects/Alpha", "/Photos"])
    _, (search,) = _client(jail_ctx, both)([("files_search", {"mime": "image/"})])
    paths = [f["path"] for f in _data(search)["files"]]
    assert "/Photos/photo.png" in paths and all(p.startswith(("/Projects/Alpha/", "/Photos/")) for p in paths)


# -- read-only and the allowlist, in both identities ------------------------------------------------------

def test_read_only_lists_and_allows_only_read_only_tools(jail_ctx: Any) -> None:
    from mcp_nextcloud.cli import toolspec

    specs = toolspec.load()
    readonly = Profile(name="reader", read_only=True)
    names, (write, whoami) = _client(jail_ctx, readonly)([
        ("files_write", {"path": "/Projects/Alpha/x.md", "content": "x"}),
        ("nextcloud_whoami", {}),
    ])
    assert names and all(specs[n]["annotations"].get("readOnlyHint") is True for n in names)
    assert "files_grep" in names and "files_write" not in names and "deck_create_card" not in names
    assert write.is_error and "not available to this agent" in _text(write) and "do not retry" in _text(write).lower()
    assert _data(whoami)["profile"] == {"name": "reader", "folders": None, "readOnly": True, "tools": None,
                                        "offered": sorted(names)}
    mail_names, _ = _client(jail_ctx, readonly, mail=True)([])
    assert mail_names and all(specs[n]["annotations"].get("readOnlyHint") is True for n in mail_names)
    assert not {"mail_send", "mail_draft"} & set(mail_names)


def test_a_tool_outside_the_allowlist_is_neither_listed_nor_callable(jail_ctx: Any) -> None:
    only = Profile(name="scanner", tools=frozenset({"files_write", "files_search"}))
    names, (grep, share) = _client(jail_ctx, only)([
        ("files_grep", {"query": "widget"}), ("files_share_internal", {"path": "/Projects", "shareWith": "bob"})])
    assert sorted(names) == ["files_search", "files_write"]
    assert grep.is_error and share.is_error and "not available to this agent" in _text(grep)


def test_refusals_are_counted_by_profile(jail_ctx: Any) -> None:
    scanner = Profile(name="scanner", folders=("/Projects",), tools=frozenset({"files_read"}))
    _client(jail_ctx, scanner)([("files_read", {"path": "/Documents/secret.md"}),
                                ("files_grep", {"query": "x"}),
                                ("files_read", {"path": "/Projects/Alpha/inside.md"})])
    (row,) = jail_ctx.telemetry.profile_refusals()
    assert row == {"profile": "scanner", "calls": 3, "toolNotOffered": 1, "outsideFolders": 1, "refusals": 2}
    statuses = [(r["tool"], r["kind"], r["status"]) for r in jail_ctx.telemetry.rows()]
    assert ("files_read", "refused", "outside_profile") in statuses


def test_the_servers_own_search_hits_stay_inside_too(jail_world: dict[str, Any], tmp_path: Path) -> None:
    """With an index never synced, grep adds the server's unified-search hits: those outside are never shown."""
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.server.context import ServerContext, Settings

    ctx = ServerContext(account=jail_world["account"], index=Index.open(tmp_path / "cold.db"),
                        settings=Settings(freshness_interval_s=0.0, best_effort_s=5.0))
    try:
        # the emulator's unified search matches file names (as Nextcloud's does without full-text search)
        _, (free,) = _client(ctx, Profile())([("files_grep", {"query": "secret"})])
        _, (jailed,) = _client(ctx, JAIL)([("files_grep", {"query": "secret"})])
    finally:
        ctx.close()
    assert any(h["path"] in OUTSIDE for h in _data(free)["hits"])      # the server's search does find them...
    assert _data(jailed)["hits"] == []                                # ...and the jail never shows them
    assert not any(p in _text(jailed) for p in OUTSIDE)


def test_organising_tools_never_reach_outside(jail_ctx: Any, jail_world: dict[str, Any]) -> None:
    """files_move/delete/restore/history: a source outside is a missing file, a destination outside changes nothing."""
    emu = jail_world["emu"]
    emu.state.put_file("alice", "/Projects/Alpha/movable.md", b"# Movable\n")
    emu.reset_requests()
    run = _client(jail_ctx, JAIL)
    _, (out_src, out_dst, copy_out, delete_out, restore_out, history, missing_move) = run([
        ("files_move", {"path": "/Documents/secret.md", "to": "/Projects/Alpha/stolen.md"}),
        ("files_move", {"path": "/Projects/Alpha/movable.md", "to": "/Projects-old/movable.md"}),
        ("files_move", {"path": "/Projects/Alpha/movable.md", "to": "/Documents/", "copy": True}),
        ("files_delete", {"path": f"{LOOKALIKE}/plan.md"}),
        ("files_restore", {"path": "/Documents/secret.md"}),
        ("files_history", {}),
        ("files_move", {"path": "/Projects/Alpha/nothing-here.md", "to": "/Projects/Alpha/x.md"}),
    ])
    assert all(r.is_error for r in (out_src, out_dst, copy_out, delete_out, restore_out))
    assert _text(out_src) == _text(missing_move).replace("/Projects/Alpha/nothing-here.md", "/Documents/secret.md")
    assert "outside the folders" in _text(out_dst) and "outside the folders" in _text(copy_out)
    assert SECRET not in " ".join(_text(r) for r in (out_src, delete_out, restore_out, history))
    writes = [(m, p) for m, p, _ in emu.requests if m in ("PUT", "MKCOL", "COPY", "DELETE", "MOVE")]
    assert writes == []
    assert emu.state.find("alice", "/Projects/Alpha/movable.md") is not None
    assert emu.state.find("alice", "/Documents/movable.md") is None
    assert emu.state.find("alice", f"{LOOKALIKE}/plan.md") is not None


# -- every profile shape, every tool it offers (issue 37) ------------------------------------------------

FILES_RW = ["files_delete", "files_grep", "files_history", "files_move", "files_read", "files_restore", "files_search",
            "files_share_internal", "files_write"]
FILES_RO = ["files_grep", "files_history", "files_read", "files_search"]
MAIN_ALL = ["calendar_create_event", "calendar_delete_event", "calendar_list_events", "calendar_update_event",
            "contacts_search", "deck_create_board", "deck_create_card", "deck_list_cards", "deck_move_card",
            "deck_update_card", *FILES_RW, "meet_create_room", "meet_schedule", "nextcloud_whoami", "talk_post",
            "talk_read", "talk_rooms", "tasks_create", "tasks_list", "tasks_update"]
MAIN_RO = ["calendar_list_events", "contacts_search", "deck_list_cards", *FILES_RO, "nextcloud_whoami", "talk_read",
           "talk_rooms", "tasks_list"]


@pytest.mark.parametrize("shape, main, mail", [
    (Profile(), MAIN_ALL, None),
    (Profile(name="scans", folders=("/Scans",)), [*FILES_RW, "nextcloud_whoami"], []),
    (Profile(name="scans", folders=("/Scans",), read_only=True), [*FILES_RO, "nextcloud_whoami"], []),
    (Profile(name="reader", read_only=True), MAIN_RO, ["mail_compose", "mail_contacts", "mail_read", "mail_search"]),
    (Profile(name="scans", folders=("/Scans",), tools=frozenset({"files_read", "talk_read"})),
     ["files_read", "talk_read"], []),
    (Profile(name="mailer", tools=frozenset({"mail_search", "mail_read", "nextcloud_whoami"})),
     ["nextcloud_whoami"], ["mail_read", "mail_search"]),
], ids=["unrestricted", "folder", "folder-read-only", "read-only", "folder-with-tools", "tools"])
def test_each_profile_shape_offers_exactly_these_tools(jail_ctx: Any, shape: Profile, main: list[str],
                                                       mail: list[str] | None) -> None:
    """A folder limits files only: a folder profile offers the file tools (and whoami), never Talk, calendars,
    Deck, contacts, tasks or mail, unless --tools names them."""
    from mcp_nextcloud.cli.token import tool_modes

    main_names, _ = _client(jail_ctx, shape)([])
    assert sorted(main_names) == main
    mail_names, _ = _client(jail_ctx, shape, mail=True)([])
    if mail is not None:
        assert sorted(n for n in mail_names if n != "nextcloud_whoami") == mail
    assert shape.offered(tool_modes()) == sorted({*main_names, *mail_names})   # what token add/list state


def test_whoami_states_exactly_what_a_folder_profile_allows(jail_ctx: Any) -> None:
    scans = Profile(name="scans", folders=("/Scans",), read_only=True)
    names, (who, talk) = _client(jail_ctx, scans)([("nextcloud_whoami", {}), ("talk_rooms", {})])
    data = _data(who)
    assert data["profile"]["offered"] == sorted(names) == [*FILES_RO, "nextcloud_whoami"]
    assert "only /Scans, read-only" in data["hint"] and "files_read" in data["hint"]
    assert "talk_rooms" not in data["hint"] and "file tools only" in data["hint"]
    assert talk.is_error and "not available to this agent" in _text(talk)
