"""One grep hit as files_grep and `mcp-nextcloud grep --json` both show it (one shape for one thing).

A module of its own so the CLI's `grep --json` gets the shape without
importing files_grep's module (the MCP SDK, pydantic, the HTTP client).
"""
from __future__ import annotations

from typing import Any

from mcp_nextcloud.indexer.models import iso_time
from mcp_nextcloud.indexer.search.grep import GrepHit


def hit_entry(h: GrepHit) -> dict[str, Any]:
    """A GrepHit as a compact record.

    Compact on purpose (ten of these per answer): the path says the kind, phrase is only said when false. A
    handle the index does not know (fileId of a plain local file) is left out, never sent as null. `score` is
    indexer/search/score.py's 0-1 scale (the tool's description says how to read it).
    """
    hit = {"path": h.path, "fileId": h.fileId, "score": h.score, "modified": iso_time(h.mtime), "more": h.more,
           "passages": [p.to_dict() for p in h.passages], "phrase": False if not h.phrase else None,
           "folder": h.folder, "match": getattr(h, "match", None)}
    return {k: v for k, v in hit.items() if v is not None}
