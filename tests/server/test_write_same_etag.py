"""files_write never replaces content the caller did not read, even when the etag still matches (issue 22, item 2).

Nextcloud keeps a file's etag when an overwrite within the same second leaves the size unchanged (the
emulator does the same: tests/nextcloud/test_nc_webdav.py), so If-Match alone let a stale write replace
another client's edit. Each case below has another client change the file that way, then writes with the
etag the caller had, from each place an etag comes from; the other client's content must survive.
"""
from __future__ import annotations

import uuid

ALICE = "alice"


def _name() -> str:
    return f"/Documents/guard-{uuid.uuid4().hex[:8]}.md"


def _other_client_edits(world, path: str, data: bytes) -> None:
    """Another client overwrites the file in the same second with the same size: the etag stays."""
    node = world.emulator.state.find(ALICE, path)
    before = node.etag
    world.emulator.state.put_file(ALICE, path, data, mtime=node.mtime)
    assert world.emulator.state.find(ALICE, path).etag == before, "the server kept the etag"


def test_an_etag_from_files_write_does_not_overwrite_a_same_second_edit(world, call, ok, err):
    path = _name()
    made = ok(call("files_write", {"path": path, "content": "draft one"}))
    _other_client_edits(world, path, b"DRAFT ONE")
    text = err(call("files_write", {"path": path, "content": "draft two", "etag": made["etag"]}))
    assert "changed since it was read" in text and "files_read" in text and "Do not retry" in text
    assert world.emulator.state.find(ALICE, path).data == b"DRAFT ONE"
    # The re-read the refusal asks for returns their content (not the old cached text), and its etag writes.
    read = ok(call("files_read", {"path": path}))
    assert read["content"] == "DRAFT ONE"
    ok(call("files_write", {"path": path, "content": "merged: DRAFT ONE + mine", "etag": read["etag"]}))
    assert world.emulator.state.find(ALICE, path).data == b"merged: DRAFT ONE + mine"


def test_an_etag_from_files_read_or_a_file_id_write_is_checked_too(world, call, ok, err):
    path = _name()
    world.emulator.state.put_file(ALICE, path, b"original words")
    read = ok(call("files_read", {"path": path}))
    _other_client_edits(world, path, b"ORIGINAL WORDS")
    text = err(call("files_write", {"fileId": read["fileId"], "content": "mine", "etag": read["etag"]}))
    assert "changed since it was read" in text
    assert world.emulator.state.find(ALICE, path).data == b"ORIGINAL WORDS"


def test_a_read_from_the_index_is_checked_against_what_the_sync_downloaded(world, ctx, call, ok, err):
    from mcp_nextcloud.indexer.remote.sync import sync

    word = "ocelot" + uuid.uuid4().hex[:6]
    path = _name()
    world.emulator.state.put_file(ALICE, path, f"a note on the {word}".encode())
    sync(ctx.client(), ctx.index)
    hit = next(h for h in ok(call("files_grep", {"query": word}))["hits"] if h["path"] == path)
    world.emulator.reset_requests()
    etag = ok(call("files_read", {"fileId": hit["fileId"]}))["etag"]   # grep and search carry no etag
    assert world.emulator.request_count("GET") == 0, "answered from the index: the sync's digest is the read's"
    _other_client_edits(world, path, f"A NOTE ON THE {word.upper()}".encode())
    text = err(call("files_write", {"fileId": hit["fileId"], "content": "mine", "etag": etag}))
    assert "changed since it was read" in text
    assert world.emulator.state.find(ALICE, path).data.startswith(b"A NOTE ON THE")


def test_an_etag_no_read_returned_is_refused_until_the_file_is_read(world, call, ok, err):
    path = _name()
    world.emulator.state.put_file(ALICE, path, b"nobody read this here")
    guessed = world.emulator.state.find(ALICE, path).etag
    text = err(call("files_write", {"path": path, "content": "mine", "etag": guessed}))
    assert "no read through this server returned this etag" in text and "files_read" in text
    assert world.emulator.state.find(ALICE, path).data == b"nobody read this here"


def test_successive_writes_never_reuse_an_etag(world, call, ok, err):
    """Our own same-size writes in one second get a new etag each (a later mtime), so the old one is stale."""
    path = _name()
    first = ok(call("files_write", {"path": path, "content": "aaaa"}))
    second = ok(call("files_write", {"path": path, "content": "bbbb", "etag": first["etag"]}))
    assert second["etag"] != first["etag"]
    text = err(call("files_write", {"path": path, "content": "cccc", "etag": first["etag"]}))
    assert "changed since you read it" in text or "changed since it was read" in text
    assert world.emulator.state.find(ALICE, path).data == b"bbbb"


def test_the_refusal_says_how_the_size_went(world, call, ok, err):
    """Issue 37: the refusal said "keeping the size" when the size had changed. It now says what it knows: here
    the other client's edit is longer, and the etag is kept anyway (as tests/indexer notes Nextcloud 34 can)."""
    path = _name()
    made = ok(call("files_write", {"path": path, "content": "draft one"}))
    node = world.emulator.state.find(ALICE, path)
    before = node.etag
    world.emulator.state.put_file(ALICE, path, b"DRAFT ONE, longer", mtime=node.mtime)
    world.emulator.state.find(ALICE, path).etag = before          # the server kept the etag
    text = err(call("files_write", {"path": path, "content": "draft two", "etag": made["etag"]}))
    assert "changed since it was read" in text and "its size went from 9 to 17 bytes" in text
    assert "keeping the size" not in text
    assert world.emulator.state.find(ALICE, path).data == b"DRAFT ONE, longer"
    same = _name()
    first = ok(call("files_write", {"path": same, "content": "draft one"}))
    _other_client_edits(world, same, b"DRAFT ONE")
    assert "keeping the size" in err(call("files_write", {"path": same, "content": "x", "etag": first["etag"]}))
