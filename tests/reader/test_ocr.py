"""Scanned pages: image-only PDF pages and images are OCR'd (Tesseract), with page offsets and confidence;
without an OCR engine the Document says so instead of holding nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_nextcloud import reader
from mcp_nextcloud.fixtures.emulator.scans import SCAN_PAGES, scanned_pdf, scanned_png
from mcp_nextcloud.reader import ocr

ROOT = Path(__file__).resolve().parents[2]
needs_ocr = pytest.mark.skipif(ocr.engine() is None, reason="no tesseract here (apt-get install tesseract-ocr)")


@needs_ocr
def test_a_scanned_pdf_is_read_by_ocr_page_by_page():
    doc = reader.extract(scanned_pdf(), "scan.pdf")
    assert len(doc.pages) == 3 and "tesseract" in doc.engine
    page = lambda n: doc.text[doc.pages[n - 1]:(doc.pages[n] if n < len(doc.pages) else None)]  # noqa: E731
    assert "cormorant ledger" in page(1) and "registre des phoques" in page(2) and "Kormoran" in page(3)
    assert "bureau du port vérifie" in page(2)            # accents read (fra)
    info = doc.structure["ocr"]
    assert sorted(info["pages"]) == ["1", "2", "3"] and all(0.8 < c <= 1 for c in info["pages"].values())
    assert any("OCR text" in w and "confidence" in w for w in doc.warnings)
    assert not any("no text layer" in w for w in doc.warnings)


@needs_ocr
def test_an_image_of_text_gets_its_words_after_its_description():
    doc = reader.extract(scanned_png(SCAN_PAGES[0]), "note.png")
    assert doc.image is not None and doc.text.startswith("Image note.png")
    assert "harbour office counts every boat" in doc.text and doc.structure["ocr"]["pages"]["1"] > 0.8


def test_a_tiny_image_is_not_sent_to_ocr():
    doc = reader.extract((ROOT / "mcp_nextcloud" / "fixtures" / "docs" / "photo.png").read_bytes(), "photo.png")
    assert "ocr" not in doc.structure and doc.engine == "pillow"


def test_without_an_ocr_engine_the_document_says_so(tmp_path):
    """A machine without tesseract (PATH without it): the scanned pages are named as not read, with the fix."""
    pdf = tmp_path / "scan.pdf"
    pdf.write_bytes(scanned_pdf(SCAN_PAGES[:2]))
    code = ("import json, sys; from mcp_nextcloud import reader; "
            "d = reader.extract(open(sys.argv[1], 'rb').read(), 'scan.pdf'); "
            "print(json.dumps({'w': d.warnings, 's': d.structure, 'e': d.engine, 't': d.text}))")
    env = dict(os.environ, PATH=str(tmp_path), PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", code, str(pdf)], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["s"]["ocr"] == {"notRead": 2, "missing": True} and out["e"].endswith("+no-ocr")
    assert any("1-2" in w and "no OCR engine" in w and "tesseract-ocr" in w for w in out["w"])
    assert not out["t"].strip()


def test_tesseract_tsv_becomes_lines_and_a_mean_confidence():
    tsv = ("level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"
           "5\t1\t1\t1\t1\t1\t0\t0\t1\t1\t90\tHello\n5\t1\t1\t1\t1\t2\t0\t0\t1\t1\t80\tworld\n"
           "5\t1\t2\t1\t1\t1\t0\t0\t1\t1\t70\tBye\n4\t1\t2\t1\t1\t0\t0\t0\t1\t1\t-1\t\n")
    page = ocr.read_tsv(tsv)
    assert page.text == "Hello world\n\nBye\n" and page.confidence == 0.8


@needs_ocr
def test_a_page_past_its_time_is_stopped():
    with pytest.raises(ocr.OcrError, match="took over 0.05 s and was stopped"):
        ocr.ocr_image(scanned_png(SCAN_PAGES[0]), seconds=0.05)


@needs_ocr
def test_a_page_past_its_memory_cap_fails_alone(monkeypatch):
    monkeypatch.setattr(ocr, "OCR_MEMORY", 16 * 1024 * 1024)   # read in the child, before exec
    with pytest.raises(ocr.OcrError, match="memory cap"):
        ocr.ocr_image(scanned_png(SCAN_PAGES[0]))
    monkeypatch.undo()
    assert "cormorant" in ocr.ocr_image(scanned_png(SCAN_PAGES[0])).text


@needs_ocr
def test_a_mixed_pdf_keeps_its_text_layer_and_ocrs_only_the_scanned_page(tmp_path):
    """Page 1 has a text layer, page 2 is blank, page 3 is an image of text: only page 3 is OCR text."""
    from fpdf import FPDF

    png = tmp_path / "scan.png"
    png.write_bytes(scanned_png(SCAN_PAGES[2]))
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="A typed page about the albatross.")
    pdf.add_page()
    pdf.add_page()
    pdf.image(str(png), x=0, y=0, w=210)
    doc = reader.extract(bytes(pdf.output()), "mixed.pdf")
    assert len(doc.pages) == 3 and doc.text.startswith("A typed page about the albatross.")
    assert list(doc.structure["ocr"]["pages"]) == ["3"]
    assert "Kormoran" in doc.text[doc.pages[2]:]
    assert [w for w in doc.warnings if "OCR" in w] == [w for w in doc.warnings if "page(s) 3 are OCR text" in w]
