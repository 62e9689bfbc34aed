"""`mcp-nextcloud demo`: one command shows what an agent sees, against the emulator and the fixtures."""
from __future__ import annotations

import io
import json

from mcp_nextcloud.reader.ocr import engine as ocr_engine
from mcp_nextcloud.cli.demo import run


def _blocks(text: str) -> list[tuple[str, str]]:
    """(heading, body) of each '## ...' section, in order."""
    out = []
    for chunk in text.split("\n## ")[1:]:
        head, _, body = chunk.partition("\n")
        out.append((head, body.strip()))
    return out


def _tool_count() -> int:
    """How many tools the server registers (the demo lists them all; other domains add theirs)."""
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    return len(build_server(ServerContext(account=None, index=None))._tool_manager.list_tools())


def test_demo_prints_what_an_agent_sees():
    out = io.StringIO()
    assert run(query="quota", out=out) == 0
    text = out.getvalue()
    assert f"## tools/list: {_tool_count()} tools" in text
    blocks = _blocks(text)
    heads = [h for h, _ in blocks]

    whoami = next(b for h, b in blocks if h.startswith("nextcloud_whoami"))
    assert json.loads(whoami)["userId"] == "alice"

    greps = [(h, b) for h, b in blocks if h.startswith("files_grep")]
    assert all("-> ok" in h for h, _ in greps)
    hits = json.loads(greps[0][1])["hits"]
    assert any(h["path"] == "/Documents/manual.pdf" for h in hits)
    # The glued-word query: "new app" finds the manual, whose text also says "newapp".
    glued = json.loads(greps[1][1])["hits"][0]
    assert glued["path"] == "/Documents/manual.pdf"
    # The scanned PDF: found by words printed on its image-only first page, the passage marked as OCR text.
    if ocr_engine() is not None:
        scan = json.loads(greps[2][1])["hits"][0]
        assert scan["path"] == "/Scans/scanned.pdf" and scan["passages"][0]["page"] == 1
        assert scan["passages"][0]["ocr"]["confidence"] > 0.8

    reads = [(h, b) for h, b in blocks if h.startswith("files_read")]
    find_head, find_body = reads[0]
    assert "-> ok" in find_head
    matches = json.loads(find_body)["matches"]
    assert matches and all(m["text"].lower() == "quota" for m in matches)
    outline = json.loads(reads[1][1])
    assert [e["title"] for e in outline["entries"]][:2] == ["Summary", "Expenses"]
    # A French question finds the English shopping list by meaning, and files_read opens its passage.
    question = json.loads(greps[3][1])
    assert question["mode"] == "hybrid" and question["hits"][0]["path"] == "/Documents/notes.txt"
    top = question["hits"][0]
    assert top["match"] == "meaning"
    opened = json.loads(reads[2][1])
    assert opened["content"].startswith(top["passages"][0]["passage"])
    assert "embedded" in text and "meaning search" in text
    # The last call is the deliberate mistake: an instruction, not a traceback.
    err_head, err_body = reads[-1]
    assert "-> error" in err_head and "files_search" in err_body and "Traceback" not in text
    assert len(heads) == 10
