"""Login Flow v2 and `mcp-nextcloud login` against the emulator."""
from __future__ import annotations

import json
import os
import stat
import threading
import time

import pytest

from mcp_nextcloud.nextcloud.client import NextcloudClient
from mcp_nextcloud.nextcloud.config import Account, load_account
from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError
from mcp_nextcloud.nextcloud.login import login, poll_login, start_login
from mcp_nextcloud.cli import main


def _approve_soon(emulator, user="alice", within=5.0):
    """Approve the next pending login flow from another thread, as a person in a browser would."""
    result = {}

    def run():
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            try:
                result["password"] = emulator.approve_login(user)
                return
            except LookupError:
                time.sleep(0.02)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


def test_login_flow_returns_a_working_account(emulator):
    shown = []
    thread, result = _approve_soon(emulator)
    account = login(emulator.url, timeout=5, interval=0.05, show=shown.append)
    thread.join()
    assert shown and "/login/v2/flow/" in shown[0]
    assert account.user == "alice" and account.app_password == result["password"]
    assert account.url == emulator.url and "app_password='***'" in repr(account)
    with NextcloudClient(account) as nc:
        assert nc.ocs.current_user().id == "alice"


def test_login_times_out_when_nobody_approves(emulator):
    flow = start_login(emulator.url)
    assert flow.token not in repr(flow)
    started = time.monotonic()
    with pytest.raises(NextcloudError) as exc:
        poll_login(flow, timeout=0.3, interval=0.05)
    assert time.monotonic() - started < 3
    assert exc.value.code is ErrorCode.LOGIN and "mcp-nextcloud login" in str(exc.value)


def test_login_against_something_that_is_not_nextcloud(emulator):
    with pytest.raises(NextcloudError) as exc:
        start_login(emulator.url + "/nothing-here")
    assert exc.value.code is ErrorCode.LOGIN and "does not answer like a Nextcloud" in str(exc.value)


def test_cli_login_saves_0600_and_never_prints_the_password(emulator, tmp_path, capsys):
    config = tmp_path / "conf" / "account.json"
    thread, result = _approve_soon(emulator)
    code = main(["login", emulator.url, "--timeout", "5", "--interval", "0.05", "--config", str(config)])
    thread.join()
    out, err = capsys.readouterr()
    assert code == 0
    assert "/login/v2/flow/" in err                        # the URL to open
    assert "Alice Test (alice)" in out                     # who is logged in
    assert result["password"] not in out + err
    assert stat.S_IMODE(os.stat(config).st_mode) == 0o600
    saved = load_account(config, env={})
    assert saved.user == "alice" and saved.app_password == result["password"] and saved.user_id == "alice"


def test_cli_login_json_and_failure(emulator, tmp_path, capsys):
    config = tmp_path / "a.json"
    code = main(["login", emulator.url, "--timeout", "0.2", "--interval", "0.05", "--config", str(config), "--json"])
    out, _ = capsys.readouterr()
    assert code == 1 and not config.exists()
    data = json.loads(out)
    error = data["error"]     # the CLI's one failure shape
    assert error["code"] == "login" and error["retry"] is False and "approved" in error["cause"]
    assert error["action"].startswith("Run `mcp-nextcloud login URL`") and error["message"].startswith(error["cause"])
    assert out.strip() == json.dumps(data, separators=(",", ":"))    # compact JSON


def test_a_named_flow_and_deleting_its_app_password(emulator):
    """The flow's name is the app password's name (Nextcloud takes the User-Agent that starts the flow);
    delete_app_password ends the password the client is authenticated with, and only an app password."""
    flow = start_login(emulator.url, name="Claude via mcp-nextcloud team server mcp.example.org, signed in 2026-12-07")
    password = emulator.approve_login("alice")
    account = poll_login(flow, timeout=5, interval=0.05, server_url=emulator.url)
    users = emulator.state.users
    assert users["alice"].app_password_names[password].startswith("Claude via mcp-nextcloud team server")
    with NextcloudClient(account, retries=0) as client:
        client.ocs.delete_app_password()
    assert password not in users["alice"].app_passwords
    with NextcloudClient(account, retries=0) as client, pytest.raises(NextcloudError) as gone:
        client.ocs.current_user()
    assert gone.value.code is ErrorCode.AUTH
    own = Account(url=emulator.url, user="alice", app_password=users["alice"].password)
    with NextcloudClient(own, retries=0) as client, pytest.raises(NextcloudError) as refused:
        client.ocs.delete_app_password()           # the login password is not an app password: 403
    assert refused.value.status == 403
