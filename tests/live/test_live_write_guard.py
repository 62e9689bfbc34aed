"""The lost-update trial on a real Nextcloud 34 (issue 22, item 2): refused every time.

Nextcloud keeps a file's etag when an overwrite within the same second leaves the size unchanged. Each
trial creates a file with files_write, has another client (plain HTTP) overwrite it at once with content of
the same size, then calls files_write with the first etag: the write must be refused and the other client's
content must still be there, read back over plain HTTP. Before the guard 9 of 10 such writes were accepted.
"""
from __future__ import annotations

import email.utils
import json
import uuid
from typing import Any

import anyio

TRIALS = 10


def _server(account: Any, index_path: Any) -> Any:
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext, Settings

    ctx = ServerContext(account=account, index=Index.open(index_path), settings=Settings(freshness_interval_s=0))
    return build_server(ctx), ctx


def test_live_a_stale_etag_never_replaces_another_clients_same_second_edit(live_account, live_http, scratch_folder,
                                                                             tmp_path):
    from mcp import Client

    server, ctx = _server(live_account, tmp_path / "index.db")
    dav = f"/remote.php/dav/files/{live_account.user}"
    kept_etag = 0
    try:
        async def trial(client: Any, n: int) -> tuple[Any, bytes]:
            path = f"{scratch_folder}/trial-{n}-{uuid.uuid4().hex[:6]}.md"
            made = await client.call_tool("files_write", {"path": path, "content": f"mine {n:02d}"})
            first = json.loads(made.content[0].text)
            theirs = f"THEM {n:02d}".encode()            # the same size as ours
            # ...written within the same second (as a sync client keeping the file's mtime would): Nextcloud
            # then keeps the etag, whatever the load of the machine makes of "at once".
            mtime = email.utils.parsedate_to_datetime(live_http.head(dav + path).headers["last-modified"])
            put = live_http.put(dav + path, content=theirs, headers={"X-OC-Mtime": str(int(mtime.timestamp()))})
            assert put.status_code in (201, 204), put.text
            if put.headers.get("etag", "").strip('"') == first["etag"].strip('"'):
                nonlocal kept_etag
                kept_etag += 1
            stale = await client.call_tool("files_write", {"path": path, "content": f"late {n:02d}",
                                                           "etag": first["etag"]})
            return stale, live_http.get(dav + path).content

        async def go() -> list[tuple[Any, bytes]]:
            async with Client(server, mode="legacy") as client:
                return [await trial(client, n) for n in range(TRIALS)]

        outcomes = anyio.run(go)
    finally:
        ctx.close()
    for n, (stale, content) in enumerate(outcomes):
        assert stale.is_error and "files_read" in stale.content[0].text, stale.content[0].text
        assert content == f"THEM {n:02d}".encode(), f"trial {n}: the other client's edit was lost"
    # Every trial hit the same-second case (the server kept the etag): the guard refused, not If-Match.
    assert kept_etag == TRIALS, f"the server kept the etag in {kept_etag} of {TRIALS} trials only"
