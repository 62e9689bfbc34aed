"""A wrong or revoked app password on a real Nextcloud 34: it must not lock the address out (issue 22, item 3).

Nextcloud counts every failed login per address; past ten in half an hour it answers 429 to every
request from that address, correct credentials included. These tests send wrong passwords on purpose,
so each resets the brute-force record in its teardown (`server_admin.reset_bruteforce()`). The 401s and
429s are counted in the server's own access log, for our User-Agent only.
"""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import serve_and_call

ROOT = Path(__file__).resolve().parents[2]
OUR_AGENT = "mcp-nextcloud/"
SERVE_SECONDS = 10.0


def _statuses_since(admin: Any, mark: int, agent: str = OUR_AGENT) -> list[int]:
    """The HTTP statuses of the requests logged after `mark` whose User-Agent starts with `agent`."""
    end = admin.log_mark()   # nginx logs a request just after answering it: wait for a later marker's line
    with admin.access_log.open("rb") as fh:
        fh.seek(mark)
        lines = fh.read(end - mark).decode("utf-8", "replace").splitlines()
    out = []
    for line in lines:
        parts = line.split('"')
        # 127.0.0.1 - user [date] "METHOD /path HTTP/1.1" STATUS BYTES "referer" "agent"
        if len(parts) >= 6 and parts[5].startswith(agent):
            out.append(int(parts[2].split()[0]))
    return out


@pytest.fixture
def admin(server_admin):
    """The server's occ and access log; the brute-force record of 127.0.0.1 is reset before and after."""
    server_admin.reset_bruteforce()
    yield server_admin
    server_admin.reset_bruteforce()


def _serve_env(account: Any, password: str, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))}
    env.update({"NEXTCLOUD_URL": account.url, "NEXTCLOUD_USER": account.user, "NEXTCLOUD_APP_PASSWORD": password,
                "MCP_NEXTCLOUD_CONFIG": str(tmp_path / "config.json"),
                "MCP_NEXTCLOUD_REFUSED": str(tmp_path / "refused-credentials"),
                "MCP_NEXTCLOUD_INDEX": str(tmp_path / "index.db"),
                "MCP_NEXTCLOUD_TELEMETRY": str(tmp_path / "calls.sqlite"),
                "PYTHONPATH": str(ROOT)})
    return env


def _serve_and_call(env: dict[str, str], calls: list[tuple[str, dict[str, Any]]], *,
                    stay_s: float) -> list[Any]:
    """Start `serve` (background sync every 2 s) over stdio, make the calls, keep it running `stay_s` in all."""
    return serve_and_call(env, calls, cwd=str(ROOT), interval=2, stay_s=stay_s)


FIVE_CALLS = [("files_grep", {"query": "budget"}), ("files_read", {"path": "/Readme.md"}),
              ("files_search", {"name": "notes"}), ("nextcloud_whoami", {}), ("files_grep", {"query": "quota"})]


def test_live_a_wrong_password_costs_at_most_two_failed_logins(live_account, admin, tmp_path):
    wrong = f"wrong-{uuid.uuid4().hex}"
    mark = admin.log_mark()
    results = _serve_and_call(_serve_env(live_account, wrong, tmp_path), FIVE_CALLS, stay_s=SERVE_SECONDS)
    statuses = _statuses_since(admin, mark)
    assert statuses.count(401) <= 2, f"failed logins sent: {statuses}"
    assert 429 not in statuses, statuses
    # The server's own count too: a request abandoned at its timeout (nginx logs 499) is a failed login as well.
    counted = int(admin.occ("security:bruteforce:attempts", "127.0.0.1").split("attempts:")[1].split()[0])
    assert counted <= 2, f"the server counted {counted} failed logins ({statuses})"
    texts = [r.content[0].text for r in results]
    # The words stay true: refused credentials, never "rate-limiting" or "first sync running".
    read = texts[1]
    assert results[1].is_error and "refused the credentials" in read and "rate-limiting" not in read
    # The first grep may race the first 401 (a real server takes seconds to refuse): it may say the first sync
    # is running, but then also that the server did not answer; the grep after the refusal names it.
    assert "refused the credentials" in texts[0] or "did not answer within" in texts[0], texts[0]
    grep = texts[4]
    assert "refused the credentials" in grep and "first sync" not in grep and "Retry in about" not in grep
    assert all(wrong not in t for t in texts)
    assert wrong not in (tmp_path / "refused-credentials").read_text()

    # The right password answers at once: the address is not throttled.
    mark = admin.log_mark()
    right = _serve_and_call(_serve_env(live_account, live_account.app_password, tmp_path),
                            [("nextcloud_whoami", {})], stay_s=0)
    assert not right[0].is_error, right[0].content[0].text
    assert json.loads(right[0].content[0].text)
    statuses = _statuses_since(admin, mark)
    assert statuses and 429 not in statuses and 401 not in statuses, statuses


def test_live_a_throttled_address_is_named_and_not_retried(live_account, admin, tmp_path, monkeypatch):
    """Eleven failed logins lock 127.0.0.1 out (429 for correct credentials too): the answer says so."""
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError

    dav = f"{live_account.url}/remote.php/dav/files/{live_account.user}/"
    with httpx.Client(timeout=90) as plain:
        for _ in range(11):
            assert plain.request("PROPFIND", dav, auth=(live_account.user, "x" + uuid.uuid4().hex),
                                 headers={"Depth": "0"}).status_code == 401
        right = (live_account.user, live_account.app_password)
        locked = plain.request("PROPFIND", dav, auth=right, headers={"Depth": "0"})
        ocs = plain.get(f"{live_account.url}/ocs/v2.php/cloud/user", auth=right,
                        headers={"OCS-APIRequest": "true", "Accept": "application/json"})
    # What the emulator copies (fixtures/emulator/bruteforce.py): the shapes of the real lock-out.
    assert locked.status_code == 429 and b"TooManyRequests" in locked.content
    assert ocs.status_code == 429 and ocs.json()["ocs"]["meta"]["message"] == "Reached maximum delay"

    monkeypatch.setenv("MCP_NEXTCLOUD_REFUSED", str(tmp_path / "refused-credentials"))
    mark = admin.log_mark()
    with NextcloudClient(live_account) as client, pytest.raises(NextcloudError) as info:
        client.webdav.stat("/")
    text = str(info.value)
    assert info.value.code is ErrorCode.THROTTLED and "brute-force protection is throttling this address" in text
    assert "occ security:bruteforce:reset" in text and "Do not retry" in text
    assert _statuses_since(admin, mark) == [429], "one request, no retry of a brute-force 429"
    admin.reset_bruteforce()
    with NextcloudClient(live_account) as client:
        assert client.webdav.stat("/").is_dir    # the right password works again at once after the reset
