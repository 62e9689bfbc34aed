"""Account configuration: 0600 file, environment override, no password in repr/str."""
from __future__ import annotations

import os
import stat

import pytest

from mcp_nextcloud.nextcloud.config import Account, default_config_path, load_account, save_account

ENV = {"NEXTCLOUD_URL": "https://env.example.com/", "NEXTCLOUD_USER": "envuser",
       "NEXTCLOUD_APP_PASSWORD": "env-secret-1"}


def test_save_is_0600_and_loads_back(tmp_path):
    path = save_account(Account("cloud.example.com", "alice", "s3cret-app-pw", user_id="alice"),
                        tmp_path / "c" / "a.json")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    acct = load_account(path, env={})
    assert acct == Account("https://cloud.example.com", "alice", "s3cret-app-pw", user_id="alice")
    assert b"\n " not in path.read_bytes()   # compact JSON


def test_env_overrides_file(tmp_path):
    path = save_account(Account("https://file.example.com", "alice", "file-pw"), tmp_path / "a.json")
    acct = load_account(path, env=ENV)
    assert (acct.url, acct.user, acct.app_password) == ("https://env.example.com", "envuser", "env-secret-1")
    assert acct.user_id is None   # a saved user id belongs to the saved login only
    partial = load_account(path, env={"NEXTCLOUD_APP_PASSWORD": "other"})
    assert partial.app_password == "other" and partial.user == "alice"
    pub = load_account(path, env={**ENV, "NEXTCLOUD_PUBLIC_URL": "https://public.example.com"})
    assert pub.public_url == "https://public.example.com"


def test_nothing_configured(tmp_path):
    assert load_account(tmp_path / "missing.json", env={}) is None
    assert load_account(tmp_path / "missing.json", env={"NEXTCLOUD_URL": "https://x"}) is None


def test_broken_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "a.json"
    bad.write_text("{not json")
    from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError

    with pytest.raises(NextcloudError) as exc:
        load_account(bad, env={})
    assert exc.value.code is ErrorCode.NO_CREDENTIALS and "mcp-nextcloud login" in str(exc.value)


def test_password_never_in_repr():
    acct = Account("https://x.example.com", "alice", "TOPSECRET-123")
    for text in (repr(acct), str(acct), f"{acct}", repr([acct])):
        assert "TOPSECRET" not in text and "alice" in text


def test_default_path(monkeypatch, tmp_path):
    monkeypatch.setenv("MCP_NEXTCLOUD_CONFIG", str(tmp_path / "x.json"))
    assert default_config_path() == tmp_path / "x.json"
    monkeypatch.delenv("MCP_NEXTCLOUD_CONFIG")
    assert default_config_path().parent.name == "mcp-nextcloud"
