"""The tool hosts of one service process: one ToolHost per index its callers name.

A person's service (`serve`, the CLI) names one index, so it has one host, and that host shares the service's
kept index and clients with the command lines (one writer per index file in the process). The team server's
service hosts many people, each on their own index: the index a call names (its team server derived it from the
caller's bearer token, never from anything the client sent) picks the host, and each host has its own context,
kept index, call logs and background sync, so nothing of one person's reaches another's calls. What they share
is what costs the memory: the interpreter, the imported tool stack, the meaning model.
"""
from __future__ import annotations

import os
import threading
from typing import Any

from mcp_nextcloud.service.requests import Attach, CancelToken, Channel, ToolCall
from mcp_nextcloud.service.resources import Resources
from mcp_nextcloud.service.tools import ToolHost


class ToolHosts:
    """The ToolHost of each index, made on its first request."""

    def __init__(self, resources: Resources, log: Any) -> None:
        self.resources, self.log = resources, log
        self._hosts: dict[str, tuple[ToolHost, Resources]] = {}
        self._lock = threading.Lock()

    def host(self, index: str) -> ToolHost:
        """The index's host; the first index shares the service's own resources (its command lines' index)."""
        key = os.path.realpath(index)          # two spellings of one file: one host, one writer
        with self._lock:
            known = self._hosts.get(key)
            if known is None:
                resources = self.resources if not self._hosts else Resources()
                known = self._hosts[key] = (ToolHost(resources, self.log), resources)
            return known[0]

    def call(self, request: ToolCall, channel: Channel, cancel: CancelToken) -> None:
        self.host(request.index).call(request, channel, cancel)

    def attach(self, request: Attach, channel: Channel, cancel: CancelToken) -> None:
        """A caller stays attached to its index's host; when the last one of a team person's index leaves (they
        signed out, were revoked, or the team server stopped), the host goes with its context and credentials."""
        host = self.host(request.index)
        try:
            host.attach(request, channel, cancel)
        finally:
            if request.interval > 0:     # else attach returned at once, the caller still attached
                self._evict_if_left(request.index, host)

    def _evict_if_left(self, index: str, host: ToolHost) -> None:
        key = os.path.realpath(index)
        with self._lock:
            known = self._hosts.get(key)
            if known is None or known[0] is not host or known[1] is self.resources or host.attached():
                return
            del self._hosts[key]
        try:
            host.close()
        finally:
            known[1].close()

    def status(self) -> dict[str, Any]:
        """The sync of the one index (a person's service), or how many of the indexes sync (a team's)."""
        with self._lock:
            hosts = [host for host, _ in self._hosts.values()]
        if len(hosts) <= 1:
            one = hosts[0] if hosts else None
            return {"backgroundSync": bool(one and one.syncing()), "sync": one.sync_state if one else {"state": "off"}}
        syncing = sum(host.syncing() for host in hosts)
        return {"backgroundSync": syncing > 0, "indexes": len(hosts), "syncingIndexes": syncing,
                "failedSyncs": sum(host.sync_state.get("state") == "failed" for host in hosts)}

    def close(self) -> None:
        with self._lock:
            hosts, self._hosts = list(self._hosts.values()), {}
        for host, resources in hosts:
            try:
                host.close()
            finally:
                if resources is not self.resources:
                    resources.close()
