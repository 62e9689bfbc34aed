"""The server's main scenarios against a real Nextcloud (skipped unless NEXTCLOUD_URL/USER/APP_PASSWORD are set).

Everything happens in a scratch folder created for the run and deleted at
the end; the rest of the account is only read (whoami) and never synced.
"""
from __future__ import annotations

import json
import uuid

import anyio
import pytest


@pytest.fixture
def live(live_account, tmp_path):
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext, Settings
    from mcp_nextcloud.server.telemetry import CallLog

    folder = f"/mcp-nextcloud-live-{uuid.uuid4().hex[:8]}"
    client = NextcloudClient(live_account)
    client.webdav.mkcol(folder)
    client.webdav.put(f"{folder}/seed.md", b"# Seed\n\nThe seed note mentions a pangolin.\n", create_only=True)
    index = Index.open(tmp_path / "index.db")
    sync(client, index, root=folder)
    ctx = ServerContext(account=live_account, index=index, telemetry=CallLog(tmp_path / "calls.sqlite"),
                        settings=Settings(freshness_interval_s=0), client_factory=lambda: client)
    try:
        yield build_server(ctx), folder, live_account
    finally:
        try:
            client.webdav.delete(folder)
        finally:
            ctx.close()


def _calls(server, calls):
    from mcp import Client

    async def go():
        out = []
        async with Client(server, mode="legacy") as c:
            for name, args in calls:
                out.append(await c.call_tool(name, args))
        return out

    return anyio.run(go)


def test_live_main_scenarios(live):
    server, folder, account = live
    path = f"{folder}/note.md"
    whoami, created, stale_base = _calls(server, [
        ("nextcloud_whoami", {}),
        ("files_write", {"path": path, "content": "first draft about a pangolin"}),
        ("files_read", {"path": f"{folder}/seed.md", "find": "pangolin"}),
    ])
    me = json.loads(whoami.content[0].text)
    assert me["userId"] and set(me["apps"]) == {"calendar", "contacts", "deck", "talk", "mail"}
    made = json.loads(created.content[0].text)
    assert not created.is_error and made["created"] and made["etag"]
    assert json.loads(stale_base.content[0].text)["matches"]

    edit, stale, grep, search, bad = _calls(server, [
        ("files_write", {"path": path, "content": "second draft about a pangolin", "etag": made["etag"]}),
        ("files_write", {"path": path, "content": "lost update", "etag": made["etag"]}),
        ("files_grep", {"query": "pangolin", "path": folder}),
        ("files_search", {"name": "note", "path": folder}),
        ("files_read", {"path": f"{folder}/missing.md"}),
    ])
    assert not edit.is_error
    assert stale.is_error and "files_read" in stale.content[0].text
    assert {h["path"] for h in json.loads(grep.content[0].text)["hits"]} >= {path, f"{folder}/seed.md"}
    assert [f["path"] for f in json.loads(search.content[0].text)["files"]] == [path]
    assert bad.is_error and "files_search" in bad.content[0].text
    blob = "".join(r.content[0].text for r in (whoami, created, stale_base, edit, stale, grep, search, bad))
    assert account.app_password not in blob and account.url not in blob
