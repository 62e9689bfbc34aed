"""files_grep over MCP with the meaning index (issue 24): mode, match, and a meaning hit that files_read opens.

Its own emulator and index (the shared `world` index stays keyword-only for the other tests).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_nextcloud.fixtures.emulator.server import Emulator


@pytest.fixture(scope="module")
def meaning_server(tmp_path_factory: pytest.TempPathFactory):
    from mcp_nextcloud.indexer.jobs.embed import Builder
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.config import Account
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext, Settings

    with Emulator() as emu:
        creds = emu.account("alice")
        account = Account(url=creds["url"], user=creds["user"], app_password=creds["app_password"])
        path: Path = tmp_path_factory.mktemp("meaning-index") / "index.db"
        index = Index.open(path)
        with NextcloudClient(account) as client:
            assert sync(client, index).complete
        built = Builder(index).build()
        assert built.stopped is None and built.windows > 0
        ctx = ServerContext(account=account, index=index, settings=Settings(freshness_interval_s=0.0))
        yield build_server(ctx)
        ctx.close()


def _call(server: Any, name: str, args: dict[str, Any]) -> Any:
    from mcp import Client

    async def go() -> Any:
        async with Client(server, mode="legacy") as client:
            return await client.call_tool(name, args)
    return anyio.run(go)


def test_a_question_is_answered_by_meaning_with_an_offset_files_read_accepts(meaning_server, ok) -> None:
    res = ok(_call(meaning_server, "files_grep", {"query": "liste de courses avec du lait", "limit": 5}))
    assert res["mode"] == "hybrid"
    top = res["hits"][0]
    assert top["path"].endswith("/notes.txt") and top["match"] == "meaning", res
    assert all(h["match"] in {"words", "meaning", "both"} for h in res["hits"] if h.get("source") != "server")
    assert "match=meaning" in res["hint"]
    passage = top["passages"][0]
    at = ok(_call(meaning_server, "files_read", {"path": top["path"], "offset": passage["passageOffset"],
                                                 "limit": len(passage["passage"]) + 10}))
    assert at["content"].startswith(passage["passage"])


def test_keyword_queries_stay_words_only(meaning_server, ok) -> None:
    for query in ("quota", '"olive badger"', "saffron OR gecko"):
        res = ok(_call(meaning_server, "files_grep", {"query": query}))
        assert res["mode"] == "words", query
        assert res["hits"] and all("match" not in h for h in res["hits"] if h.get("source") != "server"), res


def test_a_keyword_query_no_file_holds_shows_its_nearest_file_by_meaning(meaning_server, ok) -> None:
    """Issue 48: a keyword query of a few words that no file holds ("groceries dairy": the notes say "Shopping
    list", "Milk") shows the nearest files by meaning, marked as such, over MCP as in the CLI's grep."""
    res = ok(_call(meaning_server, "files_grep", {"query": "groceries dairy"}))
    assert res["hits"] and all(h["match"] == "meaning" for h in res["hits"] if h.get("source") != "server"), res
    assert any(h["path"].endswith("/notes.txt") for h in res["hits"]), [h["path"] for h in res["hits"]]
    assert "no indexed file holds 'groceries dairy'" in res["hint"] and "match=meaning" in res["hint"]
