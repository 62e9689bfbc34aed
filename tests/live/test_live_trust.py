"""Issue 9's scenarios against a real Nextcloud (skipped unless NEXTCLOUD_URL/USER/APP_PASSWORD are set).

The same assertions on the text an agent reads as tests/server/test_server_trust.py and
test_server_write_paths.py: a wrong app password, an unreachable server, a path naming a file, a mime
given as an extension, missing parent folders, an etag for no file, a folder as the write target and a
share with yourself. Everything happens in a scratch folder deleted at the end; the wrong password is
tried once (a real server throttles repeated failures).
"""
from __future__ import annotations

import json
import uuid
from typing import Any

import anyio
import pytest


@pytest.fixture
def scratch(live_account, tmp_path):
    """(folder, index path, client): a scratch folder with one note, synced into a fresh index."""
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.client import NextcloudClient

    folder = f"/mcp-nextcloud-live-{uuid.uuid4().hex[:8]}"
    client = NextcloudClient(live_account)
    client.webdav.mkcol(folder)
    client.webdav.put(f"{folder}/seed.md", b"# Seed\n\nThe seed note mentions a pangolin.\n", create_only=True)
    with Index.open(tmp_path / "index.db") as index:
        sync(client, index, root=folder)
    try:
        yield folder, tmp_path / "index.db", client
    finally:
        try:
            client.webdav.delete(folder)
        finally:
            client.close()


def _server(account: Any, index_path: Any, best_effort_s: float = 1.0) -> Any:
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext, Settings

    ctx = ServerContext(account=account, index=Index.open(index_path),
                        settings=Settings(freshness_interval_s=0, best_effort_s=best_effort_s))
    return build_server(ctx), ctx


def _call(server: Any, name: str, args: dict[str, Any]) -> Any:
    from mcp import Client

    async def go() -> Any:
        async with Client(server, mode="legacy") as c:
            return await c.call_tool(name, args)

    return anyio.run(go)


def _answer(result: Any) -> str:
    data = json.loads(result.content[0].text)
    return " ".join([data.get("hint") or "", *data.get("warnings", [])])


@pytest.fixture
def forget_failed_logins(request):
    """After a test that sends a wrong password: reset the server's brute-force record (where occ is at hand)."""
    try:
        admin = request.getfixturevalue("server_admin")
    except pytest.skip.Exception:
        admin = None   # another server: nothing this test can reset (it sends the wrong password once)
    yield
    if admin is not None:
        admin.reset_bruteforce()


def test_live_wrong_password_is_not_no_such_text(live_account, scratch, forget_failed_logins):
    from mcp_nextcloud.nextcloud.config import Account

    folder, index_path, _ = scratch
    wrong = Account(url=live_account.url, user=live_account.user,
                    app_password="not-the-app-password-" + uuid.uuid4().hex[:8])
    # A real server answers a wrong password slowly (its brute-force delay): give the check room to hear the 401.
    server, ctx = _server(wrong, index_path, best_effort_s=15.0)
    try:
        res = _call(server, "files_grep", {"query": "zzqqxx-nothing", "path": folder})
    finally:
        ctx.close()
    assert not res.is_error, res.content[0].text
    text = _answer(res)
    assert "could not be brought up to date" in text and "refused the credentials" in text
    assert "not evidence" in text and "not-the-app-password" not in res.content[0].text


def test_live_unreachable_server_answers_from_the_index(live_account, scratch):
    from mcp_nextcloud.nextcloud.config import Account

    folder, index_path, _ = scratch
    gone = Account(url="http://127.0.0.1:9", user=live_account.user, app_password=live_account.app_password)
    server, ctx = _server(gone, index_path)
    try:
        found = _call(server, "files_grep", {"query": "pangolin", "path": folder})
    finally:
        ctx.close()
    assert not found.is_error and json.loads(found.content[0].text)["hits"]
    assert "Could not reach the Nextcloud server" in _answer(found)


def test_live_filters_and_paths_name_themselves(live_account, scratch):
    folder, index_path, _ = scratch
    server, ctx = _server(live_account, index_path)
    try:
        as_file = _call(server, "files_grep", {"query": "zzqqxx-nothing", "path": f"{folder}/seed.md"})
        mime = _call(server, "files_search", {"mime": "pdf", "path": folder})
    finally:
        ctx.close()
    assert not as_file.is_error and "is a file, not a folder" in _answer(as_file)
    assert mime.is_error and "application/pdf" in mime.content[0].text


def test_live_write_paths_and_self_share(live_account, scratch):
    folder, index_path, client = scratch
    server, ctx = _server(live_account, index_path)
    try:
        missing = _call(server, "files_write", {"path": f"{folder}/a/b/todo.md", "content": "x"})
        made = _call(server, "files_write", {"path": f"{folder}/a/b/todo.md", "content": "x", "createFolders": True})
        no_file = _call(server, "files_write", {"path": f"{folder}/nope.md", "content": "x", "etag": "abcdef0123"})
        to_folder = _call(server, "files_write", {"path": f"{folder}/a", "content": "x"})
        me = _call(server, "files_share_internal", {"path": f"{folder}/seed.md", "shareWith": live_account.user})
    finally:
        ctx.close()
    assert missing.is_error and "createFolders=true" in missing.content[0].text
    assert not made.is_error, made.content[0].text
    assert json.loads(made.content[0].text)["createdFolders"] == [f"{folder}/a", f"{folder}/a/b"]
    assert client.webdav.stat(f"{folder}/a/b/todo.md").size == 1
    assert no_file.is_error and "No file exists" in no_file.content[0].text
    assert to_folder.is_error and "is a folder, not a file" in to_folder.content[0].text
    assert "write with its etag" not in to_folder.content[0].text
    assert me.is_error and "the caller's own account" in me.content[0].text
