"""The server's own search as a second source (issue 16): names outside the index, contents via full text."""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from mcp_nextcloud.fixtures.emulator.server import ALL_APPS, Emulator
from mcp_nextcloud.indexer.jobs.pool import IN_PROCESS

FULLTEXT_PATH = "/ocs/v2.php/search/providers/fulltextsearch/search"


@pytest.fixture
def fts() -> Iterator[Emulator]:
    from mcp_nextcloud.fixtures.emulator.testing import http_client

    with Emulator(apps=ALL_APPS | {"fulltextsearch"}) as emu:
        # The emulated cluster extracts every file on its first query (seconds for the sample PDFs): do it
        # now, so the tests' one-second best-effort budget measures the search, not the emulator's warm-up.
        with http_client(emu, "alice", ocs=True) as raw:
            raw.get(FULLTEXT_PATH, params={"term": "x", "format": "json"}, timeout=120)
        emu.requests.clear()
        yield emu


def _ctx(emu: Emulator) -> Any:
    from mcp_nextcloud.nextcloud.config import Account
    from mcp_nextcloud.server.context import ServerContext, Settings

    creds = emu.account("alice")
    return ServerContext(account=Account(url=creds["url"], user=creds["user"], app_password=creds["app_password"]),
                         index=None, settings=Settings(best_effort_s=1.0))


def _count(emu: Emulator, path: str) -> int:
    return sum(1 for _, p, _ in emu.requests if p == path)


def test_providers_are_discovered_once_per_process(fts: Emulator) -> None:
    from mcp_nextcloud.server.tools.files.server_search import FULLTEXT, providers

    ctx = _ctx(fts)
    try:
        assert FULLTEXT in providers(ctx) and "files" in providers(ctx)
        assert _count(fts, "/ocs/v2.php/search/providers") == 1
    finally:
        ctx.close()


def test_content_hits_carry_handles_files_read_accepts(fts: Emulator) -> None:
    from mcp_nextcloud.server.tools.files.server_search import content_hits

    ctx = _ctx(fts)
    try:
        out = content_hits(ctx, "supplier late", folder=None, known=set())
        stat = ctx.client().webdav.stat("/Projects/Alpha/notes.md")
    finally:
        ctx.close()
    assert [h["path"] for h in out.hits] == ["/Projects/Alpha/notes.md"]
    hit = out.hits[0]
    assert hit["fileId"] == stat.file_id and hit["source"] == "server" and hit["match"] == "content"
    assert "supplier is late" in hit["passages"][0]["passage"]
    assert out.sources == [{"source": "server full text", "answered": True, "hits": 1}]


def test_content_hits_skip_files_the_index_gave_and_other_folders(fts: Emulator) -> None:
    from mcp_nextcloud.server.tools.files.server_search import content_hits

    ctx = _ctx(fts)
    try:
        everywhere = [h["path"] for h in content_hits(ctx, "supplier", folder=None, known=set()).hits]
        assert everywhere == ["/Projects/Alpha/notes.md", "/Projects/Beta/todo.txt"]
        rest = content_hits(ctx, "supplier", folder=None, known={"/Projects/Alpha/notes.md"}).hits
        assert [h["path"] for h in rest] == ["/Projects/Beta/todo.txt"]
        assert content_hits(ctx, "supplier", folder="/Documents", known=set()).hits == []
    finally:
        ctx.close()


def test_a_listed_file_that_is_gone_is_dropped_and_said(fts: Emulator) -> None:
    from mcp_nextcloud.server.tools.files.server_search import content_hits

    ctx = _ctx(fts)
    try:
        # The search cluster lags behind the files: it still lists a file the server no longer has.
        fts.faults.add(method="PROPFIND", path_prefix="/remote.php/dav/files/alice/Projects/Alpha/notes.md",
                       status=404)
        out = content_hits(ctx, "supplier", folder="/Projects/Alpha", known=set())
    finally:
        fts.faults.clear()
        ctx.close()
    assert out.hits == []
    assert out.sources == [{"source": "server full text", "answered": True, "hits": 0,
                            "note": "1 listed file(s) no longer exist"}]


def test_slow_or_failing_full_text_is_named_not_waited_for(fts: Emulator) -> None:
    from mcp_nextcloud.server.tools.files.server_search import content_hits, providers

    ctx = _ctx(fts)
    try:
        providers(ctx)
        fts.faults.add(method="GET", path_prefix=FULLTEXT_PATH, delay=5.0)
        slow = content_hits(ctx, "supplier", folder=None, known=set())
        fts.faults.clear()
        fts.faults.add(method="GET", path_prefix=FULLTEXT_PATH, status=500, times=3)
        before = _count(fts, FULLTEXT_PATH)
        broken = content_hits(ctx, "supplier", folder=None, known=set())
        asked = _count(fts, FULLTEXT_PATH) - before
    finally:
        fts.faults.clear()
        ctx.close()
    assert slow.hits == [] and slow.sources[0]["answered"] is False and "timed out" in slow.sources[0]["note"]
    assert broken.sources[0]["answered"] is False and asked == 1   # one attempt: no retries on a read path


def test_without_the_full_text_app_no_source_is_asked(fts: Emulator) -> None:
    from mcp_nextcloud.server.tools.files.server_search import content_hits

    with Emulator() as plain:
        ctx = _ctx(plain)
        try:
            out = content_hits(ctx, "supplier", folder=None, known=set())
        finally:
            ctx.close()
        assert out.hits == [] and out.sources == [] and _count(plain, FULLTEXT_PATH) == 0


def test_name_hits_only_outside_the_covered_folders(fts: Emulator) -> None:
    from mcp_nextcloud.server.tools.files.server_search import name_hits

    ctx = _ctx(fts)
    try:
        from mcp_nextcloud.indexer.store.selection import Selection

        everywhere = name_hits(ctx, "budget", folder=None, covers=None)
        outside = name_hits(ctx, "budget", folder=None, covers=Selection.of(include=["/Documents"]).covers)
    finally:
        ctx.close()
    assert {h["path"] for h in everywhere.hits} == {"/Documents/budget.xlsx", "/Projects/Alpha/budget.csv"}
    assert [h["path"] for h in outside.hits] == ["/Projects/Alpha/budget.csv"]
    assert all(h["match"] == "name" and isinstance(h["fileId"], int) for h in everywhere.hits)


def _grep(ctx: Any, query: str) -> dict[str, Any]:
    import json

    import anyio
    from mcp import Client

    from mcp_nextcloud.server.app import build_server

    async def go() -> Any:
        async with Client(build_server(ctx), mode="legacy") as client:
            return await client.call_tool("files_grep", {"query": query})
    result = anyio.run(go)
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def test_grep_with_a_selection_says_what_it_covers_and_asks_the_server(fts: Emulator, tmp_path: Any) -> None:
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.indexer.store import selection as sel
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.server.context import Settings

    ctx = _ctx(fts)
    ctx.settings = Settings(best_effort_s=2.0, freshness_interval_s=0.0)
    ctx.index = Index.open(tmp_path / "index.db")
    try:
        sel.save(ctx.index, sel.Selection.of(include=["/Documents"]))
        sync(ctx.client(), ctx.index, pool=IN_PROCESS)
        out = _grep(ctx, "supplier")
    finally:
        ctx.close()
    assert any("The index covers /Documents" in w for w in out["warnings"])
    by_path = {h["path"]: h for h in out["hits"]}
    notes = by_path["/Projects/Alpha/notes.md"]        # outside the index: found by the server's full text
    assert notes["source"] == "server" and notes["match"] == "content" and isinstance(notes["fileId"], int)
    assert [s["source"] for s in out["sources"]] == ["index", "server full text", "server names"]
    assert all(s["answered"] for s in out["sources"])


def test_grep_without_server_sources_adds_nothing(tmp_path: Any) -> None:
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.server.context import Settings

    with Emulator() as plain:
        ctx = _ctx(plain)
        ctx.settings = Settings(freshness_interval_s=0.0)
        ctx.index = Index.open(tmp_path / "index.db")
        try:
            sync(ctx.client(), ctx.index, pool=IN_PROCESS)
            out = _grep(ctx, "supplier")
        finally:
            ctx.close()
    assert "sources" not in out and all("source" not in h for h in out["hits"])
    assert out["hits"] and not any("The index covers" in w for w in out.get("warnings", []))
