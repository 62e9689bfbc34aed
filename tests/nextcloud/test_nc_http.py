"""Retries, deadlines and unknown outcomes, counted at the emulator with injected faults."""
from __future__ import annotations

import logging
import socket

import pytest

from mcp_nextcloud.nextcloud.client import NextcloudClient
from mcp_nextcloud.nextcloud.config import Account
from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError

FILES = "/remote.php/dav/files/alice"


def test_idempotent_5xx_is_retried(nc, emulator):
    emulator.faults.add(method="PROPFIND", path_prefix=FILES, status=503, times=2)
    emulator.reset_requests()
    assert nc.webdav.stat("/Projects").is_dir
    assert emulator.request_count("PROPFIND", FILES) == 3


def test_persistent_5xx_gives_up_after_the_bound(nc, emulator):
    emulator.faults.add(method="GET", path_prefix=FILES, status=500, times=50)
    emulator.reset_requests()
    with pytest.raises(NextcloudError) as exc:
        nc.webdav.read("/Projects/Alpha/notes.md")
    assert exc.value.code is ErrorCode.SERVER and exc.value.retry
    assert "Retry once; if it fails again, stop and report." in str(exc.value)
    assert emulator.request_count("GET", FILES) == 4    # 1 + retries=3


def test_non_idempotent_write_is_not_retried_on_5xx(nc, emulator):
    emulator.faults.add(method="PUT", path_prefix=FILES, status=503, times=5)
    emulator.reset_requests()
    with pytest.raises(NextcloudError) as exc:
        nc.webdav.put("/Projects/x.txt", b"x")
    assert exc.value.code is ErrorCode.SERVER
    assert emulator.request_count("PUT", FILES) == 1


def test_429_honours_retry_after(nc, emulator):
    emulator.faults.add(method="PROPFIND", path_prefix=FILES, status=429, retry_after=1)
    emulator.reset_requests()
    import time
    start = time.monotonic()
    nc.webdav.stat("/")
    assert time.monotonic() - start >= 0.9
    assert emulator.request_count("PROPFIND", FILES) == 2


def test_retry_after_beyond_the_cap_is_reported_not_waited(nc, emulator):
    emulator.faults.add(method="PROPFIND", path_prefix=FILES, status=429, retry_after=3600)
    emulator.reset_requests()
    with pytest.raises(NextcloudError) as exc:
        nc.webdav.stat("/")
    assert exc.value.code is ErrorCode.RATE_LIMITED and exc.value.retry_after == pytest.approx(3600)
    assert emulator.request_count("PROPFIND", FILES) == 1


def test_write_rejected_with_429_is_retried(nc, emulator):
    # A 429 means the server did nothing, so even a write may wait and go again.
    emulator.faults.add(method="PUT", path_prefix=FILES, status=429, retry_after=0)
    emulator.reset_requests()
    assert nc.webdav.put("/Projects/y.txt", b"y").etag
    assert emulator.request_count("PUT", FILES) == 2


def test_dropped_connection_is_retried_for_reads(nc, emulator):
    emulator.faults.add(method="GET", path_prefix=FILES, drop=True)
    emulator.reset_requests()
    assert nc.webdav.read("/Projects/Alpha/notes.md")
    assert emulator.request_count("GET", FILES) == 2


def test_slow_read_times_out_then_retries(emulator, account):
    emulator.faults.add(method="PROPFIND", path_prefix=FILES, delay=1.0)
    with NextcloudClient(account, timeout=0.3, backoff=0.01) as nc:
        assert nc.webdav.stat("/").is_dir
        # The slow answer is logged at the emulator only once it is sent, so count at the client.
        assert nc.request_count == 2


def test_total_deadline_bounds_a_call(emulator, account):
    emulator.faults.add(method="PROPFIND", path_prefix=FILES, delay=2.0, times=10)
    with NextcloudClient(account, timeout=5.0, total_timeout=0.6, backoff=0.01) as nc:
        with pytest.raises(NextcloudError) as exc:
            nc.webdav.stat("/")
    assert exc.value.code is ErrorCode.TIMEOUT and "did not answer in time" in str(exc.value)


def test_commit_then_timeout_is_an_unknown_outcome(nc, emulator):
    emulator.faults.add(method="PUT", path_prefix=FILES, commit_then_timeout=True)
    emulator.reset_requests()
    with pytest.raises(NextcloudError) as exc:
        nc.webdav.put("/Projects/maybe.txt", b"maybe")
    err = exc.value
    assert err.code is ErrorCode.UNKNOWN_OUTCOME and not err.retry
    assert "may or may not have happened" in str(err) and "re-read" in str(err).lower()
    assert emulator.request_count("PUT", FILES) == 1            # never retried blindly
    assert nc.webdav.read("/Projects/maybe.txt") == b"maybe"    # it did happen: re-reading tells


def test_slow_write_times_out_as_unknown_outcome(emulator, account):
    emulator.faults.add(method="PUT", path_prefix=FILES, delay=1.0)
    with NextcloudClient(account, timeout=0.3, backoff=0.01) as nc:
        with pytest.raises(NextcloudError) as exc:
            nc.webdav.put("/Projects/slow.txt", b"s")
        assert nc.request_count == 1
    assert exc.value.code is ErrorCode.UNKNOWN_OUTCOME


def test_connection_refused_is_a_network_error():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()   # nothing listens there now
    with NextcloudClient(Account(f"http://127.0.0.1:{port}", "alice", "pw-abc-123"), backoff=0.01,
                         retries=2) as nc:
        with pytest.raises(NextcloudError) as exc:
            nc.webdav.put("/a.txt", b"a")   # never sent, so retrying even a write is safe
        assert exc.value.code is ErrorCode.NETWORK and exc.value.retry
        assert nc.request_count == 3
        assert str(port) not in str(exc.value)


def test_ocs_and_app_calls_send_the_csrf_header(nc, emulator):
    # The emulator answers 412 "CSRF check failed" to OCS calls without OCS-APIRequest.
    assert nc.ocs.current_user().id == "alice"


def test_no_secret_or_url_in_logs_and_errors(emulator, account, caplog):
    # Our own log lines, at every level. (httpx logs URLs at INFO: the application keeps it at
    # WARNING, cli/logs.py; a library does not set other libraries' levels.)
    caplog.set_level(logging.DEBUG, logger="mcp_nextcloud.nextcloud")
    emulator.faults.add(method="GET", path_prefix=FILES, status=503, times=10)
    errors = []
    with NextcloudClient(account, backoff=0.01) as nc:
        nc.webdav.stat("/Projects")
        for call in (lambda: nc.webdav.read("/Projects/Alpha/notes.md"),
                     lambda: nc.webdav.put("/Nope/x.txt", b"x"),
                     lambda: nc.webdav.put("/Projects/Alpha/notes.md", b"x", etag="stale")):
            with pytest.raises(NextcloudError) as exc:
                call()
            errors.append(exc.value)
        nc_repr = repr(nc)
    host = emulator.url.split("://", 1)[1]
    texts = [caplog.text, nc_repr] + [str(e) for e in errors] + [repr(e) for e in errors]
    for text in texts:
        assert account.app_password not in text
        assert host not in text and "remote.php" not in text
        assert "Authorization" not in text and "Traceback" not in text
    assert "/Projects/Alpha/notes.md" in caplog.text   # logs name the user path instead


def test_no_retry_when_the_deadline_cannot_fit_the_wait(emulator, account):
    import io
    emulator.faults.add(method="GET", path_prefix=FILES, status=503, retry_after=2)
    with NextcloudClient(account, total_timeout=0.5, backoff=0.01) as nc:
        with pytest.raises(NextcloudError) as exc:
            nc.webdav.download("/Projects/Alpha/notes.md", io.BytesIO())   # streamed
        assert exc.value.code is ErrorCode.SERVER and exc.value.retry_after == pytest.approx(2)
        assert nc.request_count == 1
