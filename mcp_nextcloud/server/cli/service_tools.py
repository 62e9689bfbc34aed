"""`serve`'s tool work in the index service: the service's side (ToolHost) and serve's side (ServiceTools).

`serve` keeps the MCP protocol (sessions, tools/list, the HTTP transport and
its bearer tokens, the profile) in its own process and hands each tools/call
to the service: the tool runs there, on the service's one context (index,
Nextcloud client, extraction pool, call log), under the serve's profile, and
its CallToolResult or ToolFailure comes back as it was raised. A serve also
stays attached (one open connection), so the service lives as long as it does
and syncs in the background for it: with two serves on one index, one sync.

Results cross the socket pickled: both ends are this user's processes running
the same code (the peer and the code stamp are checked before every request).
"""
from __future__ import annotations

import contextlib
import json
import os
import pickle
import threading
import time
from pathlib import Path
from typing import Any

from mcp_nextcloud.server.cli.service_client import EXIT, PROTOCOL, Frames, ServiceGone, connect, netstring, pack

ATTACH_RETRY_SECONDS = 1.0


def rss_bytes() -> int:
    """This process's resident memory (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


# -- the service's side --------------------------------------------------------------------------------------
class ToolHost:
    """The service's MCP server and context, built on the first tool call; runs serves' calls."""

    def __init__(self, kept: Any) -> None:
        self.kept = kept
        self._lock = threading.Lock()
        self.ctx: Any = None
        self.server: Any = None
        self.index_path: Path | None = None
        self.interval: float | None = None

    def _ready(self, index_path: str) -> Any:
        with self._lock:
            if self.server is None:
                from mcp_nextcloud.nextcloud.config import load_account
                from mcp_nextcloud.nextcloud.errors import no_credentials

                from mcp_nextcloud.indexer.index import Index
                from mcp_nextcloud.server.app import build_server
                from mcp_nextcloud.server.context import ServerContext, Settings
                from mcp_nextcloud.server.telemetry import default_telemetry_path, open_call_log

                account = load_account()
                if account is None:
                    raise no_credentials()
                path = Path(index_path)
                if not path.exists():
                    Index.open(path).close()     # created as serve creates it (folder 0700, file 0600)
                from mcp_nextcloud.server import faultlog

                log, _ = open_call_log(default_telemetry_path())
                faultlog.install(default_telemetry_path().parent, stderr=False)   # faults.log, as serve's
                self.index_path = path
                self.ctx = ServerContext(account=account, index=self.kept.open(path), telemetry=log,
                                         settings=Settings.from_env())
                self.server = build_server(self.ctx)
            elif self.index_path is not None:
                self.ctx.index = self.kept.open(self.index_path)   # reopened when the file was replaced
            return self.server

    def call(self, fields: list[str]) -> bytes:
        """One tool call for a serve: (index, name, JSON arguments, JSON profile) -> the pickled outcome."""
        import anyio

        from mcp_nextcloud.server import profile

        index_path, name, arguments, chosen = fields[0], fields[1], json.loads(fields[2]), json.loads(fields[3])
        try:
            server = self._ready(index_path)
            with profile.using(_profile(chosen)):
                result = anyio.run(lambda: server.call_tool(name, arguments))
            return pickle.dumps(("ok", result))
        except Exception as exc:   # a ToolFailure (or a NextcloudError before the server exists) goes back as is
            return pickle.dumps(("raise", type(exc), str(exc), dict(vars(exc))))

    def keep_synced(self, interval: float) -> None:
        """Sync in the background every `interval` seconds (the shortest any attached serve asked)."""
        import dataclasses

        with self._lock:
            ready = self.ctx is not None
        if not ready:
            return   # started by the first tool call's context: see start below
        with self._lock:
            if self.interval is not None and self.interval <= interval:
                return
            self.interval = interval
            if self.ctx.background is not None:
                self.ctx.background.interval_s = interval
                return
            self.ctx.settings = dataclasses.replace(self.ctx.settings, sync_interval_s=interval)
        self.ctx.start_background_sync()

    def start(self, index_path: str, interval: float) -> None:
        """The context for index_path, and the background sync at interval (attach)."""
        self._ready(index_path)
        if interval > 0:
            self.keep_synced(interval)

    def syncing(self) -> bool:
        return self.ctx is not None and self.ctx.background is not None

    def close(self) -> None:
        if self.ctx is not None:
            self.ctx.index = None                # the kept index outlives the context: closed by its owner
            self.ctx.close()


def _profile(chosen: dict[str, Any]) -> Any:
    from mcp_nextcloud.server.profile import Profile

    folders = chosen.get("folders")
    tools = chosen.get("tools")
    return Profile(name=chosen.get("name", "default"), folders=tuple(folders) if folders is not None else None,
                   read_only=bool(chosen.get("readOnly")), tools=frozenset(tools) if tools is not None else None)


# -- serve's side --------------------------------------------------------------------------------------------
class ServiceTools:
    """A serve's link to the service: tool calls, and the attachment that keeps the service (and its sync)."""

    def __init__(self, name: str, index_path: Path, interval: float) -> None:
        self.name, self.index = name, str(index_path.absolute())
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sock: Any = None

    def call(self, tool: str, arguments: dict[str, Any], chosen: Any) -> Any:
        """The tool's CallToolResult from the service, or the exception it raised there (raised here)."""
        payload = self._request(["tool", self.index, tool, json.dumps(arguments), json.dumps(chosen.describe())])
        outcome = pickle.loads(payload)
        if outcome[0] == "ok":
            return outcome[1]
        cls, message, attrs = outcome[1:]
        exc = cls.__new__(cls)
        Exception.__init__(exc, message)
        exc.__dict__.update(attrs)
        raise exc

    def _request(self, fields: list[str]) -> bytes:
        for _ in range(3):   # a stale service exits on the first: the second starts the current one
            sock = connect(self.name)
            try:
                sock.settimeout(None)
                sock.sendall(netstring(pack([PROTOCOL, *fields])))
                frames = Frames(sock)
                if sock.recv(1) != b"+":
                    raise ServiceGone("the service closed the connection")
                tag, payload = frames.read()
                if tag == EXIT:
                    return payload
            except ServiceGone:
                if fields[0] == "tool":
                    raise RuntimeError("the index service ended during this call (stopped or killed); "
                                       "the outcome is unknown: read the state before repeating it") from None
            finally:
                sock.close()
        raise RuntimeError("the index service did not take the call")

    # -- attachment --
    def attach(self) -> None:
        """Stay attached in a daemon thread; reattach (starting a new service) when it went away."""
        self._thread = threading.Thread(target=self._hold, name="service-attach", daemon=True)
        self._thread.start()

    def _hold(self) -> None:
        while not self._stop.is_set():
            try:
                sock = connect(self.name)
                self._sock = sock
                sock.settimeout(None)
                sock.sendall(netstring(pack([PROTOCOL, "attach", str(self.interval), self.index])))
                if sock.recv(1) != b"+":
                    raise ServiceGone("closed")
                tag, _ = Frames(sock).read()
                if tag != EXIT:
                    raise ServiceGone("not attached")
                while sock.recv(1 << 10):
                    pass
            except (OSError, ServiceGone, ValueError):
                pass
            finally:
                with contextlib.suppress(Exception):
                    self._sock.close()
            self._stop.wait(ATTACH_RETRY_SECONDS)

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(Exception):
            self._sock.shutdown(2)
        time.sleep(0)
