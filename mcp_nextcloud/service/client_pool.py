"""The index service's Nextcloud clients, kept across command lines: their connections are reused.

One client per account and deadline (the CLI's --timeout is the client's total deadline). The account is
read again by every call (`mcp-nextcloud login` may have changed the config file), so a new login gets a new
client; the key holds a hash of the app password, never the password.
"""
from __future__ import annotations

import hashlib
import threading
from typing import Any


class ClientPool:
    """Clients by (url, user, password hash, deadline); closed with the service."""

    def __init__(self) -> None:
        self._clients: dict[tuple[str, str, str, float], Any] = {}
        self._lock = threading.Lock()

    def get(self, account: Any, total_timeout: float) -> Any:
        from mcp_nextcloud.nextcloud.client import NextcloudClient

        secret = hashlib.sha256(account.app_password.encode("utf-8", "surrogatepass")).hexdigest()
        key = (account.url, account.user, secret, total_timeout)
        with self._lock:
            client = self._clients.get(key)
            if client is None or getattr(client, "account", account) != account:
                client = self._clients[key] = NextcloudClient(account, total_timeout=total_timeout)
            return client

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            try:
                client.close()
            except Exception:  # closing is best effort
                pass
