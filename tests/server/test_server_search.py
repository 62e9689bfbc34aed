"""files_search and files_grep against the emulator and the synced index, including on-the-fly freshness."""
from __future__ import annotations

import time
import uuid

import pytest

from mcp_nextcloud.server.context import Settings

ALICE = "alice"


def _put(world, path: str, data: bytes) -> None:
    world.emulator.state.put_file(ALICE, path, data, mtime=time.time() + 5)


def test_search_by_name_carries_path_and_file_id(call, ok, mode):
    res = ok(call("files_search", {"name": "manual"}, mode))
    paths = {f["path"] for f in res["files"]}
    assert {"/Documents/manual.md", "/Documents/manual.pdf"} <= paths
    for f in res["files"]:
        assert isinstance(f["fileId"], int) and f["name"] and f["modified"].endswith("Z")


def test_search_by_mime_prefix_and_wildcard(call, ok):
    pdfs = ok(call("files_search", {"mime": "application/pdf"}))
    assert pdfs["files"] and all(f["mime"] == "application/pdf" for f in pdfs["files"])
    images = ok(call("files_search", {"mime": "image/"}))
    assert any(f["path"] == "/Documents/photo.png" for f in images["files"])
    wild = ok(call("files_search", {"name": "*.pptx"}))
    assert [f["path"] for f in wild["files"]] == ["/Documents/slides.pptx"]


def test_search_pages_with_a_cursor(call, ok, err):
    first = ok(call("files_search", {"path": "/Documents", "limit": 2}))
    assert first["truncated"] is True and first["nextCursor"] and len(first["files"]) == 2
    second = ok(call("files_search", {"path": "/Documents", "limit": 2, "cursor": first["nextCursor"]}))
    assert {f["path"] for f in second["files"]}.isdisjoint({f["path"] for f in first["files"]})
    text = err(call("files_search", {"name": "manual", "cursor": first["nextCursor"]}))
    assert "cursor" in text and "do not repeat this call unchanged" in text.lower()


def test_search_never_matches_contents_and_says_so(call, ok):
    res = ok(call("files_search", {"name": "walrus-" + uuid.uuid4().hex[:6]}))
    assert res["files"] == [] and "files_grep" in res["hint"]


def test_search_falls_back_to_the_server_for_files_not_yet_indexed(world, call, ok):
    name = f"fresh-{uuid.uuid4().hex[:6]}.txt"
    _put(world, f"/Documents/{name}", b"just uploaded")
    res = ok(call("files_search", {"name": name}))
    assert [f["path"] for f in res["files"]] == [f"/Documents/{name}"]
    assert res["files"][0]["fileId"] and res["warnings"]


def test_search_modified_after(call, ok, err):
    future = ok(call("files_search", {"modifiedAfter": "2099-01-01"}))
    assert future["files"] == []
    past = ok(call("files_search", {"modifiedAfter": "2000-01-01T00:00:00Z", "limit": 5}))
    assert past["files"]
    assert "ISO date" in err(call("files_search", {"modifiedAfter": "last tuesday"}))
    for edge in ("0001-01-01T00:00+01:00", "9999-12-31T23:30-11:00", "1969-12-31"):   # was an internal error
        assert "modifiedAfter must lie between" in err(call("files_search", {"modifiedAfter": edge}))


def test_grep_finds_passages_whose_offsets_files_read_accepts(call, ok, mode):
    res = ok(call("files_grep", {"query": "quota", "limit": 5}, mode))
    assert res["hits"] and res["total"] >= len(res["hits"])
    hit = next(h for h in res["hits"] if h["path"] == "/Documents/manual.pdf")
    assert isinstance(hit["fileId"], int) and "phrase" not in hit and isinstance(hit["more"], bool)
    passage = hit["passages"][0]
    assert passage["page"] >= 1 and "quota" in passage["passage"].lower()
    around = ok(call("files_read", {"fileId": hit["fileId"], "offset": passage["matches"][0][0],
                                    "limit": 20}, mode))
    assert around["content"].lower().startswith("quota")
    # passageOffset locates the passage text, like files_read's find results.
    at = ok(call("files_read", {"fileId": hit["fileId"], "offset": passage["passageOffset"],
                                "limit": len(passage["passage"]) + 40}, mode))
    assert at["content"].startswith(passage["passage"])
    # Never a lower bound shown as a count: `more` is false exactly when find sees no other match.
    shown = sum(len(p["matches"]) for p in hit["passages"])
    every = ok(call("files_read", {"fileId": hit["fileId"], "find": "quota", "limit": 100}, mode))
    assert (every["total"] > shown) is hit["more"]
    assert "files_read(path, find=" in res["hint"]


def test_grep_without_hits_says_what_to_try(call, ok):
    res = ok(call("files_grep", {"query": "xylophonezebra"}))
    assert res["hits"] == [] and "files_search" in res["hint"]


def test_grep_pages_with_a_cursor_bound_to_the_query(call, ok, err):
    first = ok(call("files_grep", {"query": "the", "limit": 1}))
    assert first["truncated"] and first["nextCursor"]
    second = ok(call("files_grep", {"query": "the", "limit": 1, "cursor": first["nextCursor"]}))
    assert second["hits"][0]["path"] != first["hits"][0]["path"]
    assert "cursor" in err(call("files_grep", {"query": "quota", "cursor": first["nextCursor"]}))


def test_grep_indexes_small_changed_files_on_the_fly(world, call, ok):
    word = "okapi" + uuid.uuid4().hex[:6]
    path = f"/Documents/changed-{word}.md"
    _put(world, path, f"# Field notes\n\nToday we saw an {word} near the river.\n".encode())
    res = ok(call("files_grep", {"query": word}))
    assert [h["path"] for h in res["hits"]] == [path]
    p = res["hits"][0]["passages"][0]
    at, length = p["matches"][0]
    assert p["passage"][at - p["passageOffset"]:at - p["passageOffset"] + length].lower() == word


def test_grep_words_apart_are_found_and_marked_as_not_the_phrase(world, call, ok):
    tag = uuid.uuid4().hex[:6]
    first, second = "okapi" + tag, "heron" + tag
    path = f"/Documents/apart-{tag}.md"
    _put(world, path, f"# Notes\n\nAn {first} drank.\n\nThen a {second} landed nearby.\n".encode())
    res = ok(call("files_grep", {"query": f"{first} {second}"}))
    (hit,) = res["hits"]
    assert hit["path"] == path and hit["phrase"] is False and hit["more"] is False
    texts = [p["passage"][at - p["passageOffset"]:at - p["passageOffset"] + n]
             for p in hit["passages"] for at, n in p["matches"]]
    assert texts == [first, second]
    assert "phrase=false" in res["hint"]
    assert ok(call("files_grep", {"query": f'"{first} {second}"'}))["hits"] == []


def test_grep_names_large_changed_files_in_warnings(world, ctx, call, ok):
    ctx.settings = Settings(fly_max_bytes=10, freshness_interval_s=0)
    word = "tapir" + uuid.uuid4().hex[:6]
    path = f"/Documents/big-{word}.txt"
    _put(world, path, f"a long note that mentions the {word} more than ten bytes in".encode())
    res = ok(call("files_grep", {"query": word}))
    assert res["hits"] == []
    assert any(path in w and "not searched yet" in w for w in res["warnings"]), res["warnings"]


def test_grep_scoped_to_a_folder(world, call, ok):
    word = "quokka" + uuid.uuid4().hex[:6]
    world.emulator.state.makedirs(ALICE, f"/Zoo-{word}")
    _put(world, f"/Zoo-{word}/a.md", f"{word} here".encode())
    _put(world, f"/Documents/b-{word}.md", f"{word} there".encode())
    res = ok(call("files_grep", {"query": word, "path": f"/Zoo-{word}"}))
    assert [h["path"] for h in res["hits"]] == [f"/Zoo-{word}/a.md"]


@pytest.mark.parametrize("tool, args, needle", [
    ("files_grep", {"query": ""}, "query"),
    ("files_grep", {}, "query: is required"),
    ("files_grep", {"query": "x", "limit": 500}, "limit"),
    ("files_search", {"limit": 0}, "limit"),
    ("files_search", {"path": "/a/../../b"}, "not allowed"),
])
def test_bad_arguments(call, err, ctx, tool, args, needle):
    assert needle in err(call(tool, args))
    assert ctx.telemetry.rows()[-1]["kind"] == "misuse"


def test_grep_survives_a_server_that_cannot_say_what_changed(world, call, ok):
    world.emulator.faults.add(method="SEARCH", status=500, times=20)
    res = ok(call("files_grep", {"query": "quota"}))
    assert res["hits"] and any("could not ask the server" in w.lower() for w in res["warnings"])


def test_server_search_fallback_pages_with_its_own_cursor(world, call, ok, err):
    stem = "paged-" + uuid.uuid4().hex[:6]
    for i in range(3):
        _put(world, f"/Documents/{stem}-{i}.txt", b"x")
    first = ok(call("files_search", {"name": stem, "limit": 2}))
    assert len(first["files"]) == 2 and first["truncated"] and first["nextCursor"]
    second = ok(call("files_search", {"name": stem, "limit": 2, "cursor": first["nextCursor"]}))
    paths = {f["path"] for f in first["files"]} | {f["path"] for f in second["files"]}
    assert paths == {f"/Documents/{stem}-{i}.txt" for i in range(3)} and second["truncated"] is False
    assert "another search" in err(call("files_search", {"name": "other", "cursor": first["nextCursor"]}))
