"""OCS v2: who am I, capabilities and server version, which apps exist, sharees and shares."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .errors import ErrorCode, NextcloudError
from .http import Transport

SOURCE = "ocs"
CAPS_TTL = 30.0
SHARES = "/ocs/v2.php/apps/files_sharing/api/v1/shares"


@dataclass(frozen=True)
class User:
    id: str
    display_name: str
    email: str | None
    quota: dict[str, Any] | None
    groups: list[str] = field(default_factory=list)
    timezone: str | None = None   # the user's time zone preference (cloud/user "timezone"); None when unset


@dataclass(frozen=True)
class Sharee:
    id: str
    label: str
    kind: str          # "user", "group", "email", "remote", "circle", "room"


@dataclass(frozen=True)
class Share:
    id: str
    path: str
    share_with: str | None
    permissions: int
    share_type: int
    share_with_name: str | None = None
    item_type: str | None = None


_SHAREE_KINDS = {"users": "user", "groups": "group", "emails": "email", "remotes": "remote",
                 "remote_groups": "remote_group", "circles": "circle", "rooms": "room"}


def user_from_ocs(data: dict[str, Any]) -> User:
    """A User from ocs.data of cloud/user (the key is 'display-name' there, 'displayname' elsewhere)."""
    quota = data.get("quota")
    groups = data.get("groups") or []
    return User(id=str(data.get("id", "")),
                display_name=str(data.get("display-name") or data.get("displayname") or data.get("id", "")),
                email=data.get("email") or None,
                quota=quota if isinstance(quota, dict) else None,
                groups=[str(g) for g in groups] if isinstance(groups, list) else [],
                timezone=str(data.get("timezone") or "").strip() or None)


def share_from_ocs(data: dict[str, Any]) -> Share:
    return Share(id=str(data.get("id", "")), path=str(data.get("path") or ""),
                 share_with=data.get("share_with"), permissions=int(data.get("permissions") or 0),
                 share_type=int(data.get("share_type") or 0),
                 share_with_name=data.get("share_with_displayname"), item_type=data.get("item_type"))


def sharees_from_ocs(data: dict[str, Any]) -> list[Sharee]:
    """Exact matches first, then the rest, without duplicates."""
    out: list[Sharee] = []
    seen: set[tuple[str, str]] = set()
    groups = [data.get("exact") or {}, data]
    for group in groups:
        if not isinstance(group, dict):
            continue
        for key, kind in _SHAREE_KINDS.items():
            for entry in group.get(key) or []:
                value = entry.get("value") or {}
                sid = str(value.get("shareWith", ""))
                if sid and (kind, sid) not in seen:
                    seen.add((kind, sid))
                    out.append(Sharee(id=sid, label=str(entry.get("label") or sid), kind=kind))
    return out


class OCS:
    """OCS v2 calls of one account."""

    def __init__(self, transport: Transport, probe_dav: Callable[[str], bool] | None = None) -> None:
        self._t = transport
        self._caps: tuple[float, dict[str, Any]] | None = None
        self._caps_lock = threading.Lock()
        self._probe_dav = probe_dav

    def _get(self, url: str, *, params: Any = None, path: str | None = None) -> Any:
        resp = self._t.request("GET", url, source=SOURCE, path=path, params=params)
        return self._t.ocs_data(resp, source=SOURCE, path=path)

    def current_user(self) -> User:
        """The account the app password belongs to (GET cloud/user)."""
        return user_from_ocs(self._get("/ocs/v2.php/cloud/user", params={"format": "json"}))

    def delete_app_password(self) -> None:
        """Delete the app password this client is authenticated with (DELETE core/apppassword: a client's "log
        out"; Nextcloud answers 403 to its login password)."""
        self._t.request("DELETE", "/ocs/v2.php/core/apppassword", source=SOURCE, path="/ocs/v2.php/core/apppassword",
                        params={"format": "json"}, idempotent=False)

    def capabilities(self) -> dict[str, Any]:
        """ocs.data.capabilities, cached for 30 s."""
        return self._capabilities_full().get("capabilities") or {}

    def _capabilities_full(self) -> dict[str, Any]:
        with self._caps_lock:
            if self._caps and time.monotonic() - self._caps[0] < CAPS_TTL:
                return self._caps[1]
        data = self._get("/ocs/v2.php/cloud/capabilities", params={"format": "json"})
        data = data if isinstance(data, dict) else {}
        with self._caps_lock:
            self._caps = (time.monotonic(), data)
        return data

    def server_version(self) -> str:
        """'34.0.1' from the capabilities' version block."""
        version = self._capabilities_full().get("version") or {}
        return str(version.get("string") or "")

    def _app_probe(self, url: str) -> bool:
        try:
            self._t.request("GET", url, source="mail", params={"format": "json"})
        except NextcloudError as err:
            return err.code not in (ErrorCode.APP_MISSING, ErrorCode.NOT_FOUND)
        return True

    def apps_available(self) -> dict[str, bool]:
        """calendar, contacts, deck, spreed (talk) and mail: capabilities, DAV discovery, one cheap probe."""
        caps = self.capabilities()
        out = {"deck": "deck" in caps, "spreed": "spreed" in caps}
        out["talk"] = out["spreed"]
        if self._probe_dav is not None:
            out["calendar"] = self._probe_dav("calendars")
            out["contacts"] = self._probe_dav("addressbooks/users")
        else:
            out["calendar"] = out["contacts"] = "dav" in caps
        out["mail"] = "mail" in caps or self._app_probe("/ocs/v2.php/apps/mail/account/list")
        return out

    def sharees(self, search: str, *, item_type: str = "file", limit: int = 20) -> list[Sharee]:
        """Accounts/groups matching `search` that a file can be shared with."""
        data = self._get("/ocs/v2.php/apps/files_sharing/api/v1/sharees",
                         params={"search": search, "itemType": item_type, "perPage": max(1, int(limit)),
                                 "lookup": "false", "format": "json"})
        return sharees_from_ocs(data if isinstance(data, dict) else {})[:limit]

    def create_share(self, path: str, share_with: str, *, permissions: int = 1, share_type: int = 0) -> Share:
        """Share `path` with an account (share_type 0) or group (1). Sharing twice returns the same share."""
        resp = self._t.request("POST", SHARES, source=SOURCE, path=path, params={"format": "json"},
                               data={"path": path, "shareType": str(share_type), "shareWith": share_with,
                                     "permissions": str(permissions)},
                               idempotent=True)   # the server answers a duplicate with the same share
        return share_from_ocs(self._t.ocs_data(resp, source=SOURCE, path=path))

    def list_shares(self, path: str | None = None) -> list[Share]:
        """Shares this account made (of `path` when given)."""
        params = {"format": "json"}
        if path:
            params["path"] = path
        data = self._get(SHARES, params=params, path=path)
        return [share_from_ocs(d) for d in data or [] if isinstance(d, dict)]

    def update_share(self, share_id: str, *, permissions: int) -> Share:
        """Change a share's permissions (PUT shares/{id}); returns the share as the server now holds it."""
        resp = self._t.request("PUT", f"{SHARES}/{share_id}", source=SOURCE, params={"format": "json"},
                               data={"permissions": str(int(permissions))},
                               idempotent=True)   # setting the same permissions twice is the same state
        data = self._t.ocs_data(resp, source=SOURCE)
        if isinstance(data, list):   # some versions wrap the share in a one-element list
            data = data[0] if data else {}
        return share_from_ocs(data if isinstance(data, dict) else {})

    def delete_share(self, share_id: str) -> None:
        """Remove a share by id."""
        self._t.request("DELETE", f"{SHARES}/{share_id}", source=SOURCE, params={"format": "json"})


__all__ = ["OCS", "User", "Sharee", "Share"]
