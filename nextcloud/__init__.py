"""The only code that speaks HTTP to Nextcloud: WebDAV, OCS, CalDAV, CardDAV, Deck, Talk, Mail, and the one error table.

Imports nothing else of this project. Typical use:

    from nextcloud import NextcloudClient, load_account
    with NextcloudClient(load_account()) as nc:
        item = nc.webdav.stat("/Documents/report.pdf")
"""
from .client import NextcloudClient
from .config import Account, default_config_path, load_account, save_account
from .errors import NextcloudError, error_for
from .webdav import RemoteItem

__all__ = ["NextcloudClient", "Account", "load_account", "save_account", "default_config_path",
           "NextcloudError", "error_for", "RemoteItem"]
