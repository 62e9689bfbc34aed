"""WebDAV against the emulator: every method, every error row it can produce."""
from __future__ import annotations

import io
import time
from datetime import datetime, timezone

import pytest

from mcp_nextcloud.nextcloud.client import NextcloudClient
from mcp_nextcloud.nextcloud.config import Account
from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError

ODD = "odd #1 100% sure?.txt"


def test_stat_file_and_root(nc):
    item = nc.webdav.stat("/Projects/Alpha/notes.md")
    assert item.path == "/Projects/Alpha/notes.md" and item.name == "notes.md" and not item.is_dir
    assert item.file_id and item.etag and '"' not in item.etag and item.size > 0
    assert item.mime == "text/markdown" and item.mtime > 1e9
    root = nc.webdav.stat("/")
    assert root.path == "/" and root.is_dir and root.mime is None and root.size >= item.size


def test_list_folder_and_odd_names(nc):
    folder, children = nc.webdav.list("/Documents")
    assert folder.path == "/Documents" and folder.is_dir
    names = {c.name for c in children}
    assert {"Résumé final.md", ODD} <= names
    assert all(c.path == "/Documents/" + c.name for c in children)
    odd = nc.webdav.stat("/Documents/" + ODD)
    assert odd.name == ODD
    assert b"hash" in nc.webdav.read("/Documents/" + ODD)


def test_put_read_roundtrip_with_special_names(nc):
    for name in ["Résumé 2 & co.txt", "a+b #3 50%?.md", "日本.txt"]:
        item = nc.webdav.put("/Projects/" + name, ("content of " + name).encode())
        assert item.name == name and item.file_id and item.etag
        assert nc.webdav.read("/Projects/" + name) == ("content of " + name).encode()
        assert nc.webdav.stat("/Projects/" + name).etag == item.etag


def test_put_if_match_and_create_only(nc):
    first = nc.webdav.put("/Projects/draft.txt", b"v1", create_only=True)
    # A new size: within the same second an unchanged size keeps the etag, as on Nextcloud (see below).
    second = nc.webdav.put("/Projects/draft.txt", b"v2 longer", etag=first.etag)
    assert second.etag != first.etag and second.file_id == first.file_id
    with pytest.raises(NextcloudError) as stale:
        nc.webdav.put("/Projects/draft.txt", b"v3", etag=first.etag)
    assert stale.value.code is ErrorCode.PRECONDITION and stale.value.status == 412
    assert "re-read" in str(stale.value).lower() and "files_read" in str(stale.value)
    with pytest.raises(NextcloudError) as exists:
        nc.webdav.put("/Projects/draft.txt", b"v3", create_only=True)
    assert exists.value.code is ErrorCode.EXISTS
    assert nc.webdav.read("/Projects/draft.txt") == b"v2 longer"   # nothing was lost


def test_an_overwrite_in_the_same_second_with_the_same_size_keeps_the_etag(nc):
    """Nextcloud 34 derives the etag from mtime (seconds) and size (seen in tests/live/test_live_write_guard.py)."""
    first = nc.webdav.put("/Projects/same.txt", b"aaaa", mtime=1700000000)
    again = nc.webdav.put("/Projects/same.txt", b"bbbb", mtime=1700000000)
    assert again.etag == first.etag and nc.webdav.read("/Projects/same.txt") == b"bbbb"
    later = nc.webdav.put("/Projects/same.txt", b"cccc", mtime=1700000001)
    longer = nc.webdav.put("/Projects/same.txt", b"ccccc", mtime=1700000001)
    assert len({first.etag, later.etag, longer.etag}) == 3


def test_put_mtime(nc):
    item = nc.webdav.put("/Projects/old.txt", b"old", mtime=1700000000)
    assert nc.webdav.stat("/Projects/old.txt").mtime == pytest.approx(1700000000) == item.mtime


def test_put_missing_parent_and_onto_folder(nc):
    with pytest.raises(NextcloudError) as exc:
        nc.webdav.put("/Projects/Gamma/file.txt", b"x")
    assert exc.value.code is ErrorCode.MISSING_PARENT and "does not create intermediates" in str(exc.value)
    assert "/Projects/Gamma/file.txt" in str(exc.value)
    with pytest.raises(NextcloudError) as folder:
        nc.webdav.put("/Projects/Alpha", b"x")
    assert folder.value.code is ErrorCode.CONFLICT and "folder" in str(folder.value)


def test_not_found(nc):
    for call in (lambda: nc.webdav.stat("/No/such.txt"), lambda: nc.webdav.read("/No/such.txt"),
                 lambda: nc.webdav.delete("/No/such.txt"), lambda: nc.webdav.list("/No")):
        with pytest.raises(NextcloudError) as exc:
            call()
        assert exc.value.code is ErrorCode.NOT_FOUND and "files_search" in str(exc.value)
        assert "do not guess" in str(exc.value)


def test_ranged_reads(nc):
    data = nc.webdav.read("/Projects/Alpha/notes.md")
    assert nc.webdav.read("/Projects/Alpha/notes.md", byte_range=(0, 9)) == data[:10]
    assert nc.webdav.read("/Projects/Alpha/notes.md", byte_range=(5, None)) == data[5:]
    assert nc.webdav.read("/Projects/Alpha/notes.md", byte_range=(0, None), max_bytes=4) == data[:4]
    with pytest.raises(NextcloudError) as exc:
        nc.webdav.read("/Projects/Alpha/notes.md", byte_range=(100000, None))
    assert exc.value.code is ErrorCode.BAD_REQUEST and exc.value.status == 416


def test_download_streams_and_caps(nc, emulator):
    size = nc.webdav.stat("/Documents/manual.pdf").size
    buf = io.BytesIO()
    assert nc.webdav.download("/Documents/manual.pdf", buf) == size == len(buf.getvalue())
    small = io.BytesIO()
    with pytest.raises(NextcloudError) as exc:
        nc.webdav.download("/Documents/manual.pdf", small, max_bytes=1000)
    assert exc.value.code is ErrorCode.TOO_LARGE and small.getvalue() == b""
    with pytest.raises(NextcloudError):
        nc.webdav.read("/Documents/manual.pdf", max_bytes=1000)


def test_mkcol_move_copy_delete(nc):
    nc.webdav.mkcol("/Work")
    with pytest.raises(NextcloudError) as again:
        nc.webdav.mkcol("/Work")
    assert again.value.code is ErrorCode.EXISTS
    with pytest.raises(NextcloudError) as deep:
        nc.webdav.mkcol("/Nope/Child")
    assert deep.value.code is ErrorCode.MISSING_PARENT
    a = nc.webdav.put("/Work/a.txt", b"A")
    nc.webdav.move("/Work/a.txt", "/Work/b é.txt")
    moved = nc.webdav.stat("/Work/b é.txt")
    assert moved.file_id == a.file_id            # a move keeps the fileId
    nc.webdav.copy("/Work/b é.txt", "/Work/c.txt")
    assert nc.webdav.stat("/Work/c.txt").file_id != a.file_id
    with pytest.raises(NextcloudError) as exists:
        nc.webdav.copy("/Work/b é.txt", "/Work/c.txt")
    assert exists.value.code is ErrorCode.EXISTS
    nc.webdav.copy("/Work/b é.txt", "/Work/c.txt", overwrite=True)
    with pytest.raises(NextcloudError) as parent:
        nc.webdav.move("/Work/c.txt", "/Missing/c.txt")
    assert parent.value.code is ErrorCode.MISSING_PARENT
    nc.webdav.delete("/Work")
    with pytest.raises(NextcloudError):
        nc.webdav.stat("/Work")


def test_search(nc):
    found = nc.webdav.search(name="NOTES")
    assert found and all("notes" in i.name.lower() for i in found) and not any(i.is_dir for i in found)
    pics = nc.webdav.search(mime="image/%")
    assert pics and all(i.mime.startswith("image/") for i in pics)
    assert nc.webdav.search(mime="image/*") == pics
    exact = nc.webdav.search(mime="text/markdown")
    assert exact and all(i.mime == "text/markdown" for i in exact)
    scoped = nc.webdav.search(path="/Projects")
    assert scoped and all(i.path.startswith("/Projects/") for i in scoped)
    with_folders = nc.webdav.search(name="Alpha", include_folders=True)
    assert any(i.is_dir and i.path == "/Projects/Alpha" for i in with_folders)
    page1 = nc.webdav.search(limit=3)
    page2 = nc.webdav.search(limit=3, offset=3)
    assert len(page1) == 3 and page2 and not {i.path for i in page1} & {i.path for i in page2}
    with pytest.raises(NextcloudError) as bad:
        nc.webdav.search(mime="%")
    assert bad.value.code is ErrorCode.BAD_REQUEST


def test_search_in_a_missing_folder(nc, emulator):
    emulator.reset_requests()
    with pytest.raises(NextcloudError) as exc:
        nc.webdav.search(name="x", path="/Nope")
    assert exc.value.code is ErrorCode.NOT_FOUND and "files_search" in str(exc.value)
    assert emulator.request_count("SEARCH") == 1     # a deterministic rejection is not retried


def test_search_modified_after(nc):
    cut = time.time() - 5
    nc.webdav.put("/Projects/fresh.txt", b"new")
    recent = nc.webdav.search(modified_after=cut)
    assert [i.path for i in recent] == ["/Projects/fresh.txt"]
    as_dt = nc.webdav.search(modified_after=datetime.fromtimestamp(cut, tz=timezone.utc))
    assert [i.path for i in as_dt] == ["/Projects/fresh.txt"]


def test_find_by_id(nc):
    item = nc.webdav.stat("/Documents/Résumé final.md")
    assert nc.webdav.find_by_id(item.file_id).path == "/Documents/Résumé final.md"
    with pytest.raises(NextcloudError) as exc:
        nc.webdav.find_by_id(987654)
    assert exc.value.code is ErrorCode.NOT_FOUND and "files_search" in str(exc.value)


def test_locked_file(nc, emulator):
    emulator.state.lock_node("alice", "/Projects/Alpha/notes.md")
    with pytest.raises(NextcloudError) as exc:
        nc.webdav.put("/Projects/Alpha/notes.md", b"changed")
    assert exc.value.code is ErrorCode.LOCKED and exc.value.status == 423 and "editor" in str(exc.value)
    with pytest.raises(NextcloudError):
        nc.webdav.delete("/Projects/Alpha/notes.md")
    emulator.state.unlock_node("alice", "/Projects/Alpha/notes.md")
    nc.webdav.put("/Projects/Alpha/notes.md", b"changed")


def test_quota(nc, emulator):
    used = nc.webdav.stat("/").size
    emulator.state.set_quota("alice", used + 100)
    with pytest.raises(NextcloudError) as exc:
        nc.webdav.put("/big.bin", b"\0" * 5000)
    assert exc.value.code is ErrorCode.QUOTA and exc.value.status == 507
    assert "do not retry" in str(exc.value).lower() and not exc.value.retry
    with pytest.raises(NextcloudError):
        nc.webdav.stat("/big.bin")


def test_wrong_password_and_no_account(emulator):
    acct = emulator.account("alice")
    with NextcloudClient(Account(acct["url"], "alice", "wrong-password-xyz"), backoff=0.01) as bad:
        with pytest.raises(NextcloudError) as exc:
            bad.webdav.stat("/")
        assert exc.value.code is ErrorCode.AUTH and "mcp-nextcloud login" in str(exc.value)
        assert "wrong-password-xyz" not in str(exc.value) and acct["url"] not in str(exc.value)
        assert bad.request_count == 1   # a 401 is never retried
    with pytest.raises(NextcloudError) as none:
        NextcloudClient(None)
    assert none.value.code is ErrorCode.NO_CREDENTIALS and "NEXTCLOUD_APP_PASSWORD" in str(none.value)


def test_other_users_files_are_invisible(nc):
    # bob's home is not alice's: her client only ever addresses her own files.
    with pytest.raises(NextcloudError) as exc:
        nc.webdav.stat("/Notes/groceries.txt")
    assert exc.value.code is ErrorCode.NOT_FOUND


def test_traversal_refused_before_any_request(nc):
    before = nc.request_count
    for bad in ("/../bob/readme.md", "/a/\x00b", "/Projects/../../x"):
        with pytest.raises(NextcloudError) as exc:
            nc.webdav.stat(bad)
        assert exc.value.code is ErrorCode.BAD_PATH
    with pytest.raises(NextcloudError):
        nc.webdav.put("/../x.txt", b"x")
    assert nc.request_count == before


def test_download_retries_5xx_and_reports_a_persistent_one(nc, emulator):
    emulator.faults.add(method="GET", path_prefix="/remote.php/dav/files/alice/Projects", status=503)
    buf = io.BytesIO()
    assert nc.webdav.download("/Projects/Alpha/notes.md", buf) == len(buf.getvalue()) > 0
    emulator.faults.add(method="GET", path_prefix="/remote.php/dav/files/alice/Projects", status=502, times=20)
    with pytest.raises(NextcloudError) as exc:
        nc.webdav.download("/Projects/Alpha/notes.md", io.BytesIO())
    assert exc.value.code is ErrorCode.SERVER and exc.value.status == 502
