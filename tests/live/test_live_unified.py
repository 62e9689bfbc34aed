"""The server's own search against a real Nextcloud (skipped unless NEXTCLOUD_* are set): providers, and the
files provider finding a file by name with the path and fileId files_read accepts."""
from __future__ import annotations

import uuid
from typing import Any

import pytest


@pytest.fixture
def live_ctx(live_account: Any) -> Any:
    from mcp_nextcloud.server.context import ServerContext, Settings

    ctx = ServerContext(account=live_account, index=None, settings=Settings(best_effort_s=5.0))
    yield ctx
    ctx.close()


def test_live_providers_include_files(live_ctx: Any) -> None:
    from mcp_nextcloud.server.tools.files.server_search import providers

    assert "files" in providers(live_ctx)


def test_live_files_provider_finds_a_new_file_by_name(live_ctx: Any) -> None:
    from mcp_nextcloud.server.tools.files.server_search import name_hits

    client = live_ctx.client()
    name = f"mcp-live-{uuid.uuid4().hex[:8]}-kumquat.txt"
    client.webdav.put(f"/{name}", b"live unified search\n", create_only=True)
    try:
        out = name_hits(live_ctx, name[:-4], folder=None, covers=None)
        stat = client.webdav.stat(f"/{name}")
    finally:
        client.webdav.delete(f"/{name}")
    assert [(h["path"], h["fileId"]) for h in out.hits] == [(f"/{name}", stat.file_id)]
    assert out.sources[0]["answered"] is True


def test_live_files_grep_with_a_cold_index_finds_a_name_through_the_servers_search(tools_factory, live_dav,
                                                                                  live_http, scratch_folder):
    """files_grep's server source: an index with no sync covers nothing, so the server's unified search is asked
    and its hit carries the path and fileId the server itself has."""
    name = f"quokka-{uuid.uuid4().hex[:8]}.md"
    path = f"{scratch_folder}/{name}"
    live_dav.put(path, b"nothing to see\n")
    found = live_http.get("/ocs/v2.php/search/providers/files/search", params={"term": name[:-3], "format": "json"})
    assert [e["title"] for e in found.json()["ocs"]["data"]["entries"]] == [name]
    out = tools_factory().ok("files_grep", {"query": name[:-3]})
    server_hits = [h for h in out["hits"] if h.get("source") == "server"]
    assert [(h["path"], str(h["fileId"])) for h in server_hits] == [(path, live_dav.props(path)["fileId"])]
    assert any(s.get("source") != "index" and s.get("answered") for s in out.get("sources") or [{}])
