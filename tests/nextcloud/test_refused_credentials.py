"""A 401 ends the attempt: refused credentials are not sent again until they change (issue 22, item 3).

Counted at the emulator, which throttles like a real Nextcloud (fixtures/emulator/bruteforce.py): every
failed login counts, and past ten the whole address is locked out.
"""
from __future__ import annotations

import pytest

from mcp_nextcloud.nextcloud import refusals
from mcp_nextcloud.nextcloud.client import NextcloudClient
from mcp_nextcloud.nextcloud.config import Account
from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError


@pytest.fixture
def record(tmp_path, monkeypatch):
    path = tmp_path / "refused-credentials"
    monkeypatch.setenv(refusals.ENV_PATH, str(path))
    return path


def _wrong(emulator, password: str = "not-the-password") -> Account:
    return Account(**{**emulator.account("alice"), "app_password": password})


def test_a_refused_password_is_sent_once_whatever_asks_again(emulator, record):
    with NextcloudClient(_wrong(emulator)) as first, NextcloudClient(_wrong(emulator), retries=0) as quick:
        for client in (first, quick, first):
            with pytest.raises(NextcloudError) as info:
                client.webdav.stat("/")
            assert info.value.code is ErrorCode.AUTH and "refused the credentials" in str(info.value)
            assert "Do not retry" in str(info.value)
    assert emulator.bruteforce.attempts("127.0.0.1") == 1
    assert "Do not retry" in str(info.value) and "not sent again" in str(info.value)


def test_the_record_is_shared_between_processes_and_holds_no_secret(emulator, record):
    wrong = _wrong(emulator, "s3cret-wrong-password")
    with NextcloudClient(wrong) as client, pytest.raises(NextcloudError):
        client.webdav.stat("/")
    text = record.read_text()
    assert "s3cret" not in text and refusals.fingerprint(wrong) in text
    assert oct(record.stat().st_mode & 0o777) == "0o600"
    other = refusals.Refusals(record)       # what another process reads
    assert other.refused_at(refusals.fingerprint(wrong)) is not None
    assert other.refused_at(refusals.fingerprint(Account(**emulator.account("alice")))) is None


def test_a_changed_password_is_tried_at_once(emulator, record):
    with NextcloudClient(_wrong(emulator)) as client, pytest.raises(NextcloudError):
        client.webdav.stat("/")
    with NextcloudClient(Account(**emulator.account("alice"))) as client:
        assert client.webdav.stat("/").is_dir


def test_a_throttled_address_is_named_and_not_retried(emulator, record):
    for i in range(11):
        with NextcloudClient(_wrong(emulator, f"wrong-{i}")) as client, pytest.raises(NextcloudError):
            client.webdav.stat("/")
    emulator.reset_requests()
    with NextcloudClient(Account(**emulator.account("alice"))) as client:
        with pytest.raises(NextcloudError) as dav:
            client.webdav.stat("/")
        with pytest.raises(NextcloudError) as ocs:
            client.ocs.current_user()
    for info in (dav, ocs):
        text = str(info.value)
        assert info.value.code is ErrorCode.THROTTLED and not info.value.retry
        assert "brute-force protection is throttling this address" in text
        assert "occ security:bruteforce:reset" in text and "Do not retry" in text
        assert "rate-limiting this account" not in text
    assert [s for _, _, s in emulator.requests] == [429, 429], "one request each, no retry of a brute-force 429"
