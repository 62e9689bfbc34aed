"""files_read against the emulator: slices, find, outline, images, formats, caps, caching and every misuse."""
from __future__ import annotations

import base64
import time
import uuid

import pytest

from mcp_nextcloud.server.context import Settings

ALICE = "alice"


def _put(world, path: str, data: bytes) -> None:
    # mtime in the future so "changed since the last sync" is unambiguous at one-second resolution
    world.emulator.state.put_file(ALICE, path, data, mtime=time.time() + 5)


def test_text_slices_chain_with_next_offset(call, ok, mode):
    first = ok(call("files_read", {"path": "/Documents/manual.md", "limit": 100}, mode))
    assert first["truncated"] is True and first["nextOffset"] <= 100
    assert first["path"] == "/Documents/manual.md" and isinstance(first["fileId"], int) and first["etag"]
    pieces, offset, total = [first["content"]], first["nextOffset"], first["total"]
    while offset is not None:
        page = ok(call("files_read", {"path": "/Documents/manual.md", "offset": offset, "limit": 100}, mode))
        assert page["offset"] == offset
        pieces.append(page["content"])
        offset = page.get("nextOffset")
    assert sum(len(p) for p in pieces) == total
    assert "Installation" in "".join(pieces)


def test_find_in_the_manual_returns_offsets_files_read_accepts(call, ok, mode):
    found = ok(call("files_read", {"path": "/Documents/manual.pdf", "find": "install", "limit": 3}, mode))
    assert found["kind"] == "pdf" and found["matches"], found
    assert found["total"] >= len(found["matches"])
    passage = ""
    for m in found["matches"]:
        passage = m.get("passage", passage)            # a match close to the one before shares its passage
        assert m["page"] >= 1 and "install" in passage.lower()
        around = ok(call("files_read", {"path": "/Documents/manual.pdf", "offset": m["offset"], "limit": 40}, mode))
        assert around["content"].lower().startswith(m["text"].lower())


def test_find_resumes_from_next_offset(call, ok):
    first = ok(call("files_read", {"path": "/Documents/manual.pdf", "find": "quota", "limit": 2}))
    assert first["truncated"] is True and first["total"] > 2 and "offset=" in first["hint"]
    nxt = first["nextOffset"]
    second = ok(call("files_read", {"path": "/Documents/manual.pdf", "find": "quota", "limit": 2, "offset": nxt}))
    assert second["matches"] and all(m["offset"] >= nxt for m in second["matches"])
    assert {m["offset"] for m in second["matches"]}.isdisjoint({m["offset"] for m in first["matches"]})


def test_find_without_match_says_what_to_try(call, ok):
    res = ok(call("files_read", {"path": "/Documents/manual.md", "find": "zzqqxx"}))
    assert res["matches"] == [] and res["total"] == 0 and res["hint"]


@pytest.mark.parametrize("path, kind, needle", [
    ("/Documents/budget.xlsx", "xlsx", "## Sheet: Summary"),
    ("/Documents/slides.pptx", "pptx", "violet walrus"),
    ("/Documents/report.docx", "docx", "amber heron"),
    ("/Documents/notes.odt", "odt", "coral kestrel"),
    ("/Documents/data.csv", "csv", "Köln"),
])
def test_office_and_odf_are_read_as_text(call, ok, path, kind, needle):
    res = ok(call("files_read", {"path": path}))
    assert res["kind"] == kind and needle in res["content"]
    found = ok(call("files_read", {"path": path, "find": needle}))
    assert found["matches"][0]["text"] == needle


def test_outline_of_markdown_and_a_sheet(call, ok, mode):
    md = ok(call("files_read", {"path": "/Documents/manual.md", "format": "outline"}, mode))
    assert [e["title"] for e in md["entries"]][:2] == ["Sample Manual", "Installation"]
    sheet = ok(call("files_read", {"path": "/Documents/budget.xlsx", "format": "outline"}, mode))
    assert sheet["entries"] and sheet["kind"] == "xlsx"


def test_outline_of_a_600_bookmark_pdf_fits_4_kb_and_expands_by_offset(world, call, ok):
    from mcp_nextcloud.fixtures.large_docs import bookmarked_pdf

    path = f"/Documents/big-outline-{uuid.uuid4().hex[:6]}.pdf"
    _put(world, path, bookmarked_pdf())
    result = call("files_read", {"path": path, "format": "outline"})
    assert len(result.content[0].text.encode()) <= 4096
    top = ok(result)
    chapters = [e for e in top["entries"] if e["level"] == 1]
    assert top["total"] == 600 and len(chapters) == 24
    assert chapters[-1]["subsections"] == 24 and "offset" in top["hint"]
    chapter = chapters[9]
    expanded_result = call("files_read", {"path": path, "format": "outline", "offset": chapter["offset"]})
    assert len(expanded_result.content[0].text.encode()) <= 4096
    expanded = ok(expanded_result)
    titles = [e["title"] for e in expanded["entries"]]
    at = titles.index(chapter["title"])
    assert chapter["title"] == "10. Chapter about topic 10"
    assert titles[at + 1: at + 3] == ["10.1 Section on part 1", "10.1.1 Detail 1"]
    section = ok(call("files_read", {"path": path, "offset": expanded["entries"][at + 1]["offset"], "limit": 60}))
    assert section["content"].startswith("10.1 Section on part 1\n")


def test_a_large_manual_in_one_outline_call_and_a_ranked_find(world, call, ok):
    from mcp_nextcloud.fixtures.large_docs import plotting_manual_pdf

    path = f"/Documents/plotting-{uuid.uuid4().hex[:6]}.pdf"
    _put(world, path, plotting_manual_pdf())
    result = call("files_read", {"path": path, "format": "outline", "find": "splot"})
    assert len(result.content[0].text.encode()) <= 4096
    titles = [e["title"] for e in ok(result)["entries"]]
    assert titles[titles.index("Splot") + 1] == "Splot syntax"          # the section named, opened
    found = ok(call("files_read", {"path": path, "find": "splot", "limit": 3}))
    assert [m["kind"] for m in found["matches"]] == ["word"] * 3 and "in" not in found["matches"][0]
    assert found["kinds"] == {"word": 13, "part": 1, "toc": 1, "index": 1}
    assert found["truncated"] and "table-of-contents" in found["hint"] and found["nextOffset"]
    last = ok(call("files_read", {"path": path, "find": "splot", "offset": found["nextOffset"], "limit": 100}))
    assert last["matches"][-1]["in"] == "index" and not last["truncated"]


def test_file_id_reads_the_same_file(call, ok):
    by_path = ok(call("files_read", {"path": "/Documents/notes.txt"}))
    by_id = ok(call("files_read", {"fileId": by_path["fileId"]}))
    assert by_id["path"] == "/Documents/notes.txt" and by_id["content"] == by_path["content"]


def test_image_is_handed_over_as_an_image(call, ok, fixture_docs, mode):
    result = call("files_read", {"path": "/Documents/photo.png"}, mode)
    meta = ok(result)
    assert meta["kind"] == "image" and meta["mime"] == "image/png" and meta["path"] == "/Documents/photo.png"
    image = result.content[1]
    assert image.type == "image" and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == (fixture_docs / "photo.png").read_bytes()
    assert "iVBOR" not in result.content[0].text  # never base64 inside the JSON


def test_a_second_read_of_an_image_is_neither_downloaded_nor_extracted_again(world, call, ok, fixture_docs):
    path = f"/Documents/photo-{uuid.uuid4().hex[:6]}.png"
    _put(world, path, (fixture_docs / "photo.png").read_bytes())
    world.emulator.reset_requests()
    first = call("files_read", {"path": path})
    assert ok(first)["kind"] == "image" and world.emulator.request_count("GET") == 1
    again = call("files_read", {"path": path})
    assert world.emulator.request_count("GET") == 1, "the second read must come from the memory cache"
    assert again.content[1].data == first.content[1].data and ok(again) == ok(first)


def test_file_over_the_cap_is_refused_without_downloading(world, ctx, call, err):
    path = f"/Documents/huge-{uuid.uuid4().hex[:6]}.pdf"
    _put(world, path, b"%PDF-1.4\n" + b"0" * (15 * 1024 * 1024))
    world.emulator.reset_requests()
    text = err(call("files_read", {"path": path}))
    assert "15.0 MB" in text and "not downloaded" in text and "Do not retry" in text
    assert world.emulator.request_count("GET") == 0
    assert world.emulator.request_count("PROPFIND") == 1
    assert ctx.telemetry.rows()[-1]["kind"] == "refused"


def test_cold_read_downloads_once_then_serves_the_cache(world, ctx, call, ok):
    path = f"/Documents/cold-{uuid.uuid4().hex[:6]}.md"
    _put(world, path, b"# Cold\n\nA freshly uploaded note about walruses.\n")
    world.emulator.reset_requests()
    first = ok(call("files_read", {"path": path, "find": "walruses"}))
    assert first["matches"][0]["text"] == "walruses"
    assert world.emulator.request_count("GET") == 1
    ok(call("files_read", {"path": path}))
    assert world.emulator.request_count("GET") == 1, "the second read must come from the cache"
    rec = ctx.index.get_file(path=path)
    assert rec is not None and rec.status == "indexed" and rec.etag == first["etag"]


def test_new_version_is_read_again(world, call, ok):
    path = f"/Documents/versioned-{uuid.uuid4().hex[:6]}.txt"
    _put(world, path, b"first version")
    assert ok(call("files_read", {"path": path}))["content"] == "first version"
    _put(world, path, b"second version")
    assert ok(call("files_read", {"path": path}))["content"] == "second version"


def test_unreadable_document_is_refused_with_the_readers_instruction(world, ctx, call, err):
    path = f"/Documents/broken-{uuid.uuid4().hex[:6]}.pdf"
    _put(world, path, b"%PDF-1.7\nthis is not really a pdf at all\n")
    text = err(call("files_read", {"path": path}))
    assert "corrupt PDF" in text and "fresh copy" in text and "do not retry" in text.lower()
    row = ctx.telemetry.rows()[-1]
    assert (row["kind"], row["status"]) == ("refused", "corrupt")
    # the failure is remembered for this version: asking again does not download it again
    world.emulator.reset_requests()
    assert "cannot be read" in err(call("files_read", {"path": path}))
    assert world.emulator.request_count("GET") == 0


@pytest.mark.parametrize("args, needles, status", [
    ({"path": "/Documents/no-such-file.pdf"}, ["files_search", "Do not repeat this call unchanged"], "404"),
    ({"fileId": 987654321}, ["files_search", "Do not repeat this call unchanged"], "unknown_file_id"),
    ({"path": "/Documents/manual.md", "offset": 10_000_000}, ["past the end", "277"], "offset_past_end"),
    ({"path": "/Documents/manual.md", "format": "xml"}, ["format", "outline", "call unchanged"], "bad_argument"),
    ({"path": "/Documents/manual.md", "find": "   "}, ["find is empty", "repeat this call unchanged"], "bad_find"),
    ({"path": "/Documents/manual.md", "find": "zzqqxx", "format": "outline"}, ["no outline entry titled"],
     "bad_find"),
    ({}, ["path or fileId"], "missing_file"),
    ({"path": "/Documents"}, ["folder", "files_search"], "is_folder"),
    ({"path": "/Documents/../etc/passwd"}, ["not allowed", "files_search"], "bad_path"),
    ({"path": "/Documents/manual.md", "limit": 0}, ["limit", "Do not repeat this call unchanged"], "bad_argument"),
    ({"path": "/Documents/manual.md", "offset": -1}, ["offset"], "bad_argument"),
    # Unknown arguments are refused naming the valid ones (issue 10): a misspelled offset must not read from 0.
    ({"path": "/Documents/manual.md", "colour": "red"}, ["colour", "Its arguments are"], "unknown_argument"),
])
def test_misuse_errors_are_instructions(call, err, ok, ctx, args, needles, status, mode):
    result = call("files_read", args, mode)
    text = err(result)
    for needle in needles:
        assert needle in text, text
    assert not text.startswith("Error executing tool")
    error = result.structured_content["error"]
    assert error["retry"] is False and error["code"] in (status, "not_found", "bad_path")
    row = ctx.telemetry.rows()[-1]
    assert row["kind"] == "misuse" and row["status"] == status


def test_path_and_a_different_file_id_conflict(call, ok, err):
    other = ok(call("files_read", {"path": "/Documents/notes.txt"}))["fileId"]
    text = err(call("files_read", {"path": "/Documents/manual.md", "fileId": other}))
    assert "not" in text and str(other) in text


def test_server_error_is_a_fault_that_says_retry_once(world, ctx, call, err):
    world.emulator.faults.add(method="PROPFIND", status=503, times=20)
    text = err(call("files_read", {"path": "/Documents/manual.md"}))
    assert "retry" in text.lower()
    row = ctx.telemetry.rows()[-1]
    assert row["kind"] == "fault" and row["status"] == "503"


def test_read_cap_is_configurable(world, ctx, call, err):
    path = f"/Documents/medium-{uuid.uuid4().hex[:6]}.txt"
    _put(world, path, b"x" * 4096)
    ctx.settings = Settings(max_read_bytes=1024, freshness_interval_s=0)
    assert "read cap" in err(call("files_read", {"path": path}))


from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40),
       offset=st.integers(min_value=-5, max_value=10**9))
def test_any_path_and_offset_get_an_answer_or_an_instruction(call, path, offset):
    result = call("files_read", {"path": "/Documents/" + path, "offset": offset})
    text = result.content[0].text
    if result.is_error:
        said = text.lower()
        assert ("retry" in said or "repeat this call" in said) and "Traceback" not in text
        assert not text.startswith("Error executing")
    else:
        assert result.structured_content["path"].startswith("/Documents")


@pytest.mark.parametrize("args, key", [
    ({}, "content"), ({"find": "quota"}, "matches"), ({"format": "outline"}, "entries")])
def test_every_read_mode_answers_with_fields_its_output_schema_names(call, ok, server, args, key):
    props = server._tool_manager.get_tool("files_read").fn_metadata.output_schema["properties"]
    res = ok(call("files_read", {"path": "/Documents/manual.pdf", **args}))
    assert key in res and key in props
    assert {"path", "fileId", "etag", "kind", "truncated"} <= set(res) & set(props)


def test_a_scanned_pdf_reads_as_ocr_text_with_its_confidence(world, call, ok):
    """files_read of an image-only PDF: the OCR text by page, the pages and confidence in `ocr`, a warning."""
    from mcp_nextcloud.fixtures.emulator.scans import scanned_pdf
    from mcp_nextcloud.reader.ocr import engine

    if engine() is None:
        pytest.skip("no tesseract here (apt-get install tesseract-ocr)")
    path = f"/Documents/scan-{uuid.uuid4().hex[:6]}.pdf"
    _put(world, path, scanned_pdf())
    found = ok(call("files_read", {"path": path, "find": "Kormoran"}))
    assert [m["page"] for m in found["matches"]] == [3]
    assert sorted(found["ocr"]["pages"]) == ["1", "2", "3"] and found["ocr"]["engine"].startswith("tesseract")
    assert any("OCR text" in w for w in found["warnings"])
    around = ok(call("files_read", {"path": path, "offset": found["matches"][0]["offset"], "limit": 30}))
    assert around["content"].startswith("Kormoran")
