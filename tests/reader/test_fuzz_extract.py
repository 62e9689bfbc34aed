"""Fuzz extract(): random bytes and mutated fixtures give a Document or a ReaderError, nothing else."""
from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_nextcloud.reader.document import Document, Limits, ReaderError
from mcp_nextcloud.reader.extract import extract

DOCS = Path(__file__).resolve().parents[2] / "mcp_nextcloud" / "fixtures" / "docs"
# The manual is big and slow under pdfminer; a small PDF keeps the fuzz run short.
SAMPLES = {p.name: p.read_bytes() for p in sorted(DOCS.iterdir()) if p.is_file() and p.name != "manual.pdf"}
NAMES = sorted(SAMPLES) + ["x.pdf", "x.xlsx", "x.pptx", "x.docx", "x.odt", "x.ods", "x.odp", "x.png",
                           "x.webp", "x.csv", "x.json", "x.html", "x.md", "x.txt", "noext"]
LIMITS = Limits(max_seconds=10, max_rows_per_sheet=200, max_pages=5)
# FUZZ_EXAMPLES=1000 for a longer local hunt; CI keeps the default short run.
FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])


def _small_pdf() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.start_section("Intro")
    pdf.cell(0, 10, "Small fuzz seed")
    return bytes(pdf.output())


SAMPLES["small.pdf"] = _small_pdf()


def _check(data: bytes, name: str) -> None:
    try:
        doc = extract(data, name, limits=LIMITS)
    except ReaderError as err:
        assert err.code and "retry" in str(err)  # every refusal says whether retrying makes sense
        return
    assert isinstance(doc, Document) and isinstance(doc.text, str)
    assert doc.pages[0] == 0 and doc.pages == sorted(doc.pages)
    assert all(0 <= e.offset <= len(doc.text) for e in doc.outline)


@FUZZ
@given(data=st.binary(max_size=2048), name=st.sampled_from(NAMES))
def test_random_bytes(data, name):
    _check(data, name)


@st.composite
def mutated(draw):
    name = draw(st.sampled_from(sorted(SAMPLES)))
    data = bytearray(SAMPLES[name])
    op = draw(st.sampled_from(["flip", "truncate", "splice", "insert"]))
    if op == "flip":
        for _ in range(draw(st.integers(1, 20))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
    elif op == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    elif op == "splice":
        other = SAMPLES[draw(st.sampled_from(sorted(SAMPLES)))]
        i = draw(st.integers(0, len(data)))
        j = draw(st.integers(0, len(other)))
        data = data[:i] + other[j:]
    else:
        i = draw(st.integers(0, len(data)))
        data = data[:i] + draw(st.binary(min_size=1, max_size=64)) + data[i:]
    rename = draw(st.booleans())
    return bytes(data), draw(st.sampled_from(NAMES)) if rename else name


@FUZZ
@given(sample=mutated())
def test_mutated_fixtures(sample):
    _check(*sample)


def test_every_fixture_unmutated_extracts():
    for name, data in SAMPLES.items():
        assert isinstance(extract(data, name, limits=LIMITS), Document), name
