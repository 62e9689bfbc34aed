"""files_move / files_delete / files_restore / files_history on a real Nextcloud, read back over plain WebDAV."""
from __future__ import annotations

import re

import pytest

from tests.live.live_tools import call, tool_server

FILEID = b'<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><oc:fileid/></d:prop></d:propfind>'
TRASH = (b'<d:propfind xmlns:d="DAV:" xmlns:nc="http://nextcloud.org/ns" xmlns:oc="http://owncloud.org/ns">'
         b"<d:prop><nc:trashbin-original-location/><oc:fileid/></d:prop></d:propfind>")


@pytest.fixture
def server(live_account):
    yield from tool_server(live_account)


@pytest.fixture
def dav(live_http, live_account, scratch_folder):
    """(files URL prefix, folder); the folder's entries are purged from the trash bin at the end."""
    prefix = f"/remote.php/dav/files/{live_account.user}"
    yield prefix, scratch_folder
    for href, loc, _ in _trash(live_http, live_account.user):
        if scratch_folder.strip("/") in loc:
            live_http.request("DELETE", href)


def _trash(live_http, user: str) -> list[tuple[str, str, int]]:
    resp = live_http.request("PROPFIND", f"/remote.php/dav/trashbin/{user}/trash/", headers={"Depth": "1"},
                             content=TRASH)
    out = []
    for block in re.findall(r"<d:response>(.*?)</d:response>", resp.text, re.S):
        loc, fid = re.search(r"original-location>([^<]*)<", block), re.search(r"<oc:fileid>(\d+)<", block)
        if loc and fid:
            out.append((re.search(r"<d:href>([^<]+)<", block).group(1), loc.group(1), int(fid.group(1))))
    return out


def _fileid(live_http, url: str) -> int | None:
    resp = live_http.request("PROPFIND", url, headers={"Depth": "0"}, content=FILEID)
    if resp.status_code == 404:
        return None
    return int(re.search(r"<oc:fileid>(\d+)<", resp.text).group(1))


def test_live_a_moved_file_keeps_its_file_id(server, dav, live_http):
    prefix, folder = dav
    assert live_http.put(f"{prefix}{folder}/a.txt", content=b"alpha").status_code == 201
    fid = _fileid(live_http, f"{prefix}{folder}/a.txt")
    assert live_http.request("MKCOL", f"{prefix}{folder}/Archive").status_code == 201
    out = call(server, "files_move", {"path": f"{folder}/a.txt", "to": f"{folder}/Archive"})
    assert out["path"] == f"{folder}/Archive/a.txt" and out["fileId"] == fid
    assert _fileid(live_http, f"{prefix}{folder}/Archive/a.txt") == fid
    assert _fileid(live_http, f"{prefix}{folder}/a.txt") is None
    live_http.put(f"{prefix}{folder}/b.txt", content=b"bee")
    text = call(server, "files_move", {"path": f"{folder}/Archive/a.txt", "to": f"{folder}/b.txt"}, error=True)
    assert "already exists" in text and "replace=true" in text
    assert live_http.get(f"{prefix}{folder}/b.txt").content == b"bee"


def test_live_a_move_into_a_missing_folder_names_it_and_createfolders_makes_it(server, dav, live_http):
    """Issue 37: Nextcloud answers the MOVE with 409; the refusal names the missing folder (never the source), and
    createFolders=true makes it (MKCOL) before the move."""
    prefix, folder = dav
    assert live_http.put(f"{prefix}{folder}/plan.md", content=b"# Plan").status_code == 201
    fid = _fileid(live_http, f"{prefix}{folder}/plan.md")
    text = call(server, "files_move", {"path": f"{folder}/plan.md", "to": f"{folder}/Undo-x/2026/"}, error=True)
    assert f"The folder {folder}/Undo-x does not exist" in text and "createFolders=true" in text
    assert f"({folder}/plan.md)" not in text
    assert _fileid(live_http, f"{prefix}{folder}/Undo-x") is None
    out = call(server, "files_move", {"path": f"{folder}/plan.md", "to": f"{folder}/Undo-x/2026/",
                                      "createFolders": True})
    assert out["createdFolders"] == [f"{folder}/Undo-x", f"{folder}/Undo-x/2026"] and out["fileId"] == fid
    assert _fileid(live_http, f"{prefix}{folder}/Undo-x/2026/plan.md") == fid
    assert live_http.get(f"{prefix}{folder}/Undo-x/2026/plan.md").content == b"# Plan"


def test_live_a_deleted_file_is_in_the_trash_and_comes_back(server, dav, live_http, live_account):
    prefix, folder = dav
    live_http.put(f"{prefix}{folder}/gone.txt", content=b"keep me")
    fid = _fileid(live_http, f"{prefix}{folder}/gone.txt")
    out = call(server, "files_delete", {"path": f"{folder}/gone.txt"})
    assert out["trashed"] is True and f"fileId {fid}" in out["hint"]
    assert _fileid(live_http, f"{prefix}{folder}/gone.txt") is None
    assert (f"{folder.strip('/')}/gone.txt", fid) in {(loc, f) for _, loc, f in _trash(live_http, live_account.user)}
    assert any(t["fileId"] == fid for t in call(server, "files_history", {"limit": 200})["trash"])
    back = call(server, "files_restore", {"fileId": fid})
    assert back["path"] == f"{folder}/gone.txt" and back["fileId"] == fid
    assert live_http.get(f"{prefix}{folder}/gone.txt").content == b"keep me"
    assert _fileid(live_http, f"{prefix}{folder}/gone.txt") == fid


def test_live_a_restored_version_has_the_old_content(server, dav, live_http):
    prefix, folder = dav
    path = f"{folder}/notes.md"
    # Versions are named by mtime seconds: the first content is dated in the past so the two never collide.
    live_http.put(f"{prefix}{path}", content=b"first draft", headers={"X-OC-Mtime": "1790000000"})
    read = call(server, "files_read", {"path": path})
    written = call(server, "files_write", {"path": path, "content": "second draft", "etag": read["etag"]})
    assert "files_history" in written["hint"]
    versions = call(server, "files_history", {"path": path})["versions"]
    older = [v for v in versions if not v.get("current")]
    assert older and older[-1]["version"] == "1790000000"
    call(server, "files_restore", {"path": path, "version": "1790000000"})
    assert live_http.get(f"{prefix}{path}").content == b"first draft"
    after = call(server, "files_history", {"path": path})["versions"]
    assert any(v["size"] == len(b"second draft") and not v.get("current") for v in after)
