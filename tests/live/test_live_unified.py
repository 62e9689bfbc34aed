"""The server's own search against a real Nextcloud (skipped unless NEXTCLOUD_* are set): providers, and the
files provider finding a file by name with the path and fileId files_read accepts."""
from __future__ import annotations

import uuid
from typing import Any

import pytest


@pytest.fixture
def live_ctx(live_account: Any) -> Any:
    from server.context import ServerContext, Settings

    ctx = ServerContext(account=live_account, index=None, settings=Settings(best_effort_s=5.0))
    yield ctx
    ctx.close()


def test_live_providers_include_files(live_ctx: Any) -> None:
    from server.tools.server_search import providers

    assert "files" in providers(live_ctx)


def test_live_files_provider_finds_a_new_file_by_name(live_ctx: Any) -> None:
    from server.tools.server_search import name_hits

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
