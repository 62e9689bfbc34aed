"""The error table's rows a real Nextcloud produces: 401, 403, 404, 409, 412, 423, 507.

Each test provokes the status on the real server, checks that the answer is
the table's row (its kind for the client, the cause and next step for a
tool), and reads back with a plain client that nothing was written. The 401
test sends one wrong password and resets the brute-force record after; the
507 test uses a throw-away account with a 20 KB quota (never a shared one).
"""
from __future__ import annotations

import dataclasses
import time
import uuid

import pytest

LOCK = ('<?xml version="1.0" encoding="utf-8"?><d:lockinfo xmlns:d="DAV:"><d:lockscope><d:exclusive/>'
        '</d:lockscope><d:locktype><d:write/></d:locktype><d:owner>live test</d:owner></d:lockinfo>')


def test_live_401_a_wrong_app_password_is_the_auth_row(live_account, tools_factory, scratch_folder, live_dav,
                                                       server_admin):
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError

    live_dav.put(f"{scratch_folder}/a.md", b"a\n")
    wrong = dataclasses.replace(live_account, app_password="wrong-" + uuid.uuid4().hex)
    try:
        with NextcloudClient(wrong) as client, pytest.raises(NextcloudError) as refused:
            client.webdav.stat(f"{scratch_folder}/a.md")
        assert refused.value.code is ErrorCode.AUTH
        text = tools_factory(account=wrong).error("files_read", {"path": f"{scratch_folder}/a.md"})
        assert "credentials" in text and "app password" in text and wrong.app_password not in text
    finally:
        server_admin.reset_bruteforce()


def test_live_403_writing_into_a_read_only_share(live_tools, live_account, member_http, live_member):
    folder = f"/live-ro-{uuid.uuid4().hex[:8]}"
    base = f"/remote.php/dav/files/{live_member.user}{folder}"
    assert member_http.request("MKCOL", base).status_code == 201
    try:
        share = member_http.post("/ocs/v2.php/apps/files_sharing/api/v1/shares",
                                 data={"path": folder, "shareType": 0, "shareWith": live_account.user,
                                       "permissions": 1}, params={"format": "json"})
        assert share.status_code == 200, share.text[:300]
        target = share.json()["ocs"]["data"]["file_target"]
        text = live_tools.error("files_write", {"path": f"{target}/new.md", "content": "x"})
        assert "not allowed" in text.lower() or "read-only" in text.lower() or "permission" in text.lower()
        assert "do not retry" in text.lower()
        assert member_http.request("PROPFIND", f"{base}/new.md", headers={"Depth": "0"}).status_code == 404
    finally:
        member_http.request("DELETE", base)


def test_live_404_a_missing_path_points_at_files_search(live_tools, live_dav, scratch_folder):
    text = live_tools.error("files_read", {"path": f"{scratch_folder}/missing.md"})
    assert "files_search" in text and "do not repeat this call unchanged" in text.lower()
    assert live_dav.props(f"{scratch_folder}/missing.md") == {}


def test_live_409_conflicts_are_named_for_what_they_are(live_account, live_dav, scratch_folder):
    """PUT onto a folder and MKCOL under a missing parent are both 409 on the server; each gets its own row."""
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError

    with NextcloudClient(live_account) as client:
        with pytest.raises(NextcloudError) as onto_folder:
            client.webdav.put(scratch_folder, b"x")
        with pytest.raises(NextcloudError) as no_parent:
            client.webdav.mkcol(f"{scratch_folder}/nope/child")
    assert onto_folder.value.code is ErrorCode.CONFLICT and "is a folder" in str(onto_folder.value)
    assert no_parent.value.code is ErrorCode.MISSING_PARENT and "parent folder does not exist" in str(no_parent.value)
    assert all("repeat this call unchanged" in str(e.value) for e in (onto_folder, no_parent))
    assert live_dav.props(scratch_folder)["type"] == "folder" and live_dav.props(f"{scratch_folder}/nope") == {}


def test_live_412_a_stale_etag_is_refused_and_the_file_kept(live_tools, live_dav, scratch_folder):
    path = f"{scratch_folder}/doc.md"
    live_dav.put(path, b"one\n")
    old = live_dav.props(path)["etag"]
    # Another client's edit. Within the same second Nextcloud keeps the ETag even for a new size (issue 22
    # item 2's case, auth's test): a second later it is a new one, the 412 this test is about.
    time.sleep(1.1)
    live_dav.put(path, b"two, longer\n")
    assert live_dav.props(path)["etag"] != old
    text = live_tools.error("files_write", {"path": path, "content": "mine\n", "etag": old})
    assert "files_read" in text and "changed" in text
    assert live_dav.get(path) == b"two, longer\n"


def test_live_423_a_locked_file_is_not_written(live_tools, live_http, live_dav, scratch_folder):
    path = f"{scratch_folder}/locked.md"
    live_dav.put(path, b"locked\n")
    lock = live_http.request("LOCK", live_dav.url(path), content=LOCK,
                             headers={"Timeout": "Second-600", "Content-Type": "application/xml; charset=utf-8"})
    assert lock.status_code == 200, lock.status_code
    token = lock.headers["Lock-Token"]
    try:
        etag = live_dav.props(path)["etag"]
        live_tools.ok("files_read", {"path": path})   # a replacement needs an etag a read through us returned
        text = live_tools.error("files_write", {"path": path, "content": "edit\n", "etag": etag})
        assert "locked" in text and "once the lock is released" in text
        assert text.endswith("Retry once; if it fails again, stop and report.")   # the retry field, worded
        assert live_dav.get(path) == b"locked\n"
    finally:
        live_http.request("UNLOCK", live_dav.url(path), headers={"Lock-Token": token})


def test_live_507_over_quota_writes_nothing(throwaway_account, tools_factory):
    import httpx

    small = throwaway_account(first_login=True, quota="20 KB")
    text = tools_factory(account=small).error("files_write", {"path": "/big.md", "content": "quota " * 6000})
    assert "quota" in text.lower() and "do not retry" in text.lower()
    with httpx.Client(base_url=small.url, auth=(small.user, small.app_password), timeout=60) as http:
        gone = http.request("PROPFIND", f"/remote.php/dav/files/{small.user}/big.md", headers={"Depth": "0"})
    assert gone.status_code == 404
