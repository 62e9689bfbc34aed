"""Meaning search against a real Nextcloud (skipped unless the live variables are set).

A German note is put in a scratch folder with a plain HTTP client, synced into a fresh index and embedded;
an English question that shares none of its words finds it by meaning through files_grep, and files_read
opens it at the passage's offset. The note's bytes are read back over plain WebDAV to check the passage.
"""
from __future__ import annotations

import pytest

from tests.live.conftest import build_live_tools

pytestmark = pytest.mark.live

NOTE = ("Kündigung der Wohnung\nDer Mieter kann den Mietvertrag mit einer Frist von drei Monaten schriftlich "
        "kündigen. Die Kaution wird nach dem Auszug zurückgezahlt.\n")


def test_live_a_question_finds_a_note_in_another_language(live_account, live_dav, scratch_folder, tmp_path):
    from mcp_nextcloud.indexer.jobs.embed import Builder

    path = f"{scratch_folder}/mietvertrag.txt"
    live_dav.put(path, NOTE.encode())
    tools = build_live_tools(live_account, tmp_path, root=scratch_folder)
    try:
        built = Builder(tools.ctx.index).build()   # type: ignore[attr-defined]
        assert built.stopped is None and built.windows >= 1
        res = tools.ok("files_grep", {"query": "how much notice do I give to end my apartment lease",
                                      "path": scratch_folder})
        assert res["mode"] == "hybrid"
        top = res["hits"][0]
        assert top["path"] == path and top["match"] == "meaning", res
        passage = top["passages"][0]
        text = live_dav.get(path).decode()      # the note as the server holds it (plain WebDAV GET)
        assert text[passage["passageOffset"]:].startswith(passage["passage"])
        read = tools.ok("files_read", {"path": path, "offset": passage["passageOffset"],
                                       "limit": len(passage["passage"]) + 40})
        assert read["content"].startswith(passage["passage"])
    finally:
        tools.ctx.close()  # type: ignore[attr-defined]
