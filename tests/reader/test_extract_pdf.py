"""manual.pdf with both engines: text, pages, bookmarks, artefacts, markers on their pages."""
from __future__ import annotations

import re

import pytest

from mcp_nextcloud.reader.document import DEFAULT_LIMITS, Limits
from mcp_nextcloud.reader.extract import extract
from mcp_nextcloud.reader.formats.pdf import extract_pdfminer
from mcp_nextcloud.reader.formats.pdf_accents import leftover_artefacts

# Facts documented in fixtures/README.md (1-based pages as drawn by make_fixtures.py).
MARKER_PAGES = {"aubergine lighthouse": 3, "girafe turquoise": 22, "quantum pelican": 28,
                "newapp": 37, "zephyr checksum": 50, "Les propriétés du dossier": 13, "Dès la": 13}


@pytest.fixture(scope="module")
def miner(fixture_docs):
    return extract_pdfminer((fixture_docs / "manual.pdf").read_bytes(), "manual.pdf", DEFAULT_LIMITS)


def test_pdfium_is_primary(extracted):
    doc = extracted("manual.pdf")
    assert doc.kind == "pdf" and doc.engine == "pypdfium2" and doc.page_unit == "page"
    assert 130_000 < len(doc.text) < 150_000
    assert len(doc.pages) == 51 and doc.pages[0] == 0 and doc.pages == sorted(doc.pages)
    assert doc.warnings == []
    assert "\r" not in doc.text


def test_markers_on_documented_pages(extracted):
    doc = extracted("manual.pdf")
    for phrase, page in MARKER_PAGES.items():
        offset = doc.text.find(phrase)
        assert offset >= 0, phrase
        assert doc.page_of(offset) == page, phrase


def test_pdf_artefacts_repaired_alike_by_both_engines(extracted, miner):
    doc = extracted("manual.pdf")
    assert "expres-\nsion" in doc.text and "\ufffe" not in doc.text   # pdfium's U+FFFE line-end hyphen, restored
    assert "expres-\nsion" in miner.text           # pdfminer keeps the hyphen and the break
    for text in (doc.text, miner.text):
        assert "configuration file" in text and "workflow" in text  # ligatures ﬁ ﬂ drawn, letters read
        assert "Les propriétés du dossier" in text and "Dès la" in text  # TeX-style accents recomposed
        assert leftover_artefacts(text) == 0
    assert "new app" in doc.text and "Straße" in doc.text


def test_bookmarks_map_to_offsets(extracted):
    doc = extracted("manual.pdf")
    chapters = [e for e in doc.outline if e.level == 1]
    sections = [e for e in doc.outline if e.level == 2]
    assert len(chapters) == 10 and len(sections) == 30
    assert chapters[0].title == "1. Getting started" and chapters[0].page == 2
    assert chapters[-1].title == "10. Reference"
    assert [e.offset for e in doc.outline] == sorted(e.offset for e in doc.outline)
    for entry in doc.outline:
        assert doc.text[entry.offset:].startswith(entry.title), entry.title
        assert doc.page_of(entry.offset) == entry.page
        assert entry.line == doc.text.count("\n", 0, entry.offset) + 1


def test_pdfminer_fallback_engine_agrees(extracted, miner):
    doc = extracted("manual.pdf")
    assert miner.engine == "pdfminer.six" and len(miner.pages) == 51
    assert [(e.title, e.level, e.page) for e in miner.outline] == [(e.title, e.level, e.page) for e in doc.outline]
    assert all(miner.text[e.offset:].startswith(e.title) for e in miner.outline)
    def words(t: str) -> set[str]:
        return set(re.findall(r"\w{4,}", t.lower()))

    primary, fallback = words(doc.text), words(miner.text)
    recall = len(primary & fallback) / len(primary)
    assert recall > 0.97, recall
    for phrase, page in MARKER_PAGES.items():  # pdfminer may widen spaces in justified lines
        found = re.search(r"\s+".join(map(re.escape, phrase.split())), miner.text)
        assert found is not None and miner.page_of(found.start()) == page, phrase


def test_page_cap_warns(fixture_docs):
    doc = extract((fixture_docs / "manual.pdf").read_bytes(), "manual.pdf", limits=Limits(max_pages=3))
    assert len(doc.pages) == 3 and "aubergine lighthouse" in doc.text and "zephyr" not in doc.text
    assert any("cut at 3 of 51 pages" in w for w in doc.warnings)
    assert all(e.page <= 3 for e in doc.outline)


def test_scanned_pdf_warns(fixture_bad):
    doc = extract((fixture_bad / "scanned.pdf").read_bytes(), "scanned.pdf")
    assert doc.text.strip() == "" and len(doc.pages) == 1
    assert any(w.startswith("scanned PDF, no text layer") for w in doc.warnings)


def test_pdf_without_bookmarks_has_empty_outline():
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.cell(0, 10, "Plain page one")
    pdf.add_page()
    pdf.cell(0, 10, "Plain page two")
    doc = extract(bytes(pdf.output()), "plain.pdf")
    assert doc.outline == [] and len(doc.pages) == 2
    assert doc.text[doc.pages[1]:].startswith("Plain page two")


def test_damaged_pdf_falls_back_to_pdfminer(fixture_bad):
    doc = extract((fixture_bad / "damaged.pdf").read_bytes(), "damaged.pdf")
    assert doc.engine == "pdfminer.six" and doc.text == "Recovered by the fallback engine\n"
    assert any(w.startswith("damaged PDF") for w in doc.warnings)
