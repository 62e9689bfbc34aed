"""After a failed login, a server too slow to answer is named as possibly Nextcloud's brute-force delay.

Nextcloud slows every request from an address that had failed logins (tests/live/test_live_auth.py): a
best-effort check that times out then says so, instead of blaming an overloaded server.
"""
from __future__ import annotations

import pytest

from mcp_nextcloud.nextcloud import refusals
from mcp_nextcloud.nextcloud.client import NextcloudClient
from mcp_nextcloud.nextcloud.config import Account
from mcp_nextcloud.nextcloud.errors import NextcloudError
from mcp_nextcloud.server.context import Settings


def test_a_timeout_after_a_refused_login_names_the_brute_force_delay(world, ctx, call, ok, tmp_path, monkeypatch):
    monkeypatch.setenv(refusals.ENV_PATH, str(tmp_path / "refused-credentials"))
    wrong = Account(url=world.account.url, user=world.account.user, app_password="an-old-revoked-password")
    with NextcloudClient(wrong) as client, pytest.raises(NextcloudError):
        client.webdav.stat("/")
    ctx.settings = Settings(freshness_interval_s=0.0, best_effort_s=1.0)
    # Nextcloud slows every request from the address (the grep's first, the root's etag, as its SEARCH).
    world.emulator.faults.add(method="PROPFIND", delay=5.0, times=3)
    world.emulator.faults.add(method="SEARCH", delay=5.0, times=3)
    res = ok(call("files_grep", {"query": "quota"}))
    text = " ".join(res["warnings"])
    assert "did not answer within 1 s" in text and "brute-force protection slows every request" in text
    assert "an-old-revoked-password" not in text
