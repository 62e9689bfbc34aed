"""files_grep between syncs on a real Nextcloud 34 (issue 22, item 6).

A PDF uploaded while the freshness check is not due is found by the next grep (an empty answer asks the
server at once), and a file deleted after the sync is not offered as a hit. Uploads and deletions are made
with a plain HTTP client, as another client would.
"""
from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[2]
PDF = ROOT / "mcp_nextcloud" / "fixtures" / "docs" / "tex-accents.pdf"  # holds "Propriétés d'une expression musicale"


def _grep(server: Any, args: dict[str, Any]) -> dict[str, Any]:
    from mcp import Client

    async def go() -> Any:
        async with Client(server, mode="legacy") as client:
            return await client.call_tool("files_grep", args)

    result = anyio.run(go)
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


@contextlib.contextmanager
def _synced_server(account: Any, folder: str, tmp_path: Path) -> Iterator[Any]:
    """The MCP server over an index of `folder` just synced, its freshness check not due for an hour after
    the first grep (best-effort calls given 10 s: a real server under a test run)."""
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext, Settings

    with NextcloudClient(account) as client, Index.open(tmp_path / "index.db") as index:
        assert sync(client, index, root=folder).complete
    ctx = ServerContext(account=account, index=Index.open(tmp_path / "index.db"),
                        settings=Settings(freshness_interval_s=3600.0, best_effort_s=10.0))
    try:
        yield build_server(ctx)
    finally:
        ctx.close()


def test_live_grep_sees_an_upload_inside_the_interval_and_drops_a_deletion(live_account, live_http,
                                                                          scratch_folder, tmp_path):
    dav = f"/remote.php/dav/files/{live_account.user}"
    word = "tamarin" + uuid.uuid4().hex[:6]
    doomed = f"{scratch_folder}/doomed.md"
    assert live_http.put(dav + doomed, content=f"a note about the {word}".encode()).status_code == 201
    with _synced_server(live_account, scratch_folder, tmp_path) as server:
        first = _grep(server, {"query": word, "path": scratch_folder})   # uses the check: not due for an hour
        assert [h["path"] for h in first["hits"]] == [doomed]

        uploaded = f"{scratch_folder}/musique-{uuid.uuid4().hex[:6]}.pdf"
        assert live_http.put(dav + uploaded, content=PDF.read_bytes()).status_code == 201
        found = _grep(server, {"query": "expression musicale", "path": scratch_folder})
        assert uploaded in [h["path"] for h in found["hits"]], found
        assert "No indexed document" not in found["hint"]

        assert live_http.request("DELETE", dav + doomed).status_code == 204
        gone = _grep(server, {"query": word, "path": scratch_folder})
        assert gone["hits"] == [], gone
        assert any("no longer has" in w and doomed in w for w in gone["warnings"]), gone["warnings"]


def test_live_an_upload_a_second_before_a_question_with_other_hits_is_found(live_account, live_http,
                                                                           scratch_folder, tmp_path):
    """Issue 48: inside the check interval an answer with hits used to miss a file uploaded a moment before;
    the account root's etag (Nextcloud propagates a change's etag up to it) tells the grep to look now."""
    dav = f"/remote.php/dav/files/{live_account.user}"
    word = "kinkajou" + uuid.uuid4().hex[:6]
    assert live_http.put(dav + f"{scratch_folder}/first.md", content=f"a first note: {word}".encode()).status_code \
        == 201
    with _synced_server(live_account, scratch_folder, tmp_path) as server:
        assert _grep(server, {"query": word, "path": scratch_folder})["hits"]   # the check: not due for an hour
        later = f"{scratch_folder}/second.md"
        assert live_http.put(dav + later, content=f"a second note: {word}".encode()).status_code == 201
        found = _grep(server, {"query": word, "path": scratch_folder})
        assert later in [h["path"] for h in found["hits"]], found
