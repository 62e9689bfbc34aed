"""`mcp-nextcloud login URL --user NAME --app-password -|env`: an app password one has, without a browser."""
from __future__ import annotations

import io
import json
import os
import stat

import pytest

from mcp_nextcloud.cli import main
from mcp_nextcloud.nextcloud.config import load_account


@pytest.fixture
def home(fresh_home):
    """A fresh HOME with no stored login and no NEXTCLOUD_* variables."""
    return fresh_home


def _stored(home):
    return home / ".config" / "mcp-nextcloud" / "account.json"


def test_an_app_password_from_standard_input_is_checked_stored_and_connect_needs_no_password(
        emulator, home, monkeypatch, capsys):
    password = emulator.account("alice")["app_password"]
    monkeypatch.setattr("sys.stdin", io.StringIO(password + "\n"))
    code = main(["login", emulator.url, "--user", "alice", "--app-password", "-"])
    out, err = capsys.readouterr()
    assert code == 0 and "Logged in as Alice Test (alice)" in out and password not in out + err
    assert stat.S_IMODE(os.stat(_stored(home)).st_mode) == 0o600
    saved = load_account(_stored(home), env={})
    assert saved.user == "alice" and saved.app_password == password and saved.user_id == "alice"
    # the browser route's file, so connect writes a password-free entry and no "no login" note
    assert main(["connect", "cursor", "--print"]) == 0
    out = capsys.readouterr().out
    assert "no login is stored" not in out and password not in out
    assert main(["connect", "cursor"]) == 0
    assert password not in (home / ".cursor" / "mcp.json").read_text()


def test_a_wrong_app_password_is_refused_naming_the_cause_and_nothing_is_stored(emulator, home, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("wrong-pass-word-12345\n"))
    code = main(["login", emulator.url, "--user", "alice", "--app-password", "-", "--json"])
    out, err = capsys.readouterr()
    assert code == 1 and not _stored(home).exists() and "wrong-pass-word-12345" not in out + err
    error = json.loads(out)["error"]
    assert "refused the login name 'alice' with that app password" in error["cause"]
    assert "nothing was stored" in error["cause"] and "create a new app password" in error["action"]


def test_the_app_password_from_the_environment(emulator, home, monkeypatch, capsys):
    password = emulator.account("alice")["app_password"]
    monkeypatch.setenv("NEXTCLOUD_APP_PASSWORD", password)
    monkeypatch.setenv("NEXTCLOUD_USER", "alice")
    assert main(["login", emulator.url, "--app-password", "env"]) == 0
    out, err = capsys.readouterr()
    assert password not in out + err and load_account(_stored(home), env={}).app_password == password


def test_connect_with_the_environments_app_password_stores_it_without_a_browser(emulator, home, monkeypatch, capsys):
    password = emulator.account("alice")["app_password"]
    for name, value in (("NEXTCLOUD_URL", emulator.url), ("NEXTCLOUD_USER", "alice"),
                        ("NEXTCLOUD_APP_PASSWORD", password)):
        monkeypatch.setenv(name, value)
    assert main(["connect", "cursor"]) == 0
    out, err = capsys.readouterr()
    assert "/login/v2/flow/" not in err and "Added nextcloud" in out and password not in out + err
    assert load_account(_stored(home), env={}).app_password == password
    assert password not in (home / ".cursor" / "mcp.json").read_text()


@pytest.mark.parametrize("argv, said", [
    (["--app-password", "sEcReT-literal-1234"], "never the password itself"),
    (["--user", "alice"], "--user goes with --app-password"),
    (["--app-password", "-"], "needs the login name"),
])
def test_misuse_is_refused_without_echoing_a_password(emulator, home, monkeypatch, capsys, argv, said):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    code = main(["login", emulator.url, *argv])
    out, err = capsys.readouterr()
    assert code == 2 and said in err and "sEcReT" not in out + err and not _stored(home).exists()


def test_an_empty_standard_input_stores_nothing(emulator, home, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    code = main(["login", emulator.url, "--user", "alice", "--app-password", "-"])
    assert code == 2 and "standard input held no password" in capsys.readouterr().err and not _stored(home).exists()
