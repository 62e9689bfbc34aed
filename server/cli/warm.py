"""`mcp-nextcloud warm`: a process that answers CLI `grep` and `inspect` calls with everything loaded.

An agent that shells out pays a whole process per call: the interpreter, our
imports, pdfium. While `warm` runs, those commands send their arguments over a
Unix socket next to the index (`<index>.sock`, mode 0600, in the private data
folder by default) and print what the warm process answers; when none answers
(not started, a stale socket left by a killed one, another user's socket) they
run in their own process as before, so the result never depends on it. Both
ends check that the other runs as the same user. Calls are served one at a
time, each with the caller's working folder and $MCP_NEXTCLOUD_INDEX.
MCP_NEXTCLOUD_WARM=0 makes a call run on its own even when a warm process runs.
"""
from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from server.cli.parser import Subcommands

FORWARDED = ("grep", "inspect")   # read-only: running one again in-process after a failed hand-over is safe
PROTOCOL = 1
MAX_REQUEST = 1 << 20
ENV_PASSED = ("MCP_NEXTCLOUD_INDEX",)
SWITCH = "MCP_NEXTCLOUD_WARM"   # "0": never hand a call over
ANSWER_SECONDS = 300.0          # then the call runs on its own (grep and inspect are read-only: safe to repeat)


def socket_for(index: Path) -> Path:
    return index.with_name(index.name + ".sock")


def _index_for(argv: list[str]) -> Path:
    """The index a call uses: its --index, else $MCP_NEXTCLOUD_INDEX or the default (the rule of location.py)."""
    from indexer.store.location import index_path

    explicit = None
    for i, arg in enumerate(argv):
        if arg == "--index" and i + 1 < len(argv):
            explicit = argv[i + 1]
        elif arg.startswith("--index="):
            explicit = arg.split("=", 1)[1]
    return index_path(explicit).absolute()


def _same_user(sock: Any) -> bool:
    """The peer of a connected Unix socket runs as this user (SO_PEERCRED; trusted where unavailable)."""
    import socket
    import struct

    cred = getattr(socket, "SO_PEERCRED", None)
    if cred is None:
        return True
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, cred, struct.calcsize("3i")))
    return uid == os.getuid()


# -- the caller's side ------------------------------------------------------
def forward(argv: list[str]) -> int | None:
    """Run argv in the warm process if one answers for its index: the exit code, or None to run it here."""
    path = socket_for(_index_for(argv))
    try:
        st = os.stat(path)
    except OSError:
        return None                      # no warm process: the common case costs one stat
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
        return None
    import socket

    request = {"protocol": PROTOCOL, "argv": argv, "cwd": os.getcwd(),
               "env": {k: os.environ[k] for k in ENV_PASSED if k in os.environ}}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(2.0)
            sock.connect(str(path))
            if not _same_user(sock):
                return None
            sock.sendall(json.dumps(request).encode() + b"\n")
            sock.settimeout(ANSWER_SECONDS)   # a long grep is still an answer; a hung process is not
            answer = json.loads(sock.makefile("rb").read())
    except (OSError, ValueError):
        return None                      # stale socket, the warm process died or is another version
    if answer.get("protocol") != PROTOCOL:
        return None
    sys.stdout.write(answer["out"])
    sys.stderr.write(answer["err"])
    return int(answer["rc"])


# -- the warm process -------------------------------------------------------
def _run(argv: list[str], cwd: str, env: dict[str, str], command: Callable[[list[str]], int]) -> dict[str, Any]:
    """One call, as its own process would have run it: its folder, its index variable, its output."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    saved_cwd, saved_env = os.getcwd(), {k: os.environ.get(k) for k in ENV_PASSED}
    try:
        os.chdir(cwd)
        for k in ENV_PASSED:
            if k in env:
                os.environ[k] = env[k]
            else:
                os.environ.pop(k, None)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = command(argv)
            except SystemExit as exc:    # argparse: --help, a usage error
                rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        os.chdir(saved_cwd)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return {"protocol": PROTOCOL, "rc": rc, "out": out.getvalue(), "err": err.getvalue()}


def _serve_one(conn: Any, command: Callable[[list[str]], int]) -> str:
    """Answer one connection; a line for the log."""
    import time

    if not _same_user(conn):
        return "refused a caller of another user"
    data = conn.makefile("rb").readline(MAX_REQUEST)
    try:
        req = json.loads(data)
        argv, cwd, env = list(req["argv"]), str(req["cwd"]), dict(req.get("env") or {})
    except (ValueError, KeyError, TypeError):
        return "ignored a malformed request"
    if req.get("protocol") != PROTOCOL or not argv or argv[0] not in FORWARDED:
        conn.sendall(json.dumps({"protocol": PROTOCOL if req.get("protocol") == PROTOCOL else None,
                                 "rc": 2, "out": "", "err": "this warm process serves grep and inspect only\n"})
                     .encode())
        return f"declined {argv[:1]}"
    t0 = time.perf_counter()
    answer = _run(argv, cwd, env, command)
    conn.sendall(json.dumps(answer).encode())
    return f"{argv[0]}: exit {answer['rc']} in {(time.perf_counter() - t0) * 1000:.1f} ms"


def _bind(path: Path) -> Any:
    """A listening socket at path, mode 0600; a stale one is replaced, a live one is an error."""
    import socket

    if path.exists():
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()                # nobody listens: left by a process that was killed
        else:
            raise RuntimeError(f"a warm process already answers at {path}; stop it first (Ctrl-C or kill)")
        finally:
            probe.close()
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)                # born 0600: no moment where another user could connect
    try:
        srv.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    srv.listen(16)
    srv.settimeout(0.5)
    return srv


def serve(index: Path, command: Callable[[list[str]], int], stop: Any, log: Callable[[str], None]) -> None:
    """Answer calls at index's socket until stop is set; the socket is removed on the way out."""
    # Loaded once here, so that no call pays for them.
    import indexer.search.grep  # noqa: F401
    import pypdfium2  # noqa: F401
    import reader.extract  # noqa: F401

    path = socket_for(index)
    index.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    srv = _bind(path)
    log(f"warm: answering grep and inspect for {index} at {path} (Ctrl-C to stop)")
    try:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(30)
                try:
                    log(_serve_one(conn, command))
                except OSError as exc:
                    log(f"a caller went away ({exc})")
    finally:
        srv.close()
        try:
            path.unlink()
        except OSError:
            pass


def _cmd_warm(args: argparse.Namespace) -> int:
    import signal
    import threading

    from server.cli import run_command

    index = Path(args.index).expanduser().absolute() if args.index else _index_for([])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        serve(index, run_command, stop, lambda line: print(line, file=sys.stderr, flush=True))
    except KeyboardInterrupt:
        pass
    except RuntimeError as exc:
        print(f"mcp-nextcloud warm: {exc}", file=sys.stderr)
        return 2
    return 0


def register(subparsers: Subcommands) -> None:
    p = subparsers.add_parser(
        "warm", help="keep a process ready that answers grep and inspect calls faster",
        description="Answer `grep` and `inspect` calls from a process that has the index and the reader loaded, "
                    "over a socket next to the index (mode 0600). Without it the calls run on their own.",
        epilog="Example: mcp-nextcloud warm --index ~/notes.db")
    p.add_argument("--index", metavar="PATH", default=None,
                   help="index whose calls to answer (default: $MCP_NEXTCLOUD_INDEX, else the platform data dir)")
    p.set_defaults(func=_cmd_warm)
