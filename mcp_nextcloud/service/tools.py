"""`serve`'s tool work in the index service: the service's side (ToolHost) and serve's side (ServiceTools).

`serve` keeps the MCP protocol (sessions, tools/list, the HTTP transport and
its bearer tokens, the profile) in its own process and hands each tools/call
to the service: the tool runs there, on the service's one context (index,
Nextcloud client, extraction pool, call log), under the serve's profile and
with the serve's environment (credentials, settings), and its CallToolResult
or ToolFailure comes back as it was raised. A serve also stays attached (one
open connection), so the service lives as long as it does and syncs in the
background for it: with two serves on one index, one sync.

The context belongs to one account: a call whose credentials name another
account than the one the service's context (and so its index) serves is
refused with the cause. The background sync is supervised: a start that fails
is retried with backoff while a serve wants it, and `service status` says why.

Results cross the socket pickled: both ends are this user's processes running
the same code (the peer and the code stamp are checked before every request).
"""
from __future__ import annotations

import contextlib
import json
import pickle
import threading
import time
from pathlib import Path
from typing import Any

from mcp_nextcloud import environment
from mcp_nextcloud.service import loading, loops
from mcp_nextcloud.service.client import EXIT, PROTOCOL, Frames, ServiceGone, connect, env_field, netstring, pack
from mcp_nextcloud.service.requests import Attach, CancelToken, Channel, ToolCall

ATTACH_RETRY_SECONDS = 1.0
BACKOFF_FIRST_S, BACKOFF_MAX_S = 1.0, 60.0


class OtherAccount(Exception):
    """A call for another account than the one this service's index serves."""


# -- the service's side --------------------------------------------------------------------------------------
_server: Any = None
_server_lock = threading.Lock()


def tool_server() -> Any:
    """The service's one tool server, over the context of each call (server/call_context.py): every index it
    hosts (the team's people) shares its registered tools, never their contexts."""
    global _server
    loading.need("tools")
    with _server_lock:
        if _server is None:
            from mcp_nextcloud.server.app import build_server
            from mcp_nextcloud.server.call_context import call_context

            _server = loops.inline_tools(build_server(call_context()))
        return _server


class ToolHost:
    """The service's MCP server and context (one account), built on first need; runs serves' calls."""

    def __init__(self, resources: Any, log: Any) -> None:
        self.resources, self.log = resources, log
        self._lock = threading.RLock()   # _build (under it) opens the first call log (under it too)
        self.ctx: Any = None
        self.server: Any = None
        self.index_path: Path | None = None
        self.interval: float | None = None   # the shortest interval an attached serve asked for; None: no sync
        self._wanting: list[float] = []      # the intervals of the attached serves that want a background sync
        self.sync_state: dict[str, Any] = {"state": "off"}
        self._supervisor: threading.Thread | None = None
        self._logs: dict[Path, Any] = {}   # call logs by path (each caller's environment names its own)

    def _ready(self, index_path: str, env: dict[str, str]) -> Any:
        """The server for the account env names; built on the first call (under the one loading lock)."""
        loading.need("tools")
        from mcp_nextcloud.nextcloud.config import load_account, no_account

        with environment.using(env):
            account = load_account()
            if account is None:
                raise no_account()
        with self._lock:
            if self.server is None:
                self._build(index_path, account, env)
            elif (self.ctx.account.url, self.ctx.account.user) != (account.url, account.user):
                raise OtherAccount(f"the index {self.index_path} serves {self.ctx.account.user} at "
                                   f"{self.ctx.account.url}, not {account.user} at {account.url}: give this "
                                   "account its own index (--index or MCP_NEXTCLOUD_INDEX)")
            elif account != self.ctx.account:   # the same account with new credentials (a new app password)
                self._replace_context(index_path, account, env)
            else:
                self._reopen()
            return self.server

    def _build(self, index_path: str, account: Any, env: dict[str, str]) -> None:
        from mcp_nextcloud.indexer.index import Index
        from mcp_nextcloud.server import faultlog
        from mcp_nextcloud.server.context import ServerContext, Settings, open_index
        from mcp_nextcloud.server.telemetry import default_telemetry_path

        path = Path(index_path)
        with environment.using(env):
            if not path.exists():
                Index.open(path).close()     # created as serve creates it (folder 0700, file 0600)
            faultlog.install(default_telemetry_path().parent, stderr=False)   # faults.log, as serve's
            settings = Settings.from_env()
        log = self._call_log(env)
        index, unusable = open_index(path, self.resources.kept.open)   # damaged: the file tools say so
        from mcp_nextcloud.indexer.remote.marks import other_account

        owner = other_account(index, account) if index is not None else None
        if owner is not None:
            raise OtherAccount(f"the index {path} holds the files of {owner}, not of {account.user} at "
                               f"{account.url}: give this account its own index (--index or MCP_NEXTCLOUD_INDEX)")
        self.index_path = path
        self.ctx = ServerContext(account=account, index=index, telemetry=log, settings=settings, unusable=unusable)
        self.server = tool_server()

    def _reopen(self) -> None:
        """The kept index for this call: opened again when its file was replaced, or once a damaged one is fixed
        (the background sync that could not start then starts)."""
        from mcp_nextcloud.server.context import open_index

        assert self.index_path is not None
        fixed = self.ctx.unusable is not None
        self.ctx.index, self.ctx.unusable = open_index(self.index_path, self.resources.kept.open)
        if fixed and self.ctx.unusable is None:
            with contextlib.suppress(Exception):
                self._start_sync()

    def _replace_context(self, index_path: str, account: Any, env: dict[str, str]) -> None:
        """A new context (its client holds the new credentials; the old one's refusals stay with it)."""
        old, syncing = self.ctx, self.ctx.background is not None
        old.index = old.telemetry = None     # the kept index and the call logs outlive the context
        with contextlib.suppress(Exception):
            old.close()
        self.ctx = self.server = None
        self._build(index_path, account, env)
        if syncing:
            self._start_sync()

    def call(self, request: ToolCall, channel: Channel, cancel: CancelToken) -> None:
        """One tool call for a serve: the pickled outcome (a result, or the exception to raise there)."""
        channel.answer(self._outcome(request))

    def _outcome(self, request: ToolCall) -> bytes:
        try:
            server = self._ready(request.index, request.env)
            from mcp_nextcloud.server import profile, telemetry
            from mcp_nextcloud.server.call_context import serving
            from mcp_nextcloud.server.context import Settings, settings_of_call

            self._resume_sync()
            with environment.using(request.env), profile.using(_profile(request.profile)), serving(self.ctx), \
                    telemetry.logging_to(self._call_log(request.env)), settings_of_call(Settings.from_env()):
                try:
                    result = loops.run(lambda: server.call_tool(request.name, request.arguments))
                finally:
                    _release_thread_connections(self.ctx)
            return pickle.dumps(("ok", result))
        except Exception as exc:   # a ToolFailure (or a NextcloudError before the server exists) goes back as is
            with contextlib.suppress(Exception):
                return pickle.dumps(("raise", type(exc), str(exc), dict(vars(exc))))
            return pickle.dumps(("raise", RuntimeError, f"{type(exc).__name__}: {exc}", {}))

    def _call_log(self, env: dict[str, str]) -> Any:
        """The call log this caller's environment names (a serve's --telemetry-less default or its
        MCP_NEXTCLOUD_TELEMETRY), opened once per path."""
        from mcp_nextcloud.server.telemetry import default_telemetry_path, open_call_log

        with environment.using(env):
            path = default_telemetry_path()
        with self._lock:
            if path not in self._logs:
                self._logs[path], _ = open_call_log(path)
            return self._logs[path]

    # -- the background sync, supervised --
    def attach(self, request: Attach, channel: Channel, cancel: CancelToken) -> None:
        """A serve attaches: answer at once; the background sync starts (and is retried) in the supervisor and
        runs while a serve that asked for it stays attached (this returns when the serve closes its end)."""
        channel.answer(b"attached")
        tool_server()    # an attached serve's calls are tool calls: load their stack and server now, not at the first
        if request.interval <= 0:
            return
        self.log(f"a serve attached to {request.index} (sync every {request.interval:g} s)")
        with self._lock:
            self._wanting.append(request.interval)
            self._set_interval()
            start = self._supervisor is None or not self._supervisor.is_alive()
            if start:
                self._supervisor = threading.Thread(target=self._supervise, args=(request,),
                                                    name="sync-supervisor", daemon=True)
        if start:
            self._supervisor.start()     # type: ignore[union-attr]
        try:
            channel.wait_closed()
        finally:
            self._detach(request.interval)

    def _set_interval(self) -> None:
        """The sync runs at the shortest interval an attached serve wants (under the lock)."""
        self.interval = min(self._wanting) if self._wanting else None
        if self.interval and self.ctx is not None and self.ctx.background is not None:
            self.ctx.background.interval_s = self.interval

    def _detach(self, interval: float) -> None:
        """A serve that wanted the sync is gone: the last one's going stops it (a service kept for CLI calls
        must not go on syncing every few seconds for nobody)."""
        stopping = None
        with self._lock:
            self._wanting.remove(interval)
            self._set_interval()
            if self.interval is None and self.ctx is not None and self.ctx.background is not None:
                stopping, self.ctx.background = self.ctx.background, None
                self.sync_state = {"state": "off"}
        if stopping is not None:
            stopping.stop()

    def _supervise(self, request: Attach) -> None:
        """Start the background sync; on failure, say why (status, log) and try again with backoff."""
        delay = BACKOFF_FIRST_S
        while self.interval:   # no serve wants the sync any more: stop trying
            try:
                with environment.using(request.env):   # the sync thread runs in the caller's environment
                    self._ready(request.index, request.env)
                    self._start_sync()
                self.sync_state = {"state": "running", "since": round(time.time())}
                return
            except Exception as exc:
                from mcp_nextcloud.indexer.errors import IndexUnusable

                # An index that cannot be used is said as the tools say it (cause and step); anything else by name.
                cause = exc.line() if isinstance(exc, IndexUnusable) else f"{type(exc).__name__}: {exc}"
                self.sync_state = {"state": "failed", "at": round(time.time()), "cause": cause,
                                   "nextTryInSeconds": delay}
                self.log(f"background sync not started ({cause}); trying again in {delay:g} s")
            time.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX_S)

    def _start_sync(self) -> None:
        import dataclasses

        with self._lock:   # under it: a serve's going (_detach) cannot slip between the check and the start
            interval = self.interval or 0
            if not interval or self.ctx.background is not None:
                return
            self.ctx.settings = dataclasses.replace(self.ctx.settings, sync_interval_s=interval)
            where = self.index_path
            self.ctx.start_background_sync(report=lambda message: self.log(f"background sync of {where}: {message}"))
            self.log(f"background sync of {where} started (every {interval:g} s)")

    def _resume_sync(self) -> None:
        """A call while a serve wants a background sync that is not running: start it now, not 'later'; one
        whose last round did not succeed: sync again now (BackgroundSync.retry_failed)."""
        if self.interval and self.ctx is not None and self.ctx.background is None:
            with contextlib.suppress(Exception):
                self._start_sync()
                self.sync_state = {"state": "running", "since": round(time.time())}
        elif self.ctx is not None and self.ctx.background is not None:
            self.ctx.background.retry_failed()

    def attached(self) -> bool:
        """Whether a caller that asked for the background sync is still attached."""
        with self._lock:
            return bool(self._wanting)

    def syncing(self) -> bool:
        return self.ctx is not None and self.ctx.background is not None

    def close(self) -> None:
        for log in self._logs.values():
            with contextlib.suppress(Exception):
                log.close()
        if self.ctx is not None:
            self.ctx.index = None                # the kept index outlives the context: closed by its owner
            self.ctx.close()


def _release_thread_connections(ctx: Any) -> None:
    """Close this request thread's connections to the call's index and jobs store (the tool ran in this thread:
    loops.inline_tools). The threads run every caller's calls in turn (a team's: every person's), so connections
    kept per thread and index would add up; a call opens its own, as when each ran in a thread of its own."""
    from mcp_nextcloud.server.tools.files.coverage import JOBS_KEY

    if ctx is None:
        return
    if ctx.index is not None:
        ctx.index.release_reader()
    jobs = ctx.cached_now(JOBS_KEY)
    if jobs is not None:
        jobs.close()            # JobStore.close: this thread's connection only


def _profile(chosen: dict[str, Any]) -> Any:
    from mcp_nextcloud.server.profile import Profile

    folders = chosen.get("folders")
    tools = chosen.get("tools")
    return Profile(name=chosen.get("name", "default"), folders=tuple(folders) if folders is not None else None,
                   read_only=bool(chosen.get("readOnly")), tools=frozenset(tools) if tools is not None else None)


# -- serve's side --------------------------------------------------------------------------------------------
class ServiceTools:
    """A serve's link to the service: tool calls, and the attachment that keeps the service (and its sync)."""

    def __init__(self, name: str, index_path: Path, interval: float, env: dict[str, str]) -> None:
        self.name, self.index = name, str(index_path.absolute())
        self.interval = interval
        self.env = env_field(env)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sock: Any = None

    def call(self, tool: str, arguments: dict[str, Any], chosen: Any, *, read_only: bool = False) -> Any:
        """The tool's CallToolResult from the service, or the exception it raised there (raised here).

        A read the service's end interrupted is asked once more (a new service answers it); a write is not:
        its outcome is unknown, and the answer says so."""
        fields = ["tool", self.env, self.index, tool, json.dumps(arguments), json.dumps(chosen.describe())]
        try:
            payload = self._request(fields)
        except ServiceGone:
            if not read_only:
                raise RuntimeError("the index service ended during this call (stopped or killed); the outcome "
                                   "is unknown: read the state before repeating it") from None
            try:
                payload = self._request(fields)
            except ServiceGone:
                raise RuntimeError("the index service ended twice during this read; try the call again") from None
        outcome = pickle.loads(payload)
        if outcome[0] == "ok":
            return outcome[1]
        cls, message, attrs = outcome[1:]
        exc = cls.__new__(cls)
        Exception.__init__(exc, message)
        exc.__dict__.update(attrs)
        raise exc

    def _request(self, fields: list[str]) -> bytes:
        """The answer; ServiceGone when the service ended after taking the call."""
        for _ in range(3):   # a stale service exits on the first: the second starts the current one
            sock = connect(self.name)
            try:
                sock.settimeout(None)
                sock.sendall(netstring(pack([PROTOCOL, *fields])))
                try:
                    taken = sock.recv(1)
                except ConnectionError:
                    taken = b""
                if taken != b"+":
                    continue                 # it was exiting as we connected: nothing ran, a new one answers
                tag, payload = Frames(sock).read()
                if tag == EXIT:
                    return payload
            except ConnectionError:
                raise ServiceGone("the service closed the connection") from None
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
                sock.sendall(netstring(pack([PROTOCOL, "attach", self.env, self.index, str(self.interval)])))
                if sock.recv(1) != b"+":
                    raise ServiceGone("closed")
                tag, _ = Frames(sock).read()
                if tag != EXIT:
                    raise ServiceGone("not attached")
                while sock.recv(1 << 10):
                    pass
            except Exception:  # noqa: BLE001 - whatever ended it (gone, declined, a bug), attach again: a serve
                pass           # whose attachment thread died would never have its index synced again
            finally:
                with contextlib.suppress(Exception):
                    self._sock.close()
            self._stop.wait(ATTACH_RETRY_SECONDS)

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(Exception):
            self._sock.shutdown(2)
        time.sleep(0)
