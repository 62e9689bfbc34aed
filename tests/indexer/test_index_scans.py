"""A scanned PDF in a synced folder is found by the words printed on it, on its page, marked as OCR text;
`index status` names the OCR engine, and a machine without one says so in status and in grep answers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_nextcloud.fixtures.emulator.scans import make_scans
from mcp_nextcloud.indexer.local.folder import index_folder
from mcp_nextcloud.reader import ocr

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def scans(tmp_path):
    folder = tmp_path / "scans"
    make_scans(folder)
    return folder


@pytest.mark.skipif(ocr.engine() is None, reason="no tesseract here (apt-get install tesseract-ocr)")
def test_a_scanned_pdf_is_found_by_the_words_printed_on_it(index, scans, counting_pool):
    index_folder(index, scans, pool=counting_pool)
    res = index.grep("cormorant ledger")
    assert {h.path for h in res.hits} == {"/scanned.pdf", "/scanned-note.png"}
    hit = next(h for h in res.hits if h.path == "/scanned.pdf")
    p = hit.passages[0]
    assert p.page == 1 and 0.8 < p.ocr <= 1 and p.to_dict()["ocr"] == {"confidence": p.ocr}
    doc = index.cached_document(index.get_file(path="/scanned.pdf"))
    assert doc.text[p.passageOffset:p.passageOffset + len(p.passage)] == p.passage   # an offset files_read takes
    third = index.grep("Kormoran").hits
    assert [(h.path, h.passages[0].page) for h in third] == [("/scanned.pdf", 3)]
    assert index.grep("phoques").hits[0].passages[0].page == 2
    st = index.status()["ocr"]
    assert st["engine"].startswith("tesseract") and st["filesNotRead"] == 0


def test_without_an_ocr_engine_status_and_grep_say_scans_were_not_read(tmp_path, scans):
    db = tmp_path / "i.db"
    env = dict(os.environ, PATH=str(tmp_path),
               PYTHONPATH=str(ROOT), MCP_NEXTCLOUD_INDEX=str(db))
    run = lambda *a: subprocess.run([sys.executable, "-m", "mcp_nextcloud", *a], cwd=ROOT, env=env,  # noqa: E731
                                    capture_output=True, text=True, timeout=180)
    r = run("index", "add", str(scans))
    assert r.returncode == 0, r.stderr
    r = run("index", "status")
    assert r.returncode == 0, r.stderr
    assert "OCR: no OCR engine on this machine" in r.stdout and "2 file(s) have scanned pages not read" in r.stdout
    r = run("grep", "cormorant", "--json")
    answer = json.loads(r.stdout)
    assert answer["total"] == 0
    assert any("scanned pages of /scanned-note.png, /scanned.pdf were not searched" in w and "tesseract-ocr" in w
               for w in answer["warnings"])
    if ocr.engine() is None:
        return
    # Tesseract installed since: the next rescan reads the scans, though the files did not change.
    env["PATH"] = os.environ["PATH"]
    r = run("index", "add", str(scans))
    assert r.returncode == 0, r.stderr
    assert json.loads(run("grep", "cormorant", "--json").stdout)["total"] == 2
    assert "scanned pages not read" not in run("index", "status").stdout


@pytest.mark.skipif(ocr.engine() is None, reason="no tesseract here (apt-get install tesseract-ocr)")
def test_a_synced_scan_indexed_without_ocr_is_read_again_by_the_next_sync(emulator_factory, tmp_path):
    """An index built where no OCR engine was (the file marked '+no-ocr'): the next sync downloads and OCRs it,
    though neither the file nor its folder changed on the server."""
    from mcp_nextcloud.fixtures.emulator.scans import scanned_pdf
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.config import Account

    emu = emulator_factory(seed="empty")
    emu.state.makedirs("alice", "/Scans")
    emu.state.put_file("alice", "/Scans/s.pdf", scanned_pdf())
    emu.state.put_file("alice", "/top.txt", b"top level text\n")
    with Index.open(tmp_path / "i.db") as ix, NextcloudClient(Account(**emu.account("alice")), retries=1) as client:
        sync(client, ix)
        assert ix.grep("Kormoran").total == 1
        # What a machine without Tesseract leaves: the file marked, no OCR text.
        ix.writer().call(lambda tx: tx.store(ix.get_file(path="/Scans/s.pdf").id, _no_ocr_rows()))
        assert ix.grep("Kormoran").total == 0 and ix.status()["ocr"]["filesNotRead"] == 1
        gets = emu.request_count("GET", "/remote.php/dav/files/alice/Scans/s.pdf")
        report = sync(client, ix)
        assert emu.request_count("GET", "/remote.php/dav/files/alice/Scans/s.pdf") == gets + 1
        assert report.indexed == 1 and ix.grep("Kormoran").total == 1 and ix.status()["ocr"]["filesNotRead"] == 0
        assert sync(client, ix).indexed == 0   # and only once


def _no_ocr_rows():
    from mcp_nextcloud.indexer.store.prepare import prepare
    from mcp_nextcloud.reader.document import Document

    return prepare(Document(text="", kind="pdf", name="s.pdf", engine="pypdfium2+no-ocr"))
