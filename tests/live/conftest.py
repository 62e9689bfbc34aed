"""The live suite: the same scenarios against a real Nextcloud.

Runs only when NEXTCLOUD_URL, NEXTCLOUD_USER and NEXTCLOUD_APP_PASSWORD are
set; every test here is skipped otherwise (CI and fresh clones have no server).
"""
from __future__ import annotations

import os

import pytest

LIVE_VARS = ("NEXTCLOUD_URL", "NEXTCLOUD_USER", "NEXTCLOUD_APP_PASSWORD")


def live_configured() -> bool:
    return all(os.environ.get(v) for v in LIVE_VARS)


def pytest_collection_modifyitems(config, items):
    if live_configured():
        return
    skip = pytest.mark.skip(reason="live suite: set NEXTCLOUD_URL, NEXTCLOUD_USER and NEXTCLOUD_APP_PASSWORD to run it")
    for item in items:
        if "tests/live/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(skip)


@pytest.fixture
def live_account():
    """The real server's account from the environment (never printed)."""
    if not live_configured():
        pytest.skip("live suite not configured")
    from nextcloud.config import Account

    return Account(
        url=os.environ["NEXTCLOUD_URL"],
        user=os.environ["NEXTCLOUD_USER"],
        app_password=os.environ["NEXTCLOUD_APP_PASSWORD"],
        public_url=os.environ.get("NEXTCLOUD_PUBLIC_URL"),
    )
