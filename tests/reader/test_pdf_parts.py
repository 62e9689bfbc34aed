"""A PDF read as page ranges (reader.formats.pdf.read_part + assemble) is the Document `extract` makes.

indexer.jobs.oneshot reads a big PDF's pages in several children and assembles them; these cases
check, in one process, that every split of every PDF fixture gives the identical Document (text,
page offsets, outline with lines, warnings, engine), and that the ranges always cover each page once.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_nextcloud.reader.document import ReaderCode
from mcp_nextcloud.fixtures.large_docs import bookmarked_pdf
from mcp_nextcloud.reader.document import DEFAULT_LIMITS, Limits, ReaderError
from mcp_nextcloud.reader.extract import extract, finish
from mcp_nextcloud.reader.formats.pdf import assemble, part_pages, read_part

ROOT = Path(__file__).resolve().parents[2]
PDFS = sorted((ROOT / "mcp_nextcloud" / "fixtures" / "docs").glob("*.pdf"))


def _split(data: bytes, name: str, parts: int, limits: Limits = DEFAULT_LIMITS, min_pages: int = 1):
    pieces = [read_part(data, name, limits, k, parts, min_pages=min_pages) for k in range(parts)]
    return finish(assemble(name, limits, pieces), limits)


def test_every_pdf_fixture_is_covered() -> None:
    assert {p.name for p in PDFS} >= {"manual.pdf", "tex-accents.pdf"}


@pytest.mark.parametrize("path", PDFS, ids=lambda p: p.name)
def test_every_split_of_a_fixture_is_the_whole_document(path: Path) -> None:
    data = path.read_bytes()
    whole = extract(data, path.name)
    assert whole.engine == "pypdfium2" and whole.text.strip()
    pages = len(whole.pages)
    for parts in sorted({1, 2, 3, 5, pages, pages + 2}):
        assert _split(data, path.name, parts) == whole, parts


def test_bookmarks_on_every_part_and_limits_that_cut() -> None:
    data = bookmarked_pdf(chapters=12, sections=2, subsections=1)
    whole = extract(data, "b.pdf")
    assert len(whole.pages) == 12 and len(whole.outline) == 12 * 5
    for parts in (2, 4, 7, 12):
        assert _split(data, "b.pdf", parts) == whole
    cut = Limits(max_pages=5, max_chars=400)
    short = extract(data, "b.pdf", limits=cut)
    assert any("PDF cut at 5 of 12 pages" in w for w in short.warnings)
    assert any(w.startswith("text cut at 400") for w in short.warnings)
    for parts in (1, 2, 3, 9):
        assert _split(data, "b.pdf", parts, cut) == short


def test_only_the_first_part_reads_the_bookmarks(fixture_docs: Path) -> None:
    data = (fixture_docs / "manual.pdf").read_bytes()
    first, second = (read_part(data, "manual.pdf", DEFAULT_LIMITS, k, 2) for k in (0, 1))
    assert first.toc and second.toc is None
    assert (first.first, len(first.texts), second.first, len(second.texts)) == (0, 25, 25, 26)


def test_a_part_of_an_encrypted_pdf_says_so(fixture_bad: Path) -> None:
    with pytest.raises(ReaderError) as err:
        read_part((fixture_bad / "encrypted.pdf").read_bytes(), "encrypted.pdf", DEFAULT_LIMITS, 1, 2)
    assert err.value.code is ReaderCode.ENCRYPTED


@settings(max_examples=300, deadline=None)
@given(total=st.integers(0, 400), max_pages=st.integers(1, 500), parts=st.integers(1, 9),
       min_pages=st.integers(1, 40))
def test_parts_cover_each_page_once_in_order(total: int, max_pages: int, parts: int, min_pages: int) -> None:
    limits = Limits(max_pages=max_pages)
    ranges = [part_pages(total, limits, k, parts, min_pages) for k in range(parts)]
    pages = [i for r in ranges for i in r]
    assert pages == list(range(min(total, max_pages)))
    used = [r for r in ranges if len(r)]
    assert len(used) <= parts
    if len(used) > 1:
        assert all(len(r) >= min_pages for r in used)
    assert all(r.step == 1 for r in ranges)


@settings(max_examples=25, deadline=None)
@given(chapters=st.integers(1, 9), parts=st.integers(1, 6), min_pages=st.integers(1, 4))
def test_generated_pdfs_split_anyhow_are_the_whole(chapters: int, parts: int, min_pages: int) -> None:
    data = bookmarked_pdf(chapters=chapters, sections=1, subsections=1)
    assert _split(data, "g.pdf", parts, min_pages=min_pages) == extract(data, "g.pdf")
