"""The server's own search as a second source (issue 16): names outside the index, contents via full text."""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from fixtures.emulator.server import ALL_APPS, Emulator

FULLTEXT_PATH = "/ocs/v2.php/search/providers/fulltextsearch/search"


@pytest.fixture
def fts() -> Iterator[Emulator]:
    with Emulator(apps=ALL_APPS | {"fulltextsearch"}) as emu:
        yield emu


def _ctx(emu: Emulator) -> Any:
    from nextcloud.config import Account
    from server.context import ServerContext, Settings

    creds = emu.account("alice")
    return ServerContext(account=Account(url=creds["url"], user=creds["user"], app_password=creds["app_password"]),
                         index=None, settings=Settings(best_effort_s=1.0))


def _count(emu: Emulator, path: str) -> int:
    return sum(1 for _, p, _ in emu.requests if p == path)


def test_providers_are_discovered_once_per_process(fts: Emulator) -> None:
    from server.tools.server_search import FULLTEXT, providers

    ctx = _ctx(fts)
    try:
        assert FULLTEXT in providers(ctx) and "files" in providers(ctx)
        assert _count(fts, "/ocs/v2.php/search/providers") == 1
    finally:
        ctx.close()


def test_content_hits_carry_handles_files_read_accepts(fts: Emulator) -> None:
    from server.tools.server_search import content_hits

    ctx = _ctx(fts)
    try:
        out = content_hits(ctx, "supplier late", folder=None, known=set())
        stat = ctx.client().webdav.stat("/Projects/Alpha/notes.md")
    finally:
        ctx.close()
    assert [h["path"] for h in out.hits] == ["/Projects/Alpha/notes.md"]
    hit = out.hits[0]
    assert hit["fileId"] == stat.file_id and hit["source"] == "server" and hit["match"] == "content"
    assert "supplier is late" in hit["passages"][0]["text"]
    assert out.sources == [{"source": "server full text", "answered": True, "hits": 1}]


def test_content_hits_skip_files_the_index_gave_and_other_folders(fts: Emulator) -> None:
    from server.tools.server_search import content_hits

    ctx = _ctx(fts)
    try:
        assert content_hits(ctx, "supplier", folder=None, known={"/Projects/Alpha/notes.md"}).hits == []
        assert content_hits(ctx, "supplier", folder="/Documents", known=set()).hits == []
    finally:
        ctx.close()


def test_a_listed_file_that_is_gone_is_dropped_and_said(fts: Emulator) -> None:
    from server.tools.server_search import content_hits

    ctx = _ctx(fts)
    try:
        # The search cluster lags behind the files: it still lists a file the server no longer has.
        fts.faults.add(method="PROPFIND", path_prefix="/remote.php/dav/files/alice/Projects/Alpha/notes.md",
                       status=404)
        out = content_hits(ctx, "supplier", folder=None, known=set())
    finally:
        fts.faults.clear()
        ctx.close()
    assert out.hits == []
    assert out.sources == [{"source": "server full text", "answered": True, "hits": 0,
                            "note": "1 listed file(s) no longer exist"}]


def test_slow_or_failing_full_text_is_named_not_waited_for(fts: Emulator) -> None:
    from server.tools.server_search import content_hits, providers

    ctx = _ctx(fts)
    try:
        providers(ctx)
        fts.faults.add(method="GET", path_prefix=FULLTEXT_PATH, delay=5.0)
        slow = content_hits(ctx, "supplier", folder=None, known=set())
        fts.faults.clear()
        fts.faults.add(method="GET", path_prefix=FULLTEXT_PATH, status=500, times=3)
        broken = content_hits(ctx, "supplier", folder=None, known=set())
    finally:
        fts.faults.clear()
        ctx.close()
    assert slow.hits == [] and slow.sources[0]["answered"] is False and "timed out" in slow.sources[0]["note"]
    assert broken.sources[0]["answered"] is False and _count(fts, FULLTEXT_PATH) == 3   # no retries


def test_without_the_full_text_app_no_source_is_asked(fts: Emulator) -> None:
    from server.tools.server_search import content_hits

    with Emulator() as plain:
        ctx = _ctx(plain)
        try:
            out = content_hits(ctx, "supplier", folder=None, known=set())
        finally:
            ctx.close()
        assert out.hits == [] and out.sources == [] and _count(plain, FULLTEXT_PATH) == 0


def test_name_hits_only_outside_the_covered_folders(fts: Emulator) -> None:
    from server.tools.server_search import name_hits

    ctx = _ctx(fts)
    try:
        everywhere = name_hits(ctx, "budget", folder=None, covered=None)
        outside = name_hits(ctx, "budget", folder=None, covered=["/Documents"])
    finally:
        ctx.close()
    assert {h["path"] for h in everywhere.hits} == {"/Documents/budget.xlsx", "/Projects/Alpha/budget.csv"}
    assert [h["path"] for h in outside.hits] == ["/Projects/Alpha/budget.csv"]
    assert all(h["match"] == "name" and isinstance(h["fileId"], int) for h in everywhere.hits)
