"""files_write and files_share_internal instructions that lead somewhere (issue 9, items 6 and 7).

A missing parent folder can be created on request (createFolders, reported
in the result) and the error says how; an etag for a path with no file says
there is no file; a folder is never offered "write with its etag"; sharing
with yourself says it is your own account.
"""
from __future__ import annotations

import uuid

ALICE = "alice"


def _fresh(stem: str) -> str:
    return f"/{stem}-{uuid.uuid4().hex[:8]}"


def test_missing_parent_error_points_at_create_folders(world, call, err):
    folder = _fresh("Notes")
    text = err(call("files_write", {"path": f"{folder}/todo.md", "content": "- milk"}))
    assert f"The folder {folder}" in text and "createFolders=true" in text and text.endswith("call unchanged.")
    assert "Create the folder first" not in text
    assert world.emulator.state.find(ALICE, folder) is None


def test_create_folders_makes_every_missing_parent_and_says_so(world, call, ok):
    top = _fresh("Projects")
    path = f"{top}/2026/q1/todo.md"
    res = ok(call("files_write", {"path": path, "content": "- plan", "createFolders": True}))
    assert res["createdFolders"] == [top, f"{top}/2026", f"{top}/2026/q1"] and res["created"] is True
    assert world.emulator.state.find(ALICE, path).data == b"- plan"
    again = ok(call("files_write", {"path": f"{top}/2026/other.md", "content": "x", "createFolders": True}))
    assert "createdFolders" not in again  # nothing was missing: nothing to report
    assert ok(call("files_read", {"path": path}))["etag"] == res["etag"]


def test_etag_for_a_path_with_no_file_says_there_is_no_file(call, err):
    path = _fresh("gone") + ".md"
    text = err(call("files_write", {"path": path, "content": "x", "etag": "5f2b0c0a1d2e3"}))
    assert f"No file exists at {path}" in text and "without etag" in text and "repeat this call unchanged" in text
    assert "changed since you read it" not in text


def test_writing_to_a_folder_never_suggests_its_etag(call, err):
    for args in ({"path": "/Documents", "content": "x"}, {"path": "/Documents", "content": "x", "etag": "abc"}):
        text = err(call("files_write", args))
        assert "is a folder, not a file" in text and "file name inside it" in text, text
        assert "write with its etag" not in text and "changed since you read it" not in text


def test_sharing_with_yourself_says_it_is_your_own_account(call, err):
    for who in ("alice", "ALICE"):
        text = err(call("files_share_internal", {"path": "/Documents/notes.txt", "shareWith": who}))
        assert "the caller's own account" in text and "Do not repeat this call unchanged" in text
        assert "No account" not in text


def test_sharing_with_your_own_display_name(world, call, err):
    me = world.emulator.state.users[ALICE]
    name = getattr(me, "display_name", None) or getattr(me, "displayname", None)
    assert name, "the emulator's alice has a display name"
    text = err(call("files_share_internal", {"path": "/Documents/notes.txt", "shareWith": name}))
    assert "the caller's own account" in text
