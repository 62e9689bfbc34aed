"""Smoke scenario against a real Nextcloud, when NEXTCLOUD_URL/USER/APP_PASSWORD are set (skipped otherwise)."""
from __future__ import annotations

import os
import uuid

import pytest

from mcp_nextcloud.nextcloud.client import NextcloudClient
from mcp_nextcloud.nextcloud.config import load_account
from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError

pytestmark = pytest.mark.live

REQUIRED = ("NEXTCLOUD_URL", "NEXTCLOUD_USER", "NEXTCLOUD_APP_PASSWORD")


@pytest.fixture
def live():
    if not all(os.environ.get(name) for name in REQUIRED):
        pytest.skip("set NEXTCLOUD_URL, NEXTCLOUD_USER and NEXTCLOUD_APP_PASSWORD to run against a real server")
    account = load_account(env=os.environ)
    with NextcloudClient(account) as client:
        yield client


def test_live_smoke(live):
    me = live.ocs.current_user()
    assert me.id
    assert live.ocs.server_version()
    root, children = live.webdav.list("/")
    assert root.is_dir and root.path == "/"
    name = f"/mcp-nextcloud-smoke-{uuid.uuid4().hex[:8]} é #1.txt"
    created = live.webdav.put(name, b"hello from the smoke test\n", create_only=True)
    try:
        assert created.file_id and created.etag
        assert live.webdav.read(name) == b"hello from the smoke test\n"
        assert live.webdav.stat(name).file_id == created.file_id
        with pytest.raises(NextcloudError) as stale:
            live.webdav.put(name, b"x", etag="0000stale0000")
        assert stale.value.code is ErrorCode.PRECONDITION
    finally:
        live.webdav.delete(name)
    with pytest.raises(NextcloudError) as gone:
        live.webdav.stat(name)
    assert gone.value.code is ErrorCode.NOT_FOUND
