"""Per-process server state: the account, one Nextcloud client, the index, the call log, settings.

Tools receive this object (closed over at registration) instead of reaching
for globals, so tests build one against the emulator and a temporary index,
and `serve` builds one from the configured account. Nothing here performs
I/O at construction except opening the index and the call log.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar, cast

from mcp_nextcloud.indexer.errors import IndexUnusable, index_unusable, is_storage_error
from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.indexer.jobs.pool import ExtractionPool
from mcp_nextcloud.indexer.remote.refresh import BackgroundSync
from mcp_nextcloud.indexer.store.location import index_path as locate
from mcp_nextcloud.nextcloud.client import NextcloudClient
from mcp_nextcloud.nextcloud.config import Account
from mcp_nextcloud.reader.document import Document
from mcp_nextcloud.server.telemetry import CallLog, default_telemetry_path, open_call_log
from mcp_nextcloud.environment import environ


_Value = TypeVar("_Value")

MB = 1024 * 1024
# The one write limit: files_write's cap on content (UTF-8 bytes); the HTTP transport's body limit derives
# from it (server/http_limits.py), so any content under the cap reaches the tool and gets its answer.
MAX_WRITE_BYTES = 5 * MB


@dataclass(frozen=True)
class Settings:
    """Caps and intervals; every one is overridable from the environment or the serve flags."""

    max_read_bytes: int = 10 * MB          # files_read refuses larger files without downloading them
    max_write_bytes: int = MAX_WRITE_BYTES  # files_write refuses larger contents
    fly_max_bytes: int = 2 * MB            # grep indexes a changed file on the fly up to this size...
    fly_max_files: int = 10                # ...and at most this many per call; the rest go to warnings
    freshness_interval_s: float = 5.0      # grep asks the server "what changed?" at most this often
    stale_after_s: float = 300.0           # grep warns that deleted files may be listed past this sync age
    sync_interval_s: float | None = None   # background sync period (serve), None = off
    # A best-effort call on a read path (grep's "what changed?", a folder check) waits at most this long,
    # with no retry: past it the answer comes from the index at once, with a warning.
    best_effort_s: float = 1.0
    # A time written without a zone, on an account with none set in Nextcloud, is read in this machine's zone:
    # the command line's (the person is at this machine); an agent's server refuses it with the fix.
    machine_zone: bool = False

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: Any) -> "Settings":
        """Settings from MCP_NEXTCLOUD_MAX_READ_MB (and friends), then explicit overrides."""
        env = dict(environ() if env is None else env)
        kw: dict[str, Any] = {}
        if env.get("MCP_NEXTCLOUD_MAX_READ_MB"):
            kw["max_read_bytes"] = int(float(env["MCP_NEXTCLOUD_MAX_READ_MB"]) * MB)
        if env.get("MCP_NEXTCLOUD_FRESHNESS_S"):
            kw["freshness_interval_s"] = float(env["MCP_NEXTCLOUD_FRESHNESS_S"])
        if env.get("MCP_NEXTCLOUD_BEST_EFFORT_S"):
            kw["best_effort_s"] = float(env["MCP_NEXTCLOUD_BEST_EFFORT_S"])
        kw.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**kw)


# The settings of the call being run, where one process runs calls for several callers (the index service:
# each serve's own MCP_NEXTCLOUD_MAX_READ_MB and friends); None: the context's own.
_CALL_SETTINGS: contextvars.ContextVar[Settings | None] = contextvars.ContextVar("call_settings", default=None)


@contextlib.contextmanager
def settings_of_call(settings: Settings) -> Iterator[None]:
    """Run the calls inside with `settings` as their caller's (ServerContext.call_settings)."""
    token = _CALL_SETTINGS.set(settings)
    try:
        yield
    finally:
        _CALL_SETTINGS.reset(token)


@dataclass
class ServerContext:
    """What every tool call needs. Thread-safe: sync tools run in worker threads."""

    account: Account | None                        # None: no account configured (tools say how to log in)
    index: Index | None                            # None: the mail server, which reads no index
    telemetry: CallLog | None = None
    settings: Settings = field(default_factory=Settings)
    client_factory: Callable[[], NextcloudClient] | None = None
    # Why the index could not be opened (damaged, full disk...): the file tools answer it, the others work.
    unusable: IndexUnusable | None = None
    _client: NextcloudClient | None = field(default=None, init=False, repr=False)
    _quick: NextcloudClient | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _cache: dict[str, tuple[float, Any]] = field(default_factory=dict, init=False, repr=False)
    # Recently read Documents by (fileId, etag): a warm files_read skips decompressing the cached text.
    docs: OrderedDict[tuple[Any, str], Document] = field(default_factory=OrderedDict, init=False, repr=False)
    background: BackgroundSync | None = field(default=None, init=False, repr=False)
    _extractor: ExtractionPool | None = field(default=None, init=False, repr=False)
    _last_fresh_check: float = field(default=float("-inf"), init=False, repr=False)  # never checked
    # What opening found and repaired (a damaged call log set aside...): for `serve` to print on stderr.
    notes: list[str] = field(default_factory=list, init=False)
    # What the last freshness check could not do (server.tools.files.freshness): repeated until a check succeeds.
    last_fresh_failure: Any = field(   # a server.tools.files.freshness.Freshness (that module builds on this one)
       default=None, init=False, repr=False)
    last_checked_at: float | None = field(default=None, init=False, repr=False)  # wall time of the last good check
    root_etag: str | None = field(default=None, init=False, repr=False)  # the account root's, at the last check

    def files_index(self) -> Index:
        """The index the file tools answer from: the main server's (the mail server's context has none)."""
        if self.index is None:
            if self.unusable is not None:
                self._open_fixed_index()
                return cast(Index, self.index)
            raise RuntimeError("this server has no index: the file tools belong to the main server")
        return self.index

    def _open_fixed_index(self) -> None:
        """Open the index that could not be used, once the person fixed it (moved aside: a new one is made);
        raises why it still cannot be used. Opened, it starts the background sync it could not before."""
        with self._lock:
            if self.index is None and self.unusable is not None:
                self.index, self.unusable = open_index(Path(self.unusable.where))
            if self.unusable is not None:
                raise self.unusable
        self.start_background_sync()

    def client(self) -> NextcloudClient:
        """The one Nextcloud client of this process, built on first use."""
        with self._lock:
            if self._client is None:
                self._client = self.make_client()
            return self._client

    @property
    def call_settings(self) -> Settings:
        """The caps of the call being run: its caller's where one process serves several (settings_of_call),
        else this context's own. The background sync and the quick client keep the context's own."""
        return _CALL_SETTINGS.get() or self.settings

    def make_client(self) -> NextcloudClient:
        """A new client: the factory's (tests, the demo) or one for the account (httpx pools are thread-safe)."""
        if self.client_factory is not None:
            return self.client_factory()
        return NextcloudClient(self.account)

    def extractor(self) -> ExtractionPool:
        """The capped extraction pool files_read uses, started on first use."""
        with self._lock:
            if self._extractor is None:
                self._extractor = ExtractionPool(min(2, os.cpu_count() or 1))
            return self._extractor

    def claim_fresh_check(self, interval_s: float) -> bool:
        """True for the one caller per `interval_s` that should ask the server what changed (grep freshness)."""
        now = time.monotonic()
        with self._lock:
            if now - self._last_fresh_check < interval_s:
                return False
            self._last_fresh_check = now
            return True

    def expire_fresh_check(self) -> None:
        """Make the next grep ask the server what changed, whenever the last check ran."""
        with self._lock:
            self._last_fresh_check = float("-inf")

    def quick_client(self) -> NextcloudClient:
        """A client for best-effort calls: one attempt, every timeout `settings.best_effort_s` (never retries).

        With a client factory (the CLI's tool commands, tests, the demo) it is the bounded twin of the
        factory's client: a client with the request deadline of the CLI (60 s, with retries) on the hot path
        made a hanging SEARCH stall files_grep for the whole deadline.
        """
        with self._lock:
            if self._quick is None:
                s = self.settings.best_effort_s
                base = self.client_factory() if self.client_factory is not None else None
                bounded = getattr(base, "bounded", None)
                if base is None:
                    self._quick = NextcloudClient(self.account, timeout=s, connect_timeout=s, total_timeout=s,
                                                  retries=0)
                else:  # a stand-in without transports of its own is used as is
                    self._quick = bounded(s) if callable(bounded) else base
            return self._quick

    def cached(self, key: str, ttl_s: float, compute: Callable[[], _Value]) -> _Value:
        """A value kept for ttl_s (whoami facts change rarely; asking Nextcloud each time costs a round trip)."""
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(key)
        if hit and now - hit[0] < ttl_s:
            return cast(_Value, hit[1])   # a key is only ever cached by one caller, with one type
        value = compute()   # outside the lock: a slow server must not block other tools
        with self._lock:
            self._cache[key] = (now, value)
        return value

    def cached_now(self, key: str) -> Any:
        """The value `cached` keeps under key, or None when none was computed."""
        with self._lock:
            hit = self._cache.get(key)
        return hit[1] if hit else None

    def remember_document(self, key: tuple[Any, str], doc: Document, max_chars: int = 5_000_000) -> None:
        """Keep `doc` in the in-memory LRU, evicting the oldest beyond max_chars of text and image bytes (the
        newest always stays)."""
        with self._lock:
            self.docs[key] = doc
            self.docs.move_to_end(key)
            total = sum(_weight(d) for d in self.docs.values())
            while len(self.docs) > 1 and total > max_chars:
                _, old = self.docs.popitem(last=False)
                total -= _weight(old)

    def forget_document(self, key: tuple[Any, str]) -> None:
        """Drop the Document kept for (fileId, etag): the etag now names other content."""
        with self._lock:
            self.docs.pop(key, None)

    def recall_document(self, key: tuple[Any, str]) -> Document | None:
        """The Document read before for (fileId, etag), or None."""
        with self._lock:
            doc = self.docs.get(key)
            if doc is not None:
                self.docs.move_to_end(key)
            return doc

    def start_background_sync(self, report: Callable[[str], None] | None = None) -> None:
        """Keep the index fresh every settings.sync_interval_s seconds (serve); a no-op when off. `report`: a
        service's log, told the first sync done and every round that did not succeed (BackgroundSync)."""
        if not self.settings.sync_interval_s:
            return
        index = self.files_index()   # before the lock: it may open an index fixed meanwhile (under the lock)
        with self._lock:
            if self.background is not None:
                return
            # The shared client: BackgroundSync does not close it (close_client=False).
            self.background = BackgroundSync(self.client, index, self.settings.sync_interval_s, report=report)
        self.background.start()

    def close(self) -> None:
        """Stop the background sync, then close the extraction pool, the clients, the index and the call log."""
        with self._lock:
            background, self.background = self.background, None
            extractor, self._extractor = self._extractor, None
        if background is not None:
            background.stop()
        for obj in (extractor, self._client, self._quick, self.index, self.telemetry):
            close = getattr(obj, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # closing is best effort: never mask the real outcome
                    pass
        self._client = self._quick = None


def open_context(account: Account | None, *, index_path: Path | str | None = None,
                 telemetry_path: Path | str | None = None, settings: Settings | None = None,
                 telemetry: bool = True) -> ServerContext:
    """A context for `account`: its index (default location unless given) and the call log."""
    # The same rule as `mcp-nextcloud index sync` and `grep`, so serve answers from what they built.
    where = locate(index_path)
    index, unusable = open_index(where)
    log, note = open_call_log(telemetry_path or default_telemetry_path())
    if not telemetry and log is not None:   # the index service logs the calls; a damaged log is still set
        log.close()                          # aside here, and said by the process a person started
        log = None
    ctx = ServerContext(account=account, index=index, telemetry=log, settings=settings or Settings.from_env(),
                        unusable=unusable)
    ctx.notes.extend(getattr(index, "notes", []))
    if unusable is not None:
        ctx.notes.append(unusable.line())
    if note:
        ctx.notes.append(note)
    return ctx


def open_index(where: Path, opener: Callable[[Path], Index] = Index.open) -> tuple[Index | None, IndexUnusable | None]:
    """The index at `where`, or why it cannot be used: a damaged index stops the file tools, not the server."""
    try:
        return opener(where), None
    except Exception as exc:   # apsw.Error or OSError: anything else is a bug, raised
        if not is_storage_error(exc):
            raise
        return None, index_unusable(where, exc)


def _weight(doc: Document) -> int:
    """What a kept Document costs the LRU: its text, and an image's bytes (a read hands those back too)."""
    return len(doc.text) + (len(doc.image.data) if doc.image is not None else 0)
