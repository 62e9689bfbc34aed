"""find answers on the ~140k-character fixture manual (issue 18 item 3, issue 8 item 1).

Figures: the JSON bytes of a find answer for 5 matches (budget <= 1.5 kB:
passages are the sentence or line around a match, bounded, shared when
close), passage lengths, and how many more places substring matching finds
than whole words. Deterministic (bytes and counts): the byte budget fails the run.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

from benchmarks.conftest import report
from mcp_nextcloud.reader import extract, find

MANUAL = Path(__file__).resolve().parent.parent / "mcp_nextcloud" / "fixtures" / "docs" / "manual.pdf"
QUERIES = ["quota", "new app", "configuration", "propriété", "the server", "install"]


def _bytes(obj) -> int:
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode())


def test_find_answer_size_on_manual() -> None:
    doc = extract(MANUAL.read_bytes(), "manual.pdf")
    figures: dict = {"document chars": len(doc.text)}
    sizes = {}
    lengths: list[int] = []
    for q in QUERIES:
        res = find(doc, q, limit=5)
        assert res.total >= 1, f"{q!r} is not in the fixture manual"
        sizes[q] = _bytes(res.to_dict())
        lengths += [len(m.passage) for m in res.matches if not m.shared]
        whole = find(doc, q, match="whole_word", limit=0).total
        figures[f"find {q!r}: answer bytes (5 matches) / matches substring / whole word"] = (
            f"{sizes[q]} / {res.total} / {whole}")
    figures["passage length, median / max (chars)"] = f"{statistics.median(lengths)} / {max(lengths)}"
    worst = max(sizes.values())
    report("find", figures, [("find answer bytes for 5 matches, worst query", worst, 1500, "<=")])
    assert worst <= 1500, sizes
