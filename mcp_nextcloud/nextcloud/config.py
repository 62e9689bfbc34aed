"""Where the Nextcloud account comes from: a 0600 JSON config file, overridden by the environment.

Environment variables NEXTCLOUD_URL, NEXTCLOUD_USER, NEXTCLOUD_APP_PASSWORD and
NEXTCLOUD_PUBLIC_URL win over the file, so a CI job or a desktop MCP host can
configure the server without a login. The password never appears in repr/str.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from mcp_nextcloud.environment import environ, user_dir

from .errors import LOGIN_STEP, ErrorCode, NextcloudError, no_credentials

ENV_URL = "NEXTCLOUD_URL"
ENV_USER = "NEXTCLOUD_USER"
ENV_PASSWORD = "NEXTCLOUD_APP_PASSWORD"
ENV_PUBLIC_URL = "NEXTCLOUD_PUBLIC_URL"
ENV_CONFIG = "MCP_NEXTCLOUD_CONFIG"   # optional: another config file location


@dataclass(frozen=True)
class Account:
    """One Nextcloud login: server URL, login name and app password.

    `public_url` is the address people open in a browser when it differs from
    `url` (e.g. behind a proxy); `user_id` is the DAV user id when known to
    differ from the login name (LDAP / e-mail logins), else None.
    """

    url: str
    user: str
    app_password: str = field(repr=False)
    public_url: str | None = None
    user_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "url", normalize_url(self.url))
        if self.public_url:
            object.__setattr__(self, "public_url", normalize_url(self.public_url))

    def __repr__(self) -> str:
        return f"Account(url={self.url!r}, user={self.user!r}, app_password='***')"

    __str__ = __repr__


def normalize_url(url: str) -> str:
    """`cloud.example.com/` -> `https://cloud.example.com`: scheme added, trailing slash dropped."""
    url = (url or "").strip()
    if url and "://" not in url:
        url = "https://" + url
    return url.rstrip("/")


def default_config_path() -> Path:
    """The config file: $MCP_NEXTCLOUD_CONFIG, else <user_config_dir>/mcp-nextcloud/account.json."""
    override = environ().get(ENV_CONFIG)
    if override:
        return Path(override)
    return user_dir("config") / "account.json"


def _read_file(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise NextcloudError(ErrorCode.NO_CREDENTIALS, cause=f"The config file {path} cannot be read ({exc.strerror})",
                             user_step=LOGIN_STEP, action="again (or fix the file's permissions)") from None
    try:
        data = json.loads(raw)
    except ValueError:
        raise NextcloudError(ErrorCode.NO_CREDENTIALS, cause=f"The config file {path} is not valid JSON",
                             user_step=LOGIN_STEP, action="to rewrite it") from None
    return data if isinstance(data, dict) else {}


def load_account(config_path: Path | None = None, env: Mapping[str, str] | None = None) -> Account | None:
    """The configured account, or None when neither the environment nor the file names a complete one."""
    env = environ() if env is None else env
    data = _read_file(Path(config_path) if config_path else default_config_path())
    url = env.get(ENV_URL) or data.get("url")
    user = env.get(ENV_USER) or data.get("user")
    password = env.get(ENV_PASSWORD) or data.get("app_password")
    public_url = env.get(ENV_PUBLIC_URL) or data.get("public_url") or None
    if not (url and user and password):
        return None
    # A user id saved by `login` only holds for the same login on the same server.
    user_id = data.get("user_id") if (data.get("user") == user and
                                      normalize_url(data.get("url") or "") == normalize_url(url)) else None
    return Account(url=url, user=user, app_password=password, public_url=public_url, user_id=user_id or None)


def missing_variables(config_path: Path | None = None, env: Mapping[str, str] | None = None) -> list[str]:
    """The account variables neither the environment nor the config file gives (empty when complete)."""
    env = environ() if env is None else env
    data = _read_file(Path(config_path) if config_path else default_config_path())
    have = {ENV_URL: env.get(ENV_URL) or data.get("url"), ENV_USER: env.get(ENV_USER) or data.get("user"),
            ENV_PASSWORD: env.get(ENV_PASSWORD) or data.get("app_password")}
    return [name for name, value in have.items() if not value]


def no_account(config_path: Path | None = None, env: Mapping[str, str] | None = None) -> NextcloudError:
    """The "no account" error naming the variables that are missing here."""
    try:
        missing = missing_variables(config_path, env)
    except NextcloudError as err:     # an unreadable config file: that is the cause to name
        return err
    return no_credentials(missing or [ENV_URL, ENV_USER, ENV_PASSWORD])


def save_account(account: Account, config_path: Path | None = None) -> Path:
    """Write the account as JSON with mode 0600 (atomically: temp file then rename); return the path."""
    path = Path(config_path) if config_path else default_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"url": account.url, "user": account.user, "app_password": account.app_password}
    if account.public_url:
        data["public_url"] = account.public_url
    if account.user_id:
        data["user_id"] = account.user_id
    atomic_write(path, json.dumps(data, separators=(",", ":")), 0o600)
    os.chmod(path, 0o600)
    return path


def atomic_write(path: Path, text: str, mode: int) -> None:
    """Write `text` to `path` atomically (a temporary file beside it, renamed over it), created with `mode`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=str(path.parent))
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
