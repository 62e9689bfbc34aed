"""files_move, files_delete, files_restore, files_history through the real MCP server against the emulator."""
from __future__ import annotations

import re
import uuid

import pytest

FILES = "/remote.php/dav/files/alice"


@pytest.fixture
def folder(pim) -> str:
    name = f"/ops-{uuid.uuid4().hex[:8]}"
    with pim.http() as client:
        assert client.request("MKCOL", FILES + name).status_code == 201
    return name


def _put(pim, path: str, data: bytes, mtime: int | None = None) -> int:
    with pim.http() as client:
        resp = client.put(FILES + path, content=data, headers={"X-OC-Mtime": str(mtime)} if mtime else {})
        assert resp.status_code in (201, 204), resp.text
        return int(resp.headers["oc-fileid"][:8])


def _get(pim, path: str) -> tuple[int, bytes]:
    with pim.http() as client:
        resp = client.get(FILES + path)
        return resp.status_code, resp.content


def _fileid(pim, path: str) -> int:
    with pim.http() as client:
        resp = client.request("PROPFIND", FILES + path, headers={"Depth": "0"},
                              content=b'<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop>'
                                      b"<oc:fileid/></d:prop></d:propfind>")
        assert resp.status_code == 207, resp.text
        return int(re.search(r"<oc:fileid>(\d+)<", resp.text).group(1))


def test_a_rename_keeps_the_file_id(pim, ok, folder):
    fid = _put(pim, f"{folder}/a.txt", b"alpha")
    out = ok(pim.call("files_move", {"path": f"{folder}/a.txt", "to": f"{folder}/b.txt"}))
    assert out == {**out, "path": f"{folder}/b.txt", "fileId": fid, "from": f"{folder}/a.txt"}
    assert _get(pim, f"{folder}/b.txt") == (200, b"alpha") and _get(pim, f"{folder}/a.txt")[0] == 404
    assert _fileid(pim, f"{folder}/b.txt") == fid


def test_a_move_into_a_folder_keeps_the_name(pim, ok, folder):
    fid = _put(pim, f"{folder}/report.md", b"# r")
    with pim.http() as client:
        client.request("MKCOL", FILES + f"{folder}/Archive")
    out = ok(pim.call("files_move", {"fileId": fid, "to": f"{folder}/Archive"}))
    assert out["path"] == f"{folder}/Archive/report.md" and out["fileId"] == fid


def test_an_existing_name_is_refused_unless_replace_and_then_it_is_in_the_trash(pim, ok, err, folder):
    _put(pim, f"{folder}/a.txt", b"new")
    old = _put(pim, f"{folder}/b.txt", b"old")
    text = err(pim.call("files_move", {"path": f"{folder}/a.txt", "to": f"{folder}/b.txt"}))
    assert "already exists" in text and "replace=true" in text and "Do not repeat this call unchanged" in text
    assert _get(pim, f"{folder}/b.txt") == (200, b"old")
    out = ok(pim.call("files_move", {"path": f"{folder}/a.txt", "to": f"{folder}/b.txt", "replace": True}))
    assert out["replaced"] == old and "files_restore" in out["hint"]
    assert _get(pim, f"{folder}/b.txt") == (200, b"new")
    trash = ok(pim.call("files_history", {}))["trash"]
    assert any(t["fileId"] == old and t["path"] == f"{folder}/b.txt" for t in trash)


def test_a_copy_has_a_new_id_and_leaves_the_original(pim, ok, folder):
    fid = _put(pim, f"{folder}/a.txt", b"alpha")
    out = ok(pim.call("files_move", {"path": f"{folder}/a.txt", "to": f"{folder}/copy.txt", "copy": True}))
    assert out["copied"] is True and out["fileId"] != fid
    assert _get(pim, f"{folder}/a.txt") == (200, b"alpha") and _get(pim, f"{folder}/copy.txt") == (200, b"alpha")


def test_delete_goes_to_the_trash_and_restore_brings_it_back_with_its_id(pim, ok, folder):
    fid = _put(pim, f"{folder}/gone.txt", b"keep me")
    out = ok(pim.call("files_delete", {"path": f"{folder}/gone.txt"}))
    assert out["trashed"] is True and out["fileId"] == fid and f"fileId {fid}" in out["hint"]
    assert _get(pim, f"{folder}/gone.txt")[0] == 404
    listed = ok(pim.call("files_history", {}))["trash"]
    assert listed[0]["fileId"] == fid and listed[0]["path"] == f"{folder}/gone.txt"
    back = ok(pim.call("files_restore", {"fileId": fid}))
    assert back["path"] == f"{folder}/gone.txt" and back["fileId"] == fid and back["restored"] == "trash"
    assert _get(pim, f"{folder}/gone.txt") == (200, b"keep me")


def test_restore_by_the_original_path(pim, ok, folder):
    _put(pim, f"{folder}/p.txt", b"p")
    ok(pim.call("files_delete", {"path": f"{folder}/p.txt"}))
    assert ok(pim.call("files_restore", {"path": f"{folder}/p.txt"}))["path"] == f"{folder}/p.txt"


def test_restore_of_something_not_in_the_trash_says_where_to_look(pim, err, folder):
    text = err(pim.call("files_restore", {"path": f"{folder}/never.txt"}))
    assert "Nothing in the trash bin" in text and "files_history" in text


def test_versions_are_listed_and_one_restored_has_the_old_content(pim, ok, err, folder):
    path = f"{folder}/notes.md"
    fid = _put(pim, path, b"first draft", mtime=1790000000)   # versions are named by mtime seconds
    # A replacement needs an etag a read through this server returned: the read and the write share one server.
    _read, write = pim.calls([("files_read", {"path": path}),
                             ("files_write", {"path": path, "content": "second draft", "etag": _etag(pim, path)})])
    written = ok(write)
    assert "files_history" in written["hint"] and "files_restore" in written["hint"]
    hist = ok(pim.call("files_history", {"path": path}))
    assert hist["fileId"] == fid and len(hist["versions"]) >= 2
    current = [v for v in hist["versions"] if v.get("current")]
    older = [v for v in hist["versions"] if not v.get("current")]
    assert len(current) == 1 and older
    text = err(pim.call("files_restore", {"path": path, "version": current[0]["version"]}))
    assert "current content" in text
    out = ok(pim.call("files_restore", {"path": path, "version": older[0]["version"]}))
    assert out["fileId"] == fid and out["restored"] == older[0]["version"]
    assert _get(pim, path) == (200, b"first draft")
    again = ok(pim.call("files_history", {"path": path}))["versions"]
    assert any(v["size"] == len(b"second draft") for v in again)    # the replaced content is a version


def _etag(pim, path: str) -> str:
    with pim.http() as client:
        resp = client.request("PROPFIND", FILES + path, headers={"Depth": "0"})
        return re.search(r"<d:getetag>&quot;([^&]+)&quot;<", resp.text).group(1)


def test_a_folder_has_no_versions(pim, err, folder):
    text = err(pim.call("files_history", {"path": folder}))
    assert "folder" in text and "trash bin" in text


def test_a_folder_cannot_go_into_itself(pim, err, folder):
    text = err(pim.call("files_move", {"path": folder, "to": f"{folder}/inner"}))
    assert "into itself" in text


def test_a_restore_whose_folder_is_gone_lands_in_the_root_and_says_so(pim, ok, folder):
    with pim.http() as client:
        client.request("MKCOL", FILES + f"{folder}/deep")
    name = f"deep-{uuid.uuid4().hex[:6]}.txt"
    fid = _put(pim, f"{folder}/deep/{name}", b"deep")
    ok(pim.call("files_delete", {"fileId": fid}))
    with pim.http() as client:
        client.request("DELETE", FILES + f"{folder}/deep")
    back = ok(pim.call("files_restore", {"fileId": fid}))
    assert back["path"] == f"/{name}" and back["fileId"] == fid and "Restored to" in back["warnings"][0]
    with pim.http() as client:
        client.request("DELETE", FILES + f"/{name}")


def test_two_same_named_deletions_in_one_second_are_not_restored_blindly(pim, ok, err, folder):
    first = _put(pim, f"{folder}/twin.txt", b"one")
    ok(pim.call("files_delete", {"fileId": first}))
    second = _put(pim, f"{folder}/twin.txt", b"two")
    ok(pim.call("files_delete", {"fileId": second}))
    twins = [t for t in pim.emulator.state.trash if t.original_path == f"{folder}/twin.txt".strip("/")]
    for item in twins:   # as if both fell in one second (the clock may have ticked between them)
        item.deleted_at = twins[0].deleted_at
    text = err(pim.call("files_restore", {"fileId": first}))
    assert "same second" in text and "Do not retry" in text


def test_a_moved_or_deleted_file_leaves_the_index_at_once(call, ok, ctx):
    """files_grep must not offer the old path until the next sync: the tools drop it from the index."""
    name = f"/ops-index-{uuid.uuid4().hex[:8]}.md"
    ok(call("files_write", {"path": name, "content": "quokka migration notes"}))
    assert ctx.index.get_file(path=name) is not None
    moved = ok(call("files_move", {"path": name, "to": name.replace(".md", "-moved.md")}))
    assert ctx.index.get_file(path=name) is None
    hits = ok(call("files_grep", {"query": "quokka migration"}))["hits"]
    assert moved["path"] in {h["path"] for h in hits} and name not in {h["path"] for h in hits}
    ok(call("files_delete", {"path": moved["path"]}))
    assert ctx.index.get_file(path=moved["path"]) is None


def test_a_move_into_a_missing_folder_names_that_folder_and_createfolders_makes_it(pim, folder, ok, err):
    """Issue 37: the refusal named the source as the missing parent; now it names the folder, and the same call
    with createFolders=true creates it (the agent no longer writes a dummy .keep file)."""
    fid = _put(pim, f"{folder}/plan.md", b"# Plan\n")
    text = err(pim.call("files_move", {"path": f"{folder}/plan.md", "to": f"{folder}/Archive/2026/"}))
    assert f"The folder {folder}/Archive does not exist" in text and "createFolders=true" in text
    assert f"({folder}/plan.md)" not in text and _get(pim, f"{folder}/plan.md")[0] == 200
    moved = ok(pim.call("files_move", {"path": f"{folder}/plan.md", "to": f"{folder}/Archive/2026/",
                                       "createFolders": True}))
    assert moved["path"] == f"{folder}/Archive/2026/plan.md" and moved["fileId"] == fid
    assert moved["createdFolders"] == [f"{folder}/Archive", f"{folder}/Archive/2026"]
    assert _get(pim, f"{folder}/Archive/2026/plan.md") == (200, b"# Plan\n")
    copied = ok(pim.call("files_move", {"path": f"{folder}/Archive/2026/plan.md", "to": f"{folder}/Copies/",
                                        "copy": True, "createFolders": True}))
    assert copied["createdFolders"] == [f"{folder}/Copies"] and _get(pim, f"{folder}/Copies/plan.md")[0] == 200


def test_versions_a_second_apart_are_told_apart(pim, ok, folder):
    """Issue 37: files_history gave versions to the minute, so two versions a second apart looked alike."""
    path = f"{folder}/seconds.md"
    _put(pim, path, b"one", mtime=1790000000)
    _put(pim, path, b"two", mtime=1790000001)
    _put(pim, path, b"three", mtime=1790000002)
    versions = ok(pim.call("files_history", {"path": path}))["versions"]
    stamps = [v["modified"] for v in versions]
    assert {"2026-09-21T14:13:20Z", "2026-09-21T14:13:21Z"} <= set(stamps) and len(set(stamps)) == len(stamps)
