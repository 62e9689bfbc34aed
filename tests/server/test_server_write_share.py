"""files_write, files_share_internal and nextcloud_whoami against the emulator, with every error row."""
from __future__ import annotations

import uuid

import pytest

ALICE = "alice"


def _name(stem: str = "note", ext: str = "md") -> str:
    return f"/Documents/{stem}-{uuid.uuid4().hex[:8]}.{ext}"


def test_write_creates_then_chains_etags(world, call, ok, mode):
    path = _name()
    created = ok(call("files_write", {"path": path, "content": "version one"}, mode))
    assert created["created"] is True and created["etag"] and isinstance(created["fileId"], int)
    assert world.emulator.state.find(ALICE, path).data == b"version one"
    read = ok(call("files_read", {"path": path}, mode))
    assert read["etag"] == created["etag"]
    second = ok(call("files_write", {"path": path, "content": "version two!", "etag": read["etag"]}, mode))
    assert second["created"] is False and second["etag"] != created["etag"]
    assert second["fileId"] == created["fileId"]
    third = ok(call("files_write", {"fileId": second["fileId"], "content": "version 3", "etag": second["etag"]}, mode))
    assert third["path"] == path
    assert world.emulator.state.find(ALICE, path).data == b"version 3"


def test_written_text_is_searchable_at_once(call, ok):
    word = "narwhal" + uuid.uuid4().hex[:6]
    path = _name()
    ok(call("files_write", {"path": path, "content": f"A note on the {word}."}))
    hits = ok(call("files_grep", {"query": word}))["hits"]
    assert [h["path"] for h in hits] == [path]
    assert ok(call("files_read", {"path": path, "find": word}))["matches"]


def test_stale_etag_gets_the_re_read_instruction(world, ctx, call, ok, err):
    path = _name()
    first = ok(call("files_write", {"path": path, "content": "mine"}))
    world.emulator.state.put_file(ALICE, path, b"someone else's edit")
    text = err(call("files_write", {"path": path, "content": "mine again", "etag": first["etag"]}))
    assert "files_read" in text and "new etag" in text and "Do not retry" in text
    assert world.emulator.state.find(ALICE, path).data == b"someone else's edit"
    row = ctx.telemetry.rows()[-1]
    assert (row["kind"], row["status"]) == ("refused", "412")


def test_without_etag_an_existing_file_is_never_overwritten(world, call, err):
    text = err(call("files_write", {"path": "/Documents/notes.txt", "content": "clobber"}))
    assert "already exists" in text and "etag" in text
    assert world.emulator.state.find(ALICE, "/Documents/notes.txt").data != b"clobber"


@pytest.mark.parametrize("ext", ["pdf", "docx", "xlsx", "png", "zip"])
def test_binary_formats_are_refused(world, call, err, ctx, ext):
    path = _name("binary", ext)
    text = err(call("files_write", {"path": path, "content": "text"}))
    assert "text files only" in text and "Do not retry" in text
    assert world.emulator.state.find(ALICE, path) is None
    assert ctx.telemetry.rows()[-1]["kind"] == "refused"


def test_missing_parent_folder(call, err):
    text = err(call("files_write", {"path": f"/No-such-{uuid.uuid4().hex[:6]}/a.md", "content": "x"}))
    assert "does not exist" in text and "createFolders=true" in text and "Do not repeat this call unchanged" in text


def test_locked_file(world, call, ok, err):
    path = _name()
    etag = ok(call("files_write", {"path": path, "content": "v1"}))["etag"]
    world.emulator.state.lock_node(ALICE, path)
    try:
        text = err(call("files_write", {"path": path, "content": "v2", "etag": etag}))
    finally:
        world.emulator.state.unlock_node(ALICE, path)
    assert "locked" in text and "once the lock is released" in text
    assert text.endswith("Retry once; if it fails again, stop and report.")


def test_quota_full(world, call, err):
    state = world.emulator.state
    state.set_quota(ALICE, state.used_bytes(ALICE) + 10)
    try:
        text = err(call("files_write", {"path": _name(), "content": "x" * 5000}))
    finally:
        state.set_quota(ALICE, None)
    assert "Out of storage" in text and "nothing was written" in text and "Do not retry" in text


def test_server_error_on_write_is_a_fault(world, ctx, call, err):
    world.emulator.faults.add(method="PUT", status=500, times=10)
    text = err(call("files_write", {"path": _name(), "content": "x"}))
    assert "retry" in text.lower()
    assert ctx.telemetry.rows()[-1]["kind"] == "fault"


def test_write_bad_arguments(call, err):
    assert "content: is required" in err(call("files_write", {"path": _name()}))
    assert "path" in err(call("files_write", {"content": "x"}))


def test_share_with_an_account(world, call, ok, mode):
    path = _name("shared")
    ok(call("files_write", {"path": path, "content": "for bob"}))
    res = ok(call("files_share_internal", {"path": path, "shareWith": "bob"}, mode))
    assert res == {"path": path, "fileId": res["fileId"], "shareWith": "bob", "displayName": "Bob Builder",
                   "permissions": "read"}
    shares = [s for s in world.emulator.state.shares.values() if s.path == path]
    assert len(shares) == 1
    share = shares[0]
    assert (share.share_type, share.share_with, share.permissions, share.token) == (0, "bob", 1, None)


def test_share_folder_for_editing_by_display_name(world, call, ok):
    res = ok(call("files_share_internal", {"path": "/Documents", "shareWith": "Bob Builder", "permissions": "edit"}))
    assert res["shareWith"] == "bob" and res["permissions"] == "edit"
    share = next(s for s in world.emulator.state.shares.values() if s.path == "/Documents")
    assert share.permissions == 15 and share.token is None  # read+update+create+delete, no public link


def test_share_read_then_edit_upgrades_the_existing_share(world, call, ok, mode):
    path = _name("upgrade")
    ok(call("files_write", {"path": path, "content": "read first, edit later"}))
    first = ok(call("files_share_internal", {"path": path, "shareWith": "bob"}, mode))
    assert first["permissions"] == "read" and "previousPermissions" not in first
    up = ok(call("files_share_internal", {"path": path, "shareWith": "bob", "permissions": "edit"}, mode))
    assert up["permissions"] == "edit" and up["previousPermissions"] == "read" and "warnings" not in up
    assert "now edit" in up["hint"]
    shares = [s for s in world.emulator.state.shares.values() if s.path == path]
    assert len(shares) == 1 and shares[0].permissions == 3       # updated in place: read + update
    same = ok(call("files_share_internal", {"path": path, "shareWith": "bob", "permissions": "edit"}, mode))
    assert same["permissions"] == "edit" and "previousPermissions" not in same
    down = ok(call("files_share_internal", {"path": path, "shareWith": "bob", "permissions": "read"}, mode))
    assert (down["permissions"], down["previousPermissions"]) == ("read", "edit") and shares[0].permissions == 1


def test_share_upgrade_when_the_server_refuses_a_second_share(world, call, ok):
    """Some Nextcloud versions answer a repeated share with an error: the existing share is found and updated."""
    path = _name("refused-again")
    ok(call("files_write", {"path": path, "content": "x"}))
    ok(call("files_share_internal", {"path": path, "shareWith": "bob"}))
    world.emulator.faults.add(method="POST", path_prefix="/ocs/v2.php/apps/files_sharing/api/v1/shares",
                              status=403, times=1)
    up = ok(call("files_share_internal", {"path": path, "shareWith": "bob", "permissions": "edit"}))
    assert (up["permissions"], up["previousPermissions"]) == ("edit", "read")
    assert [s.permissions for s in world.emulator.state.shares.values() if s.path == path] == [3]
    assert len(world.emulator.faults) == 0                         # the refusal did happen


@pytest.mark.parametrize("who, needles", [
    ("nobody-here", ["shareWith: no account", "Do not repeat this call unchanged"]),
    ("i", ["Candidates", "bob", "admin"]),
    ("alice", ["the caller's own account"]),
])
def test_share_with_unknown_or_ambiguous_accounts(call, err, ctx, who, needles):
    text = err(call("files_share_internal", {"path": "/Documents/notes.txt", "shareWith": who}))
    for needle in needles:
        assert needle in text, text
    assert ctx.telemetry.rows()[-1]["kind"] == "misuse"


def test_share_rejects_public_link_permissions(call, err):
    text = err(call("files_share_internal", {"path": "/Documents/notes.txt", "shareWith": "bob",
                                             "permissions": "public"}))
    assert "permissions" in text and "'read' or 'edit'" in text


def test_whoami(call, ok, mode):
    me = ok(call("nextcloud_whoami", {}, mode))
    assert me["userId"] == "alice" and me["displayName"] == "Alice Test"
    assert me["serverVersion"].startswith("34")
    assert set(me["apps"]) == {"calendar", "contacts", "deck", "talk", "mail"}


def test_whoami_names_missing_apps(emulator_factory, tmp_path):
    import json

    import anyio
    from mcp import Client

    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.config import Account
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    emu = emulator_factory(apps={"deck"})
    creds = emu.account("alice")
    account = Account(url=creds["url"], user=creds["user"], app_password=creds["app_password"])
    ctx = ServerContext(account=account, index=Index.open(tmp_path / "i.db"))
    try:
        async def go():
            async with Client(build_server(ctx), mode="legacy") as c:
                return await c.call_tool("nextcloud_whoami", {})
        me = json.loads(anyio.run(go).content[0].text)
    finally:
        ctx.close()
    assert me["apps"]["deck"] is True and me["apps"]["talk"] is False and me["apps"]["mail"] is False
    assert "talk" in me["hint"] and "mail" in me["hint"]


def test_wrong_app_password_is_refused_without_leaking_it(world, tmp_path):
    import anyio
    from mcp import Client

    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.config import Account
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    bad = Account(url=world.account.url, user="alice", app_password="wrong-secret-123")
    ctx = ServerContext(account=bad, index=Index.open(tmp_path / "i.db"))
    try:
        async def go():
            async with Client(build_server(ctx), mode="legacy") as c:
                return await c.call_tool("files_read", {"path": "/Documents/manual.md"})
        result = anyio.run(go)
    finally:
        ctx.close()
    text = result.content[0].text
    assert result.is_error and "login" in text and "Do not retry" in text
    assert "wrong-secret-123" not in text and world.account.url not in text
