"""What the index service keeps across calls and lends to each command line: the open index, the clients.

A command line finds them on its console (cli/console.py `current().resources`); in its own process there
are none, and the command opens and closes its own.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from mcp_nextcloud.service.client_pool import ClientPool
from mcp_nextcloud.service.kept_index import KeptIndex


@dataclass
class Resources:
    kept: KeptIndex = field(default_factory=KeptIndex)
    clients: ClientPool = field(default_factory=ClientPool)

    def close(self) -> None:
        try:
            self.clients.close()
        finally:
            self.kept.close()
