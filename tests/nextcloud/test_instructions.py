"""Instructions that mislead (issue 10): a 429's Retry-After says how long; a full disk says to free space."""
from __future__ import annotations

import errno

import pytest

from mcp_nextcloud.nextcloud.errors import ErrorCode, error_for


def test_rate_limit_says_how_long_to_wait(nc, emulator):
    from mcp_nextcloud.nextcloud.errors import NextcloudError

    emulator.faults.add(method="PROPFIND", status=429, retry_after=3600, times=10)
    with pytest.raises(NextcloudError) as info:
        nc.webdav.stat("/")
    text = str(info.value)
    assert info.value.code is ErrorCode.RATE_LIMITED and "about 1 h" in text and "Retry-After" in text


@pytest.mark.parametrize("seconds,shown", [(3, "3 s"), (120, "2 min"), (3600, "about 1 h")])
def test_wait_is_said_in_human_units(seconds, shown):
    assert shown in str(error_for("webdav", 429, retry_after=seconds))


def test_full_disk_says_free_space_not_move_the_index(tmp_path):
    import apsw

    from mcp_nextcloud.indexer.errors import index_unusable

    for exc in (apsw.FullError("database or disk is full"), OSError(errno.ENOSPC, "No space left on device")):
        text = index_unusable(tmp_path / "local.db", exc).line()
        assert "Free some space" in text and "intact" in text and "Move it aside" not in text
    damaged = index_unusable(tmp_path / "local.db", apsw.CorruptError("database disk image is malformed")).line()
    assert "Move it aside" in damaged
