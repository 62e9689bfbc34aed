"""A CLI call's side of `mcp-nextcloud warm`: hand a grep or inspect call to the warm process, cheaply.

Every CLI call comes here first (server.cli.main), so this module imports os,
sys, stat and time, all loaded by the interpreter before our code runs, and
_socket when a call may be handed over: no argparse, json, pathlib, typing or
platformdirs (each costs more than the whole hand-over). When no warm process
answers, declines or breaks off, `forward` returns None and the call runs in
its own process as if this module did not exist: grep and inspect only read,
so running one again after a failed hand-over is safe.

Where the socket is. One per-user runtime folder ($XDG_RUNTIME_DIR/mcp-nextcloud,
else $TMPDIR or /tmp, /mcp-nextcloud-UID), mode 0700 and ours (checked on both
sides before use), holds one socket per index, named by a hash of what the call
names: the index's real path (--index, else $MCP_NEXTCLOUD_INDEX), or for a
call that names neither, "the platform's default index for this $HOME and
$XDG_DATA_HOME" (the values the default follows on Linux and macOS), so that
neither side needs platformdirs to find the other. The name is short whatever
the index path (a Unix socket path is limited to ~100 bytes). The name only
routes: the warm process parses the call's arguments with its own parser and
declines a call whose index is not its own (server/cli/warm.py).

Wire format (version in MAGIC). Both ways a list of netstrings
(`<length>:<bytes>,`, text as UTF-8 with lone surrogates passed through, so
arguments and output arrive exactly as they were). Request: MAGIC, the
caller's working folder, its $MCP_NEXTCLOUD_INDEX, terminal width, $HOME and
$XDG_DATA_HOME (UNSET when not set), then the arguments; the caller then closes its sending
side. Answer: TAKEN as soon as the warm process takes the call (before reading
it), then MAGIC, "ok" or "declined", the exit code, stdout, stderr.
"""
import os
import stat
import sys
import time

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from collections.abc import Mapping

    import _socket

FORWARDED = ("grep", "inspect")    # read-only: running one again in-process after a failed hand-over is safe
SWITCH = "MCP_NEXTCLOUD_WARM"      # "0": never hand a call over
INDEX_ENV = "MCP_NEXTCLOUD_INDEX"
# What the platform's default index follows on Linux and macOS (indexer/store/location.py platform_index_path).
DEFAULT_DECIDERS = ("HOME", "XDG_DATA_HOME")
# The environment a call sends: what the warm process sets for the call (the index variable, and the width
# argparse wraps help and usage to), then what it checks against its own.
APPLIED_ENV = (INDEX_ENV, "COLUMNS")
SENT_ENV = (*APPLIED_ENV, *DEFAULT_DECIDERS)
UNSET = "\0"                       # a variable that is not set: no environment value can hold a NUL
MAGIC = "mcp-nextcloud-warm/2"
OK, DECLINED = "ok", "declined"
# A warm process that has not taken the call within ACCEPT_SECONDS is hung, or busy with other calls: the call
# runs on its own (that costs a fraction of it). Once taken, a long grep is still an answer; a hung one is not.
ACCEPT_SECONDS = 1.0
ANSWER_SECONDS = 300.0
TAKEN = b"+"                       # the warm process's first byte: it took the call
MAX_REQUEST = 1 << 20
PRIVATE_MODE = 0o700


# -- where the socket is (both sides) --------------------------------------------------------
def runtime_folder() -> str:
    """This user's folder for warm sockets (it may not exist yet)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "mcp-nextcloud")
    return os.path.join(os.environ.get("TMPDIR") or "/tmp", f"mcp-nextcloud-{os.getuid()}")


def is_private_folder(path: str) -> bool:
    """A real folder (not a link), owned by this user, that no group or other user can enter."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def index_key(path: str) -> str:
    """The routing key of an index named by a path (relative to the working folder, `~` expanded)."""
    return "index:" + os.path.realpath(os.path.expanduser(path))


def default_key(env: "Mapping[str, str]") -> str:
    """The routing key of the platform's default index as `env` decides it."""
    return "default:" + "\0".join(env.get(name, UNSET) for name in DEFAULT_DECIDERS)


def socket_path(key: str) -> str:
    """The socket of a routing key, in this user's runtime folder."""
    return os.path.join(runtime_folder(), socket_name(key))


def socket_name(key: str) -> str:
    """FNV-1a (64 bits) of the key: a short name, whatever the index path; the warm process checks every call.

    A hash only for a name: a collision could only make a call be declined, never answered wrongly, and
    only this user can create sockets in the folder. hashlib would cost ~3 ms of imports per call."""
    h = 0xCBF29CE484222325
    for byte in key.encode("utf-8", "surrogatepass"):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}.sock"


def call_key(argv: list[str]) -> str:
    """The routing key of a call: its --index, else $MCP_NEXTCLOUD_INDEX, else the default (location.py's rule).

    A scan, not a parse (argparse costs more than the hand-over): an abbreviated `--ind X` is missed, and
    the warm process, which parses, then declines the call."""
    explicit = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--index" and i + 1 < len(argv):
            explicit = argv[i + 1]
        elif arg.startswith("--index="):
            explicit = arg.split("=", 1)[1]
    named = explicit or os.environ.get(INDEX_ENV)
    return index_key(named) if named else default_key(os.environ)


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


def peer_is_this_user(sock: "_socket.socket") -> bool:
    """The other end of a connected Unix socket runs as this user (SO_PEERCRED: pid, uid, gid).

    Where the platform has no SO_PEERCRED, the private folder is the guard."""
    import _socket

    cred = getattr(_socket, "SO_PEERCRED", None)
    if cred is None:
        return True
    raw = sock.getsockopt(_socket.SOL_SOCKET, cred, 12)
    return int.from_bytes(raw[4:8], sys.byteorder, signed=True) == os.getuid()


# -- the caller's side -----------------------------------------------------------------------
def forward(argv: list[str]) -> int | None:
    """Run argv in the warm process if one answers for its index: the exit code, or None to run it here."""
    if not argv or argv[0] not in FORWARDED or os.environ.get(SWITCH) == "0":
        return None
    try:
        path = socket_path(call_key(argv))
        if not is_private_folder(os.path.dirname(path)):
            return None                  # no warm process (the common case: one stat), or a folder not ours
        env = {**{k: os.environ.get(k, UNSET) for k in SENT_ENV}, "COLUMNS": str(terminal_columns())}
        request = pack([MAGIC, os.getcwd(), *(env[k] for k in SENT_ENV), *argv])
        answer = _exchange(path, request)
    except (OSError, ValueError, ImportError, AttributeError):
        return None                      # no socket, a stale one, a warm process that died or broke off
    except KeyboardInterrupt:            # Ctrl-C while waiting: as a call running here ends (server/cli/root.py)
        print("interrupted", file=sys.stderr)
        return 130
    if len(answer) != 5 or answer[0] != MAGIC or answer[1] != OK or not answer[2].lstrip("-").isdigit():
        return None                      # declined (another index...) or another version
    return _print(int(answer[2]), answer[3], answer[4])


def terminal_columns() -> int:
    """How many columns output wraps to in this process: shutil.get_terminal_size's rule ($COLUMNS when a
    positive number, else the width of the terminal stdout writes to, else 80) without importing shutil
    (with bz2 and lzma, ~2 ms). Here because every call imports this module first: argparse's formatter
    uses it too (server/cli/parser.py), and the warm process runs a call with the caller's in $COLUMNS."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns   # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _exchange(path: str, request: bytes) -> list[str]:
    """Send a request to the socket at path; the answer's fields."""
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(ACCEPT_SECONDS)
        sock.connect(path)
        if not peer_is_this_user(sock):
            raise ValueError("the socket's process runs as another user")
        sock.sendall(request)
        sock.shutdown(_socket.SHUT_WR)
        if sock.recv(1) != TAKEN:
            raise ValueError("the warm process closed the connection")
        deadline = time.monotonic() + ANSWER_SECONDS
        chunks = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the warm process did not answer in time")
            sock.settimeout(left)
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        sock.close()
    return unpack(b"".join(chunks))


def _print(rc: int, out: str, err: str) -> int:
    """Write what the warm process's call printed, as the call would have in this process."""
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
    except BrokenPipeError:
        # `grep x | head -1`: as in-process (server/cli/root.py), the reader going away is no error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    sys.stderr.write(err)
    return rc
