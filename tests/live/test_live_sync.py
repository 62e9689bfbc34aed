"""The sync scenario against a real Nextcloud (skipped unless NEXTCLOUD_URL/USER/APP_PASSWORD are set).

Indexes the account into a temporary database, then checks that a resync with
nothing changed costs exactly one request, counted by the client.
Read-only: nothing is written to the server.
"""
from __future__ import annotations

import pytest

from indexer.remote.sync import sync
from indexer.store.index import Index
from nextcloud.client import NextcloudClient

pytestmark = pytest.mark.live


def test_live_sync_then_a_no_change_resync_costs_one_propfind(live_account, tmp_path):
    index = Index.open(tmp_path / "live.db")
    try:
        with NextcloudClient(live_account) as client:
            # A modest cap keeps a first sync of a big account bounded; big files are listed, not fetched.
            first = sync(client, index, max_file_bytes=5 * 1024 * 1024)
            assert first.complete, first.failures
            assert index.folder_etag("/")
            records = index.files_under("/", source="remote")
            assert len(records) >= first.downloaded + first.skipped_too_large
            before = client.request_count
            again = sync(client, index)
            assert client.request_count - before == 1
            assert again.propfinds == 1 and again.downloaded == 0
    finally:
        index.close()
