"""Nextcloud Login Flow v2: get an app password by approving a login in the browser.

1. POST /index.php/login/v2 -> a login URL for the person and a poll endpoint + token;
2. poll the endpoint (POST token=...) until it answers 200 with server, loginName, appPassword,
   within a bounded total wait. The app password is returned in an Account, never logged.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import httpx

from .config import Account, normalize_url
from .errors import NextcloudError, error_for

SOURCE = "login"

# The route for a machine without a browser (a server, an SSH session), said by `login` and by a serve without
# an account.
NO_BROWSER = ("No browser on this machine? Open the URL on any device that reaches your Nextcloud (a phone, a "
              "laptop): approving it there logs in this machine. Or create an app password in Nextcloud under "
              "Settings > Security > Devices & sessions and store it with `mcp-nextcloud login URL --user NAME "
              "--app-password -` (it reads the password from standard input), or give NEXTCLOUD_URL, "
              "NEXTCLOUD_USER and NEXTCLOUD_APP_PASSWORD in the environment (or in the MCP host's \"env\").")


@dataclass(frozen=True)
class LoginFlow:
    login_url: str                        # open this in a browser
    endpoint: str = field(repr=False)     # poll here ...
    token: str = field(repr=False)        # ... with this token (a secret until the flow ends)


USER_AGENT = "mcp-nextcloud/0.1 (login)"


def _client(timeout: float, user_agent: str = USER_AGENT) -> httpx.Client:
    return httpx.Client(timeout=httpx.Timeout(timeout, connect=min(5.0, timeout)), follow_redirects=True,
                        headers={"User-Agent": user_agent, "Accept": "application/json", "OCS-APIRequest": "true"})


def start_login(url: str, *, timeout: float = 15.0, name: str = USER_AGENT) -> LoginFlow:
    """Start a login flow on the server at `url`; `name` is the app password's name in Nextcloud's Devices &
    sessions (Nextcloud takes the User-Agent of this request)."""
    base = normalize_url(url)
    try:
        with _client(timeout, name) as client:
            resp = client.post(base + "/index.php/login/v2")
    except httpx.TimeoutException:
        raise error_for(SOURCE, None, condition="timeout") from None
    except httpx.HTTPError:
        raise error_for(SOURCE, None, condition="network") from None
    if resp.status_code != 200:
        raise error_for(SOURCE, resp.status_code, condition="not_nextcloud")
    try:
        data = resp.json()
        return LoginFlow(login_url=str(data["login"]), endpoint=str(data["poll"]["endpoint"]),
                         token=str(data["poll"]["token"]))
    except (ValueError, KeyError, TypeError):
        raise error_for(SOURCE, resp.status_code, condition="not_nextcloud") from None


def poll_login(flow: LoginFlow, *, timeout: float = 300.0, interval: float = 2.0,
               server_url: str | None = None) -> Account:
    """Poll until the login is approved (-> Account) or `timeout` seconds pass (-> NextcloudError kind login)."""
    deadline = time.monotonic() + max(0.0, timeout)
    interval = max(0.05, interval)
    with _client(min(15.0, max(1.0, timeout))) as client:
        while True:
            try:
                resp = client.post(flow.endpoint, data={"token": flow.token})
            except httpx.HTTPError:
                resp = None           # a flaky network during polling is not fatal: keep polling
            if resp is not None and resp.status_code == 200:
                try:
                    data = resp.json()
                    server = str(data.get("server") or server_url or "")
                    return Account(url=server_url or server, user=str(data["loginName"]),
                                   app_password=str(data["appPassword"]),
                                   public_url=normalize_url(server) if server_url and server and
                                   normalize_url(server) != normalize_url(server_url) else None)
                except (ValueError, KeyError, TypeError, AttributeError):
                    raise error_for(SOURCE, 200, condition="invalid_response") from None
            if resp is not None and resp.status_code not in (404, 429) and resp.status_code < 500:
                raise error_for(SOURCE, resp.status_code, detail="login polling was refused")
            if time.monotonic() + interval > deadline:
                raise error_for(SOURCE, None, condition="login_timeout")
            time.sleep(interval)


def login(url: str, *, timeout: float = 300.0, interval: float = 2.0,
          show: Callable[[str], None] | None = None) -> Account:
    """The whole flow: start, hand the login URL to `show`, poll, and return the Account.

    The Account's url is the one given here (what the user typed); the server's
    own idea of its address becomes public_url when it differs.
    """
    flow = start_login(url)
    if show is not None:
        show(flow.login_url)
    return poll_login(flow, timeout=timeout, interval=interval, server_url=normalize_url(url))


def store_login(account: Account, config_path: Path | None = None) -> tuple[Account, Any, Path]:
    """Ask the server who logged in (the DAV user id), save the account (0600); (account, user, config file)."""
    from .client import NextcloudClient
    from .config import save_account

    with NextcloudClient(account, retries=1, total_timeout=30.0) as client:
        user = client.ocs.current_user()
    account = replace(account, user_id=user.id or None)
    return account, user, save_account(account, config_path)


__all__ = ["LoginFlow", "start_login", "poll_login", "login", "store_login", "NextcloudError"]
