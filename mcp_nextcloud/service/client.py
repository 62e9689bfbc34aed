"""A CLI call's side of the index service: hand the call to the per-user, per-index service, cheaply.

Every CLI call comes here first (cli.main). The service (service/daemon.py)
owns the index, the Nextcloud client and a warm reader; it runs the call with
this process's arguments, working folder, terminal width and environment (they
travel with the request: the service changes nothing of its own process for
it), streams its stdout/stderr back, asks for stdin when the command reads it,
and ends with the exit code. This module imports only what the interpreter has
loaded already (os, sys, stat, time) plus _socket, _sha256 and environment.py (the
one reader of the process's variables: contextvars, ~1 ms), so a call pays for the
hand-over alone; the service is started here when none answers (subprocess and
fcntl are imported then only).

Where. One private runtime folder per user ($XDG_RUNTIME_DIR/mcp-nextcloud,
else /run/user/UID/mcp-nextcloud when that is the user's, else
/tmp/mcp-nextcloud-UID; 0700, ours, checked on both sides), one socket (0600)
per service. One service per user and index file: the socket's name is a
SHA-256 of the user, the code's folder and the index's real path (--index,
else $MCP_NEXTCLOUD_INDEX, else the default for $HOME and $XDG_DATA_HOME), so
a desktop host, a shell and a script with other variables share one service
and one background sync. Credentials and settings are the caller's, sent
with each call; the service refuses a call for another account than its
index's.

Commands that need no index (help, --help, manifest, an unknown command) run
here and start nothing. MCP_NEXTCLOUD_SERVICE=0 runs every call in its own
process, with the same output.
"""
import os
import stat
import sys
import time

from mcp_nextcloud.environment import environ, process
from mcp_nextcloud.environment import home as user_home

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from collections.abc import Mapping

    import _socket

SWITCH = "MCP_NEXTCLOUD_SERVICE"        # "0": every call runs in its own process
IDLE_ENV = "MCP_NEXTCLOUD_SERVICE_IDLE_S"
INDEX_ENV = "MCP_NEXTCLOUD_INDEX"
PROTOCOL = "mcp-nextcloud-service/2"
# Commands the calling process runs itself: serve is a client of its own (service/tools.py), the
# others hold a terminal, a browser flow or a signal handler for as long as they run.
LOCAL = ("serve", "demo", "login", "service", "connect")
LOCAL_SUBCOMMANDS = (("index", "watch"),)
# Read-only: when the service went away before answering, running one again is safe.
READ_ONLY = ("grep", "inspect", "help", "manifest", "report")
# Commands that run here without a service: they need no index (cli/root.py COMMAND_NAMES is checked against
# the parser's by tests/service/test_client_rules.py). An unknown command is a usage error: here too.
NO_INDEX = ("help", "manifest", "version", "-h", "--help", "--version")
COMMANDS = ("inspect", "index", "grep", "jobs", "login", "connect", "serve", "report", "demo", "token", "whoami",
            "files", "deck", "calendar", "contacts", "meet", "talk", "tasks", "mail", "service")
UNSET = "\0"
PRIVATE_MODE = 0o700
START_SECONDS = 15.0    # a service that does not listen within this is broken: the call runs here
TAKEN = b"+"            # the service's first byte: it took the call
# Frames from the service: a tag byte, then a netstring. o/e: output, i: send stdin, x: the exit code (last),
# s: stale code (it exits), d: declined (run the call here), r: the command is a read (asked again of a new
# service when this one ends before answering).
OUT, ERR, STDIN, EXIT, STALE, DECLINED, REPEATABLE = b"o", b"e", b"i", b"x", b"s", b"d", b"r"


class ServiceGone(Exception):
    """The service closed the connection before the call's exit code."""


# -- where the socket is (both sides) --------------------------------------------------------
def runtime_folder() -> str:
    """This user's folder for service sockets (it may not exist yet)."""
    runtime = environ().get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "mcp-nextcloud")
    # What XDG_RUNTIME_DIR names on a systemd login: a host that does not pass it finds the shell's service.
    session = f"/run/user/{os.getuid()}"
    if is_private_folder(session):
        return os.path.join(session, "mcp-nextcloud")
    return f"/tmp/mcp-nextcloud-{os.getuid()}"


def is_private_folder(path: str) -> bool:
    """A real folder (not a link), owned by this user, that no group or other user can enter."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def index_named(argv: list[str], env: "Mapping[str, str]", cwd: str = "") -> str:
    """The real path of the index a call names: --index, else $MCP_NEXTCLOUD_INDEX, else the default for env.

    A scan, not a parse (argparse costs more than the hand-over): an abbreviated `--ind X` goes to the
    default index's service, which parses it and runs it as its own process would."""
    explicit = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--index" and i + 1 < len(argv):
            explicit = argv[i + 1]
        elif arg.startswith("--index="):
            explicit = arg.split("=", 1)[1]
    named = explicit or env.get(INDEX_ENV) or default_index(env)
    home = env.get("HOME") or str(user_home())
    if named == "~" or named.startswith("~/"):
        named = home + named[1:]
    return os.path.realpath(os.path.join(cwd or os.getcwd(), named))


def default_index(env: "Mapping[str, str]") -> str:
    """The default index file for env: indexer/store/location.py's rule (tests/service check they agree)."""
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        base = (env.get("XDG_DATA_HOME") or "").strip() or os.path.join(env.get("HOME") or "~", ".local/share")
        return os.path.join(base, "mcp-nextcloud", "local.db")
    from mcp_nextcloud.indexer.store.location import platform_index_path   # other systems: platformdirs

    return str(platform_index_path())


def fingerprint(index: str) -> str:
    """The service key's text: who it serves (this user, this code) and the index file (never stored)."""
    return "\0".join([PROTOCOL, str(os.getuid()), sys.executable, code_root(), index])


def service_name(argv: list[str], env: "Mapping[str, str]", cwd: str = "") -> str:
    """The socket's file name for a call: a hash, so no path length reaches the socket's name."""
    try:
        from _sha256 import sha256   # C, already in the interpreter's library: hashlib costs ~3 ms more
    except ImportError:  # pragma: no cover - other builds
        from hashlib import sha256
    text = fingerprint(index_named(argv, env, cwd))
    digest: str = sha256(text.encode("utf-8", "surrogatepass")).hexdigest()   # _sha256 has no stub
    return digest[:32]


def env_field(env: "Mapping[str, str]") -> str:
    """The caller's variables that travel with a call (mcp_nextcloud.environment decides which): one field of
    packed KEY=VALUE fields. The service's code reads them through that module, never its own process's."""
    from mcp_nextcloud.environment import carried

    return pack([f"{k}={v}" for k, v in env.items() if carried(k)]).decode("utf-8", "surrogatepass")


def socket_path(name: str) -> str:
    return os.path.join(runtime_folder(), name + ".sock")


def code_root() -> str:
    """The folder that holds the mcp_nextcloud package (a checkout, or site-packages)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# -- the wire format (both sides) ------------------------------------------------------------
def pack(fields: list[str]) -> bytes:
    out = []
    for field in fields:
        data = field.encode("utf-8", "surrogatepass")
        out.append(b"%d:%s," % (len(data), data))
    return b"".join(out)


def unpack(data: bytes) -> list[str]:
    """The fields of a message; ValueError when it is not a whole, well-formed one."""
    fields, i = [], 0
    while i < len(data):
        colon = data.index(b":", i, i + 12)
        size = data[i:colon]
        if not size.isdigit():
            raise ValueError("malformed length")
        end = colon + 1 + int(size)
        if data[end:end + 1] != b",":
            raise ValueError("truncated field")
        fields.append(data[colon + 1:end].decode("utf-8", "surrogatepass"))
        i = end + 1
    return fields


def netstring(data: bytes) -> bytes:
    return b"%d:%s," % (len(data), data)


class Frames:
    """Reads a socket's tagged netstrings (tag byte, `<length>:<bytes>,`)."""

    def __init__(self, sock: "_socket.socket") -> None:
        self.sock, self.buf = sock, b""

    def _fill(self, need: int) -> None:
        while len(self.buf) < need:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ServiceGone("the service closed the connection")
            self.buf += chunk

    def read(self) -> tuple[bytes, bytes]:
        """The next (tag, payload)."""
        while True:
            colon = self.buf.find(b":", 1, 14)
            if colon > 0:
                break
            if len(self.buf) >= 14:
                raise ServiceGone("malformed frame")
            self._fill(len(self.buf) + 1)
        tag, size = self.buf[:1], int(self.buf[1:colon])
        self._fill(colon + 1 + size + 1)
        payload = self.buf[colon + 1:colon + 1 + size]
        self.buf = self.buf[colon + 2 + size:]
        return tag, payload


def peer_is_this_user(sock: "_socket.socket") -> bool:
    """The other end of a connected Unix socket runs as this user (SO_PEERCRED: pid, uid, gid).

    Where the platform has no SO_PEERCRED, the private folder is the guard."""
    import _socket

    cred = getattr(_socket, "SO_PEERCRED", None)
    if cred is None:
        return True
    raw = sock.getsockopt(_socket.SOL_SOCKET, cred, 12)
    return int.from_bytes(raw[4:8], sys.byteorder, signed=True) == os.getuid()


# -- finding or starting the service ---------------------------------------------------------
def connect(name: str, *, start: bool = True) -> "_socket.socket":
    """A connection to the service `name`, started first when none listens; OSError when it cannot be."""
    path = socket_path(name)
    try:
        return _connect(path)
    except OSError:
        if not start:
            raise
    _start(name)
    return _connect(path)


def _connect(path: str) -> "_socket.socket":
    import _socket

    if not is_private_folder(os.path.dirname(path)):
        raise FileNotFoundError(path)
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(5.0)
        sock.connect(path)
        if not peer_is_this_user(sock):
            raise PermissionError("the socket's process runs as another user")
    except BaseException:
        sock.close()
        raise
    return sock


def make_private_folder() -> str:
    """The runtime folder, created 0700; one that is not this user's own private folder is refused."""
    folder = runtime_folder()
    try:
        os.mkdir(folder, PRIVATE_MODE)
    except FileExistsError:
        pass
    if not is_private_folder(folder):
        raise PermissionError(f"{folder} is not a private folder of this user (a link, another owner, or open "
                              "to others): remove it, or set XDG_RUNTIME_DIR or TMPDIR to a folder of yours")
    return folder


def _start(name: str) -> None:
    """Start the service `name` (one starter at a time, under a lock) and wait until it listens."""
    import fcntl
    import subprocess

    folder = make_private_folder()
    path = socket_path(name)
    lock = os.open(os.path.join(folder, name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            _connect(path).close()
            return                       # another caller started it meanwhile
        except OSError:
            pass
        log = os.open(os.path.join(folder, name + ".log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            code = (f"import sys; sys.path.insert(0, {code_root()!r}); "
                    "from mcp_nextcloud.cli.in_service import main; sys.exit(main(sys.argv[1:]))")
            proc = subprocess.Popen([sys.executable, "-c", code, path], cwd="/", stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=log, start_new_session=True, close_fds=True)
        finally:
            os.close(log)
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            try:
                _connect(path).close()
                return
            except OSError:
                if proc.poll() is not None:
                    raise OSError(f"the service exited at once (code {proc.returncode}); its log: "
                                  f"{os.path.join(folder, name + '.log')}") from None
                time.sleep(0.005)
        raise TimeoutError("the service did not start listening in time")
    finally:
        os.close(lock)


# -- a CLI call ------------------------------------------------------------------------------
def forwarded(argv: list[str]) -> bool:
    """Whether the service runs this call (else this process does)."""
    if process().get(SWITCH) == "0" or not argv:
        return False
    if argv[0] in LOCAL or argv[0] in NO_INDEX or argv[0] not in COMMANDS:
        return False
    options = argv[:argv.index("--")] if "--" in argv else argv
    if "-h" in options or "--help" in options:
        return False
    return not any(tuple(argv[:len(pair)]) == pair for pair in LOCAL_SUBCOMMANDS)


def forward(argv: list[str]) -> int | None:
    """Run argv in the service: its exit code, or None to run it in this process (no service, busy, declined)."""
    if not forwarded(argv):
        return None
    cwd = os.getcwd()
    name = service_name(argv, process(), cwd)
    request = netstring(pack([PROTOCOL, "cli", env_field(process()), cwd, str(terminal_columns()),
                              _ttys(), *argv]))
    for _attempt in range(3):
        try:
            sock = connect(name)
        except (OSError, ValueError):
            return None                  # no runtime folder of ours, cannot start one: run here
        try:
            return _converse(sock, request, argv)
        except _Stale:
            continue                     # it was older code and has exited, or it ended during a read: again
        except _RunHere:
            return None
        except KeyboardInterrupt:        # Ctrl-C while waiting: as a call running here ends (cli/root.py)
            print("interrupted", file=sys.stderr)
            return 130
        finally:
            sock.close()
    return None


class _Stale(Exception):
    pass


class _RunHere(Exception):
    pass


def _ttys() -> str:
    flags = ""
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        try:
            flags += "1" if stream is not None and stream.isatty() else "0"
        except (ValueError, OSError):
            flags += "0"
    return flags


def _converse(sock: "_socket.socket", request: bytes, argv: list[str]) -> int:
    """Send the call and relay the service's frames until its exit code."""
    sock.settimeout(None)
    try:
        sock.sendall(request)
    except OSError:
        raise _Stale() from None     # it closed as we connected: nothing ran
    frames = Frames(sock)
    printed = repeatable = False
    try:
        taken = sock.recv(1)
    except ConnectionError:
        taken = b""
    if taken != TAKEN:   # it was exiting (idle, stopped) as we connected: nothing ran, start a new one
        raise _Stale()
    try:
        while True:
            tag, payload = frames.read()
            if tag == EXIT:
                return int(payload)
            if tag in (OUT, ERR):
                printed = True
                if not _write(sys.stdout if tag == OUT else sys.stderr, payload):
                    return 0             # the reader went away: hanging up ends the command there too
            elif tag == STDIN:
                data = sys.stdin.buffer.read() if sys.stdin is not None else b""
                sock.sendall(netstring(data))
            elif tag == REPEATABLE:
                repeatable = True
            elif tag == STALE:
                raise _Stale()
            elif tag == DECLINED:
                raise _RunHere()
    except (ServiceGone, ConnectionError):
        if not printed and (repeatable or (argv and argv[0] in READ_ONLY)):
            raise _Stale() from None     # a read: asking a new service again is safe
        sys.stderr.write("mcp-nextcloud: the index service ended during this call (it was stopped or killed); "
                         "the outcome is unknown: check the state (a read) before repeating the call\n")
        return 1


def _write(stream: object, data: bytes) -> bool:
    """Write what the command printed; False when the reader of our output went away."""
    try:
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            stream.flush()               # type: ignore[attr-defined]
            buffer.write(data)
            buffer.flush()
        else:
            stream.write(data.decode("utf-8", "surrogateescape"))  # type: ignore[attr-defined]
            stream.flush()               # type: ignore[attr-defined]
    except BrokenPipeError:
        # `grep x | head -1`: as in-process (cli/root.py), the reader going away is no error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return False
    return True


def terminal_columns() -> int:
    """How many columns output wraps to in this process: shutil.get_terminal_size's rule ($COLUMNS when a
    positive number, else the width of the terminal stdout writes to, else 80) without importing shutil
    (with bz2 and lzma, ~2 ms). argparse's formatter uses it too (cli/parser.py), and the service runs
    a call with the caller's in $COLUMNS."""
    try:
        columns = int(process().get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns   # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80
