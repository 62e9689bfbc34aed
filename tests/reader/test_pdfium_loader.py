"""reader/formats/pdfium.py opens pypdfium2_raw's library itself: same ABI, same text, a fallback that works.

The direct loader declares a handful of PDFium prototypes by hand; a signature
that drifted from pypdfium2_raw's generated bindings would pass wrong
arguments to C. So each one is compared with pypdfium2_raw/bindings.py as
installed, and every PDF fixture is read through both loaders.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import types
from pathlib import Path
from typing import Any

import pypdfium2_raw
import pytest

from mcp_nextcloud.reader.document import DEFAULT_LIMITS, ReaderError
from mcp_nextcloud.reader.extract import extract
from mcp_nextcloud.reader.formats import pdfium
from mcp_nextcloud.reader.formats.pdf import extract_pdfium

ROOT = Path(__file__).resolve().parents[2]
PDFS = sorted([*(ROOT / "mcp_nextcloud" / "fixtures" / "docs").glob("*.pdf"),
               *(ROOT / "mcp_nextcloud" / "fixtures" / "bad").glob("*.pdf")])
# Our opaque handle structs and pypdfium2_raw's for the same PDFium handle kinds.
OPAQUE = {"_Document": "struct_fpdf_document_t__", "_Page": "struct_fpdf_page_t__",
          "_TextPage": "struct_fpdf_textpage_t__", "_Bookmark": "struct_fpdf_bookmark_t__",
          "_Dest": "struct_fpdf_dest_t__"}


def _shape(t: Any) -> Any:
    """What a ctypes type means to the ABI and to argument checking, comparable across the two binding sets."""
    if t is None:
        return None
    if issubclass(t, ctypes.Structure):
        fields = getattr(t, "_fields_", None)
        if fields is None:                                   # opaque: only its kind matters
            return ("opaque", OPAQUE.get(t.__name__, t.__name__))
        return ("struct", ctypes.sizeof(t), tuple((name, _shape(ft)) for name, ft in fields))
    if issubclass(t, ctypes._Pointer):
        return ("pointer", _shape(t._type_))
    return ("simple", t._type_, ctypes.sizeof(t))             # c_int 'i', c_ulong 'L', c_void_p 'P'...


def test_the_library_file_is_found_without_importing_pypdfium2_raw() -> None:
    folder = importlib.util.find_spec("pypdfium2_raw").submodule_search_locations[0]  # type: ignore[union-attr]
    assert pdfium.library_file() == os.path.join(folder, os.path.basename(pdfium.library_file() or ""))
    assert os.path.samefile(pdfium.library_file() or "", os.path.join(os.path.dirname(pypdfium2_raw.__file__),
                                                                      os.path.basename(pdfium.library_file() or "")))
    assert not isinstance(pdfium.pdfium_c, types.ModuleType), "this platform should use the direct loader"


def test_both_loaders_share_one_library_instance() -> None:
    """One PDFium per process: its state (initialisation included) is the same whichever loader made a call."""
    def address(function: Any) -> int | None:
        return ctypes.cast(function, ctypes.c_void_p).value

    for name in ("FPDF_InitLibraryWithConfig", "FPDFText_GetText"):
        assert address(getattr(pdfium.pdfium_c, name)) == address(getattr(pypdfium2_raw, name))


@pytest.mark.parametrize("name", sorted(pdfium.PROTOTYPES))
def test_each_prototype_matches_pypdfium2_raw(name: str) -> None:
    restype, argtypes = pdfium.PROTOTYPES[name]
    theirs = getattr(pypdfium2_raw, name)
    assert _shape(restype) == _shape(theirs.restype)
    assert [_shape(a) for a in argtypes] == [_shape(a) for a in theirs.argtypes]
    assert getattr(pdfium.pdfium_c, name).argtypes == argtypes        # what the loaded bindings really declare


def test_the_config_struct_matches_pypdfium2_raw() -> None:
    assert _shape(pdfium.FPDF_LIBRARY_CONFIG) == _shape(pypdfium2_raw.FPDF_LIBRARY_CONFIG)


def test_no_library_file_falls_back_to_pypdfium2_raw(tmp_path: Path) -> None:
    assert pdfium.library_file([str(tmp_path)]) is None
    assert pdfium.load([str(tmp_path)]) is pypdfium2_raw
    (tmp_path / os.path.basename(pdfium.library_file() or "libpdfium.so")).write_bytes(b"not a shared library")
    assert pdfium.load([str(tmp_path)]) is pypdfium2_raw    # there but not loadable: the fallback again


def _outcome(read: Any, path: Path) -> Any:
    """The Document, or the error: ReaderError from extract, PdfiumError (with PDFium's code) from pdfium alone."""
    try:
        return read(path.read_bytes(), path.name)
    except (ReaderError, pdfium.PdfiumError) as e:
        return ("error", type(e).__name__, e.code, str(e))


@pytest.mark.parametrize("path", PDFS, ids=[f"{p.parent.name}/{p.name}" for p in PDFS])
def test_every_pdf_fixture_reads_the_same_through_either_loader(path: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def pdfium_only(data: bytes, name: str) -> Any:
        return extract_pdfium(data, name, DEFAULT_LIMITS)

    direct = [_outcome(extract, path), _outcome(pdfium_only, path)]
    monkeypatch.setattr(pdfium, "pdfium_c", pdfium.load([str(tmp_path)]))   # no library there: pypdfium2_raw's
    assert pdfium.pdfium_c is pypdfium2_raw
    through_raw = [_outcome(extract, path), _outcome(pdfium_only, path)]
    assert direct == through_raw
