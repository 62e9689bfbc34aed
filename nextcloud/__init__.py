"""The only code that speaks HTTP to Nextcloud: WebDAV, OCS, CalDAV, CardDAV, Deck, Talk, Mail, and the one error table.

Imports nothing else of this project. Typical use:

    from nextcloud import NextcloudClient, load_account
    with NextcloudClient(load_account()) as nc:
        item = nc.webdav.stat("/Documents/report.pdf")

The names below load on first use (PEP 562), so `import nextcloud.errors` (what
server/ and indexer/ need to match errors with isinstance) never imports httpx.
"""
from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import NextcloudClient
    from .config import Account, default_config_path, load_account, save_account
    from .errors import NextcloudError, error_for
    from .webdav import RemoteItem

_WHERE = {
    "NextcloudClient": "client",
    "Account": "config", "default_config_path": "config", "load_account": "config", "save_account": "config",
    "NextcloudError": "errors", "error_for": "errors",
    "RemoteItem": "webdav",
}

__all__ = ["NextcloudClient", "Account", "load_account", "save_account", "default_config_path",
           "NextcloudError", "error_for", "RemoteItem"]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'nextcloud' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
