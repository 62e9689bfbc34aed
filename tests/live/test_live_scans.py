"""A scanned PDF uploaded to the real Nextcloud is synced, OCR'd and found by the words printed on it
(skipped unless the live account is configured and Tesseract is installed)."""
from __future__ import annotations

import pytest

from mcp_nextcloud.fixtures.emulator.scans import scanned_pdf
from mcp_nextcloud.reader import ocr

pytestmark = [pytest.mark.live,
              pytest.mark.skipif(ocr.engine() is None, reason="no tesseract here (apt-get install tesseract-ocr)")]


def test_live_scanned_pdf_is_found_by_its_printed_words(tools_factory, live_dav, scratch_folder):
    path = f"{scratch_folder}/scanned.pdf"
    live_dav.put(path, scanned_pdf())
    assert live_dav.get(path)[:5] == b"%PDF-"          # the server holds it, read back with a plain client
    tools = tools_factory(root=scratch_folder)
    found = tools.ok("files_grep", {"query": "Kormoran", "path": scratch_folder})
    assert [h["path"] for h in found["hits"]] == [path]
    passage = found["hits"][0]["passages"][0]
    assert passage["page"] == 3 and passage["ocr"]["confidence"] > 0.8
    read = tools.ok("files_read", {"path": path, "offset": passage["matches"][0][0], "limit": 40})
    assert read["content"].startswith("Kormoran") and sorted(read["ocr"]["pages"]) == ["1", "2", "3"]
