"""`mcp-nextcloud warm`: a process that answers CLI `grep` and `inspect` calls with everything loaded.

An agent that shells out pays a whole process per call: the interpreter, our
imports, pdfium. While `warm` runs, those calls send their arguments over a
Unix socket in a private per-user folder (server/cli/warm_client.py: where,
the wire format, the caller's side) and print what the warm process answers;
when none answers they run in their own process as before, so the result
never depends on it.

What the warm process keeps between calls: the parsers of grep and inspect,
and its index open (reopened when the file was replaced, e.g. by `index
reset`; made private again each call, as opening it does). It serves one
index: its own (--index, else $MCP_NEXTCLOUD_INDEX, else the platform's
default, for which it also answers calls that name no index). It parses each
call with the caller's working folder, $MCP_NEXTCLOUD_INDEX and terminal
width, and declines a call whose index is not its own or whose $HOME or
$XDG_DATA_HOME differs from its own (the caller then runs it itself). Both ends check that the other runs
as the same user. Calls are served one at a time, by this one thread (an
extraction forks this process: no other thread may hold a lock then).
MCP_NEXTCLOUD_WARM=0 makes a call run on its own even when a warm process runs.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from server.cli.warm_client import (APPLIED_ENV, DECLINED, DEFAULT_DECIDERS, FORWARDED, INDEX_ENV, MAGIC,
                                    MAX_REQUEST, OK, PRIVATE_MODE, SENT_ENV, SWITCH, UNSET, default_key,
                                    index_key, is_private_folder, pack, peer_is_this_user, runtime_folder,
                                    socket_path, TAKEN, unpack)

if TYPE_CHECKING:
    from indexer.index import Index
    from server.cli.parser import RootParser, Subcommands

__all__ = ["SWITCH", "KeptIndex", "WarmCalls", "serve"]

SEND_SECONDS = 30.0    # a caller that neither sends its request nor reads its answer is dropped


class KeptIndex:
    """The warm process's index, open across calls while its file is the same one (server/cli/index.py _open).

    "The same one": the file at the path has the inode of the one opened. A descriptor of our own keeps that
    inode allocated, so a new file there (`index reset`, then `index add`) cannot get its number back."""

    def __init__(self) -> None:
        self._index: Index | None = None
        self._fd: int | None = None

    def open(self, path: Path) -> Index:
        """The open index at path, opened again when the file there is another one; its notes are this call's."""
        from indexer.store.filemodes import secure_database
        from indexer.index import Index

        st = os.stat(path)
        if self._index is not None and self._fd is not None and _same_file(st, os.fstat(self._fd)):
            self._index.notes = secure_database(path)   # what opening it in its own process would repair
            return self._index
        self.close()
        fd = os.open(path, os.O_RDONLY)  # first: a file replaced after this is reopened by the next call
        try:
            index = Index.open(path.absolute())          # absolute: later calls come from other folders
        except BaseException:
            os.close(fd)
            raise
        self._index, self._fd = index, fd
        return index

    def close(self) -> None:
        # The index first: closing a descriptor of a database file drops this process's SQLite locks on it.
        if self._index is not None:
            self._index.close()
        if self._fd is not None:
            os.close(self._fd)
        self._index, self._fd = None, None


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


class WarmCalls:
    """Answers requests for one index: the parsers and the index kept, each call checked and run."""

    def __init__(self, index: Path) -> None:
        from indexer.store.location import platform_index_path

        self.index = os.path.realpath(index)
        self.key = index_key(self.index)
        self.deciders = [os.environ.get(k, UNSET) for k in DEFAULT_DECIDERS]
        self.is_default = self.index == os.path.realpath(platform_index_path())
        self.kept = KeptIndex()
        self._parsers: dict[str, RootParser] = {}

    def keys(self) -> list[str]:
        """The routing keys this process answers: its index, and the default index when it is that."""
        return [self.key] + ([default_key(os.environ)] if self.is_default else [])

    def parser(self, command: str) -> RootParser:
        """The parser of a command, built once: it is the same for every call."""
        from server.cli.root import build_parser

        if command not in self._parsers:
            self._parsers[command] = build_parser(command)
        return self._parsers[command]

    def answer(self, request: bytes) -> tuple[list[str], str]:
        """The answer's fields for a request, and a line for the log."""
        import time

        try:
            fields = unpack(request)
        except ValueError:
            fields = []
        header = 1 + 1 + len(SENT_ENV)   # MAGIC, working folder, the environment sent
        if len(fields) <= header or fields[0] != MAGIC:
            return [MAGIC, DECLINED, "2", "", "malformed request or another version\n"], "declined a malformed request"
        cwd, env, argv = fields[1], dict(zip(SENT_ENV, fields[2:header], strict=True)), fields[header:]
        if argv[0] not in FORWARDED:
            return [MAGIC, DECLINED, "2", "", "this warm process serves grep and inspect only\n"], \
                f"declined {argv[0]!r}: not grep or inspect"
        if [env[k] for k in DEFAULT_DECIDERS] != self.deciders:
            return [MAGIC, DECLINED, "2", "", ""], f"declined {argv[0]}: another $HOME or $XDG_DATA_HOME"
        t0 = time.perf_counter()
        declined, rc, out, err = self._call(argv, cwd, env)
        if declined:
            return [MAGIC, DECLINED, "2", "", ""], f"declined {argv[0]}: {declined}"
        return [MAGIC, OK, str(rc), out, err], f"{argv[0]}: exit {rc} in {(time.perf_counter() - t0) * 1000:.1f} ms"

    def _call(self, argv: list[str], cwd: str, env: dict[str, str]) -> tuple[str | None, int, str, str]:
        """Run one call as its own process would: its folder, its index variable, its output.

        (reason declined or None, exit code, stdout, stderr)."""
        import contextlib
        import io

        from server.cli.root import parse, run_parsed

        out, err = io.StringIO(), io.StringIO()
        saved_env = {k: os.environ.get(k, UNSET) for k in APPLIED_ENV}
        try:
            os.chdir(cwd)
        except OSError as exc:               # the caller's folder is gone, or not ours to enter
            return f"cannot work in the caller's folder ({exc.strerror})", 2, "", ""
        _set_env({k: env[k] for k in APPLIED_ENV})
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                parser = self.parser(argv[0])
                args = parse(parser, argv)
                declined = self._other_index(args)
                if declined:
                    return declined, 2, "", ""
                args.kept_index = self.kept
                rc = run_parsed(parser, args)
        except SystemExit as exc:            # argparse: --help, a usage error
            rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        except Exception as exc:             # a bug: the caller runs the call itself and shows it; we go on
            return f"failed ({type(exc).__name__}: {exc})", 2, "", ""
        finally:
            os.chdir("/")                    # where the process waits: a folder that cannot go away
            _set_env(saved_env)
        return None, rc, out.getvalue(), err.getvalue()

    def _other_index(self, args: argparse.Namespace) -> str | None:
        """Why a parsed call is not this process's to answer (another index), or None."""
        if not hasattr(args, "index"):
            return None                      # inspect reads no index
        named = args.index or os.environ.get(INDEX_ENV)
        if named:
            return None if index_key(named) == self.key else "another index"
        return None if self.is_default else "the default index, which this process does not serve"


def _set_env(values: dict[str, str]) -> None:
    for name, value in values.items():
        if value == UNSET:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


# -- the listening side ------------------------------------------------------------------
def _private_runtime_folder() -> str:
    """The runtime folder, created 0700; one that is not this user's own private folder is refused."""
    folder = runtime_folder()
    try:
        os.mkdir(folder, PRIVATE_MODE)
    except FileExistsError:
        pass
    except OSError as exc:
        raise RuntimeError(f"cannot create {folder} for the socket ({exc.strerror}): "
                           "set XDG_RUNTIME_DIR or TMPDIR to a folder of yours") from exc
    if not is_private_folder(folder):
        raise RuntimeError(f"{folder} is not a private folder of this user (a link, another owner, or open to "
                           "others): remove it, or set XDG_RUNTIME_DIR or TMPDIR to a folder of yours")
    return folder


def _bind(path: str) -> Any:
    """A listening socket at path, mode 0600; a stale one is replaced, a live one is an error."""
    import socket

    if os.path.lexists(path):
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
        except OSError:
            os.unlink(path)              # nobody listens: left by a process that was killed
        else:
            raise RuntimeError(f"a warm process already answers at {path}; stop it first (Ctrl-C or kill)")
        finally:
            probe.close()
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)                # born 0600: no moment where another user could connect
    try:
        srv.bind(path)
    except OSError as exc:
        srv.close()
        raise RuntimeError(f"cannot listen at {path} ({exc}): set XDG_RUNTIME_DIR or TMPDIR to a shorter "
                           "folder of yours") from exc
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    srv.listen(16)
    srv.setblocking(False)               # accepted when select says so; a caller gone meanwhile blocks nothing
    return srv


def _serve_one(conn: Any, calls: WarmCalls) -> str:
    """Answer one connection; a line for the log."""
    if not peer_is_this_user(conn):
        return "refused a caller of another user"
    # TAKEN before anything else: a caller that gave up waiting (this process was busy) has closed its end, so
    # this send fails and its call is not run for nobody.
    conn.sendall(TAKEN)
    chunks, size = [], 0
    while size <= MAX_REQUEST:
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > MAX_REQUEST:
        return "ignored a request over 1 MiB"
    fields, line = calls.answer(b"".join(chunks))
    conn.sendall(pack(fields))
    return line


def serve(index: Path, stop: Any, log: Callable[[str], None]) -> None:
    """Answer calls for index until stop is set; its sockets are removed on the way out."""
    import select

    # Loaded once here, so that no call pays for them.
    import indexer.jobs.oneshot  # noqa: F401
    import indexer.search.grep  # noqa: F401
    import reader.extract  # noqa: F401
    import reader.formats.pdf  # noqa: F401
    import reader.formats.pdfium  # noqa: F401 - what PDF text needs of pypdfium2 (its raw bindings)
    from server.cli.logs import quiet_libraries

    quiet_libraries()
    os.chdir("/")                        # each call runs in its caller's folder; between calls, here
    calls = WarmCalls(index)
    for command in FORWARDED:
        calls.parser(command)
    if index.exists():
        for note in calls.kept.open(index).notes:
            log(f"note: {note}")
    _private_runtime_folder()
    listening: list[tuple[str, Any, tuple[int, int]]] = []
    try:
        for key in calls.keys():
            path = socket_path(key)
            srv = _bind(path)
            st = os.stat(path)
            listening.append((path, srv, (st.st_dev, st.st_ino)))
        default = " and for calls that name no index" if calls.is_default else ""
        log(f"warm: answering grep and inspect for {index}{default} at "
            f"{', '.join(p for p, _, _ in listening)} (Ctrl-C to stop)")
        while not stop.is_set():
            ready, _, _ = select.select([srv for _, srv, _ in listening], [], [], 0.5)
            for srv in ready:
                try:
                    conn, _ = srv.accept()
                except BlockingIOError:
                    continue
                with conn:
                    conn.settimeout(SEND_SECONDS)
                    try:
                        log(_serve_one(conn, calls))
                    except OSError as exc:
                        log(f"a caller went away ({exc})")
    finally:
        calls.kept.close()
        for path, srv, bound in listening:
            srv.close()
            _unlink_own(path, bound)


def _unlink_own(path: str, bound: tuple[int, int]) -> None:
    """Remove our socket file, not one a newer warm process put in its place."""
    try:
        st = os.stat(path)
        if (st.st_dev, st.st_ino) == bound:
            os.unlink(path)
    except OSError:
        pass


def _cmd_warm(args: argparse.Namespace) -> int:
    import signal
    import threading

    from indexer.store.location import index_path

    index = index_path(args.index).absolute()
    stop = threading.Event()             # set by SIGTERM; no thread is started
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        serve(index, stop, lambda line: print(line, file=sys.stderr, flush=True))
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
                    "over a socket only you can use. Without it the calls run on their own, with the same output.",
        epilog="Example: mcp-nextcloud warm --index ~/notes.db")
    p.add_argument("--index", metavar="PATH", default=None,
                   help="index whose calls to answer (default: $MCP_NEXTCLOUD_INDEX, else the platform data dir)")
    p.set_defaults(func=_cmd_warm)
