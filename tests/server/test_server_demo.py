"""`mcp-nextcloud demo`: one command shows tools/list, files_grep and files_read(find) on the manual."""
from __future__ import annotations

import io
import json

from server.demo import run


def test_demo_prints_what_an_agent_sees():
    out = io.StringIO()
    assert run(query="quota", out=out) == 0
    text = out.getvalue()
    assert "## tools/list: 6 tools" in text
    blocks = {}
    for chunk in text.split("\n## ")[1:]:
        head, _, body = chunk.partition("\n")
        blocks[head.split(" ", 1)[0]] = (head, body.strip())
    grep_head, grep_body = blocks["files_grep"]
    read_head, read_body = blocks["files_read"]
    assert "-> ok" in grep_head and "-> ok" in read_head
    hits = json.loads(grep_body)["hits"]
    assert any(h["path"] == "/Documents/manual.pdf" for h in hits)
    matches = json.loads(read_body)["matches"]
    assert matches and all(m["text"].lower() == "quota" for m in matches)
