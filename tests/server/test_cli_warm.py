"""`mcp-nextcloud warm`: grep and inspect answered by a ready process, the same answers, and a safe fallback.

Real processes throughout: the warm process is `python -m server.cli warm`,
the calls are `python -m server.cli grep|inspect` subprocesses. Every process
gets its own runtime folder ($XDG_RUNTIME_DIR), so no warm process of the
person running the tests is involved.
"""
from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Iterator

import pytest

from server.cli.warm import WarmCalls
from server.cli.warm_client import (DECLINED, MAGIC, OK, SENT_ENV, SWITCH, TAKEN, UNSET, default_key, index_key,
                                    pack, socket_name, unpack)

ROOT = Path(__file__).resolve().parents[2]
# What a call handed to the warm process may import, beyond what the interpreter loads before our code
# (os and its parts, stat and time are loaded by site in every normal start): ours, and the socket's C module.
CLIENT_MODULES = {"mcp_nextcloud", "server", "server.cli", "server.cli.warm_client", "_socket",
                  "os", "os.path", "posixpath", "genericpath", "stat", "_stat", "_collections_abc", "time"}


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("run")
    os.chmod(folder, 0o700)
    return folder


@pytest.fixture(scope="module")
def data_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """$XDG_DATA_HOME of every process here: the platform's default index lives under it."""
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="module")
def env(runtime: Path, data_home: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in (SWITCH, "MCP_NEXTCLOUD_INDEX")}
    return {**base, "PYTHONPATH": str(ROOT), "XDG_RUNTIME_DIR": str(runtime), "XDG_DATA_HOME": str(data_home)}


def _cli(env: dict[str, str], *args: str, cwd: Path = ROOT, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], cwd=cwd, env={**env, **extra},
                          capture_output=True, text=True, timeout=120)


def _lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    """grep's output without its last line (the time it took)."""
    return done.stdout.split("\n")[:-2]


def _folder(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, fixture_docs: Path, env: dict[str, str]) -> Path:
    folder = tmp_path_factory.mktemp("warm-notes")
    for name in ("notes.txt", "manual.md"):
        (folder / name).write_bytes((fixture_docs / name).read_bytes())
    db = tmp_path_factory.mktemp("warm-index") / "index.db"
    done = _cli(env, "index", "add", str(folder), "--index", str(db))
    assert done.returncode == 0, done.stderr
    return db


class Warm:
    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "server.cli", "warm", *args], cwd=ROOT, env=env,
                                     stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        self.first_line = self.proc.stderr.readline()   # written once it listens (or its error)
        assert self.first_line.startswith("warm: answering"), self.first_line + self.proc.stderr.read()
        self.log: str | None = None

    def stop(self) -> str:
        """Stop it (SIGTERM); its whole log."""
        if self.log is None:
            self.proc.terminate()
            _, err = self.proc.communicate(timeout=30)
            self.log = self.first_line + err
        return self.log


def _socket_of(runtime: Path, index: Path) -> Path:
    return runtime / "mcp-nextcloud" / socket_name(index_key(str(index)))


@pytest.fixture
def warm(index: Path, env: dict[str, str]) -> Iterator[Warm]:
    w = Warm(env, "--index", str(index))
    yield w
    w.stop()


def test_the_socket_is_the_users_alone_and_goes_away_with_the_process(warm: Warm, runtime: Path,
                                                                      index: Path) -> None:
    sock = _socket_of(runtime, index)
    assert str(sock) in warm.first_line
    st = os.stat(sock)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
    assert stat.S_IMODE(os.stat(sock.parent).st_mode) == 0o700
    warm.stop()
    assert warm.proc.returncode == 0
    assert not sock.exists()


def test_grep_and_inspect_answered_warm_equal_those_run_alone(warm: Warm, index: Path, fixture_docs: Path,
                                                              tmp_path: Path, env: dict[str, str]) -> None:
    # A copy of the index at another path has no warm process: the same call runs on its own.
    for suffix in ("", "-wal"):                   # the write-ahead log holds the latest commits
        if Path(f"{index}{suffix}").exists():
            Path(f"{tmp_path / 'copy.db'}{suffix}").write_bytes(Path(f"{index}{suffix}").read_bytes())
    alone = _cli(env, "grep", "install", "--index", str(tmp_path / "copy.db"))
    served = _cli(env, "grep", "install", "--index", str(index))
    assert served.returncode == alone.returncode == 0
    assert _lines(served) == _lines(alone) and "manual.md" in served.stdout
    # A relative --index is the caller's: from the index's folder.
    relative = _cli(env, "grep", "install", "--index", index.name, cwd=index.parent)
    assert _lines(relative) == _lines(alone)
    # inspect: a relative path is the caller's, and the index variable is the caller's.
    rel = _cli(env, "inspect", "manual.pdf", "--find", "install", "--json", cwd=fixture_docs,
               MCP_NEXTCLOUD_INDEX=str(index))
    own = _cli(env, "inspect", "manual.pdf", "--find", "install", "--json", cwd=fixture_docs,
               MCP_NEXTCLOUD_INDEX=str(tmp_path / "copy.db"))
    assert rel.returncode == 0 and rel.stdout == own.stdout
    # Errors keep their exit code and their stderr; so do usage errors and --help.
    missing = _cli(env, "inspect", "no-such.pdf", MCP_NEXTCLOUD_INDEX=str(index))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    usage = _cli(env, "grep", "--index", str(index))
    assert usage.returncode == 2 and usage.stderr == _cli(env, "grep", "--index", str(index), **{SWITCH: "0"}).stderr
    for columns in ("60", "200"):    # help wraps to the caller's width, not the warm process's
        helped = _cli(env, "grep", "--help", "--index", str(index), COLUMNS=columns)
        assert helped.returncode == 0 and helped.stdout.startswith("usage: mcp-nextcloud grep")
        assert helped.stdout == _cli(env, "grep", "--help", "--index", str(index), COLUMNS=columns,
                                     **{SWITCH: "0"}).stdout
    # MCP_NEXTCLOUD_WARM=0: this call runs on its own although the warm process answers (the log below
    # counts the greps served).
    switched_off = _cli(env, "grep", "install", "--index", str(index), **{SWITCH: "0"})
    assert _lines(switched_off) == _lines(alone)
    log = warm.stop()
    assert log.count("grep: exit 0") == 4 and log.count("inspect: exit 0") == 1, log   # 2 greps, 2 helps
    assert "inspect: exit 2" in log and log.count("grep: exit 2") == 1


def _client_run(env: dict[str, str], entry: str, argv: list[str]) -> tuple[int, str, list[str]]:
    """A call in an interpreter without site (-S: no third-party package importable, so only a call the
    warm process answers can succeed): exit code, stdout, and the modules it imported."""
    start = ("from server.cli import main\nrc = main(argv)\n" if entry == "server.cli" else
             "import mcp_nextcloud\nsys.argv[1:] = argv\nrc = mcp_nextcloud.main()\n")
    # Printed by an atexit handler: the console script's process ends in os._exit once those ran.
    code = (f"import atexit, sys\nsys.path.insert(0, {str(ROOT)!r})\nargv = {argv!r}\nbefore = set(sys.modules)\n"
            "atexit.register(lambda: print(repr(sorted(set(sys.modules) - before)), file=sys.stderr))\n"
            f"{start}sys.stdout.flush()\nsys.exit(rc)\n")
    done = subprocess.run([sys.executable, "-S", "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    return done.returncode, done.stdout, eval(done.stderr.splitlines()[-1])   # our own repr of a list of names


@pytest.mark.parametrize("entry", ["server.cli", "mcp_nextcloud"])
def test_a_call_handed_over_imports_only_the_client(warm: Warm, index: Path, env: dict[str, str],
                                                    entry: str) -> None:
    """Both entry points (`python -m server.cli`, the `mcp-nextcloud` console script) reach the client first,
    which needs no argparse, json, pathlib, typing, platformdirs or socket module."""
    rc, out, modules = _client_run(env, entry, ["grep", "install", "--index", str(index)])
    assert rc == 0 and "manual.md" in out
    assert set(modules) <= CLIENT_MODULES, f"a handed-over call imported {sorted(set(modules) - CLIENT_MODULES)}"
    assert "_socket" in modules
    assert warm.stop().count("grep: exit 0") == 1


def test_a_call_nobody_answers_runs_on_its_own(index: Path, env: dict[str, str]) -> None:
    """No warm process: the call runs in its process (it imported the search), with the same answer."""
    code = ("import contextlib, io, json, sys\nfrom server.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            f"    rc = main(['grep', 'install', '--index', {str(index)!r}])\n"
            "print(json.dumps([rc, out.getvalue(), 'indexer.search.grep' in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    rc, out, searched = json.loads(done.stdout.splitlines()[-1])
    assert rc == 0 and searched and "manual.md" in out


def test_a_stale_socket_is_no_obstacle(index: Path, runtime: Path, env: dict[str, str]) -> None:
    """A socket left by a killed warm process: calls run on their own, a new warm process takes its place."""
    sock = _socket_of(runtime, index)
    sock.parent.mkdir(mode=0o700, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(sock))
    dead.close()                                  # the file stays, nobody listens
    try:
        done = _cli(env, "grep", "install", "--index", str(index))
        assert done.returncode == 0 and "manual.md" in done.stdout
        w = Warm(env, "--index", str(index))
        served = _cli(env, "grep", "install", "--index", str(index))
        assert _lines(served) == _lines(done)
        assert "grep: exit 0" in w.stop()
    finally:
        sock.unlink(missing_ok=True)


def test_a_second_warm_process_for_the_same_index_is_refused(warm: Warm, index: Path, runtime: Path,
                                                             env: dict[str, str]) -> None:
    second = _cli(env, "warm", "--index", str(index))
    assert second.returncode == 2
    assert "already answers" in second.stderr
    assert _socket_of(runtime, index).exists() and warm.proc.poll() is None   # the first keeps serving


def test_a_call_for_another_index_is_declined_and_runs_on_its_own(warm: Warm, index: Path, tmp_path: Path,
                                                                  env: dict[str, str]) -> None:
    """The socket only routes: the warm process parses the call, and another index is not its to answer."""
    other = tmp_path / "other.db"
    added = _cli(env, "index", "add", str(_folder(tmp_path / "b", {"b.txt": "install the zeppelin"})),
                 "--index", str(other))
    assert added.returncode == 0, added.stderr
    # `--index` routes the call to the warm process of `index`; argparse takes the later, abbreviated `--ind`.
    call = ["grep", "install", "--index", str(index), "--ind", str(other)]
    declined = _cli(env, *call)
    alone = _cli(env, *call, **{SWITCH: "0"})
    assert declined.returncode == 0 and _lines(declined) == _lines(alone)
    assert "b.txt" in declined.stdout and "manual.md" not in declined.stdout
    # A call that names no index (`--in ""` is `--index ""`) asks for the default index, which this warm
    # process does not serve: declined, and the call's own run says there is none.
    default = _cli(env, "grep", "install", f"--index={index}", "--in", "")
    assert default.returncode == 2 and "(the default index)" in default.stderr
    assert default.stderr == _cli(env, "grep", "install", f"--index={index}", "--in", "", **{SWITCH: "0"}).stderr
    log = warm.stop()
    assert "declined grep: another index" in log and "declined grep: the default index" in log, log
    assert "grep: exit" not in log


def test_the_default_index_is_served_to_calls_that_name_none(tmp_path: Path, env: dict[str, str],
                                                             data_home: Path, runtime: Path) -> None:
    """Without --index or $MCP_NEXTCLOUD_INDEX the client cannot know the default path (platformdirs): the
    call goes to the default's socket, with $HOME and $XDG_DATA_HOME, and the warm process checks them."""
    folder = _folder(tmp_path / "c", {"c.txt": "install the default"})
    assert _cli(env, "index", "add", str(folder)).returncode == 0
    default = data_home / "mcp-nextcloud" / "local.db"
    assert default.exists()
    w = Warm(env)
    try:
        assert str(runtime / "mcp-nextcloud" / socket_name(default_key(env))) in w.first_line
        served = _cli(env, "grep", "install")
        alone = _cli(env, "grep", "install", **{SWITCH: "0"})
        assert served.returncode == 0 and "c.txt" in served.stdout and _lines(served) == _lines(alone)
        by_path = _cli(env, "grep", "install", "--index", str(default))   # the same index named by its path
        assert _lines(by_path) == _lines(alone)
        # Another $XDG_DATA_HOME means another default index: another socket, nobody answers, the call's own
        # run says there is no index there.
        elsewhere = _cli(env, "grep", "install", XDG_DATA_HOME=str(tmp_path / "elsewhere"))
        assert elsewhere.returncode == 2 and "the default index" in elsewhere.stderr
    finally:
        log = w.stop()
        _cli(env, "index", "reset", "--confirm")
    assert log.count("grep: exit 0") == 2, log


def test_the_warm_process_checks_home_and_data_home(index: Path, data_home: Path) -> None:
    """A request whose $HOME or $XDG_DATA_HOME differs from the warm process's is declined (they decide the
    default index and `~`); the same request with its own values is answered."""
    here = os.getcwd()
    calls = WarmCalls(index)
    sent = {"MCP_NEXTCLOUD_INDEX": UNSET, "COLUMNS": "80", "HOME": os.environ.get("HOME", UNSET),
            "XDG_DATA_HOME": os.environ.get("XDG_DATA_HOME", UNSET)}
    argv = ["grep", "install", "--index", str(index)]
    fields, _ = calls.answer(pack([MAGIC, str(ROOT), *(sent[k] for k in SENT_ENV), *argv]))
    assert fields[:3] == [MAGIC, OK, "0"] and "manual.md" in fields[3]
    sent["XDG_DATA_HOME"] = str(data_home / "not-ours")
    fields, line = calls.answer(pack([MAGIC, str(ROOT), *(sent[k] for k in SENT_ENV), *argv]))
    assert fields[1] == DECLINED and "another $HOME or $XDG_DATA_HOME" in line
    fields, line = calls.answer(b"13:not a request,")
    assert fields[1] == DECLINED and "malformed" in line
    calls.kept.close()
    os.chdir(here)   # a warm process waits in / between calls


def test_the_warm_index_follows_a_reset(tmp_path: Path, env: dict[str, str]) -> None:
    """The warm process keeps its index open, and opens it again when the file was replaced."""
    db = tmp_path / "idx" / "index.db"
    assert _cli(env, "index", "add", str(_folder(tmp_path / "a", {"a.txt": "alpha install"})),
                "--index", str(db)).returncode == 0
    w = Warm(env, "--index", str(db))
    try:
        assert "a.txt" in _cli(env, "grep", "install", "--index", str(db)).stdout
        assert _cli(env, "index", "reset", "--index", str(db), "--confirm").returncode == 0
        gone = _cli(env, "grep", "install", "--index", str(db))
        assert gone.returncode == 2 and "there is no index" in gone.stderr
        assert _cli(env, "index", "add", str(_folder(tmp_path / "b", {"b.txt": "beta install"})),
                    "--index", str(db)).returncode == 0
        served = _cli(env, "grep", "install", "--index", str(db))
        alone = _cli(env, "grep", "install", "--index", str(db), **{SWITCH: "0"})
        assert "b.txt" in served.stdout and "a.txt" not in served.stdout and _lines(served) == _lines(alone)
    finally:
        log = w.stop()
    assert log.count("grep: exit 0") == 2 and log.count("grep: exit 2") == 1, log


def test_the_kept_index_holds_no_snapshot_between_calls(warm: Warm, index: Path, env: dict[str, str]) -> None:
    """Kept open, the index must not hold a read transaction after a call: writers could not checkpoint it."""
    import apsw

    assert _cli(env, "grep", "install", "--index", str(index)).returncode == 0
    con = apsw.Connection(str(index))
    try:
        busy, _, _ = con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()[0]
    finally:
        con.close()
    assert busy == 0, "the warm process's connection blocks the checkpoint"
    assert "manual.md" in _cli(env, "grep", "install", "--index", str(index)).stdout
    assert warm.stop().count("grep: exit 0") == 2


def test_a_runtime_folder_open_to_others_is_not_used(index: Path, runtime: Path, env: dict[str, str],
                                                     tmp_path: Path) -> None:
    """The warm process refuses a runtime folder others can enter; a call does not use one either."""
    open_runtime = tmp_path / "open-run"
    (open_runtime / "mcp-nextcloud").mkdir(parents=True)
    os.chmod(open_runtime / "mcp-nextcloud", 0o755)
    refused = _cli(env, "warm", "--index", str(index), XDG_RUNTIME_DIR=str(open_runtime))
    assert refused.returncode == 2 and "not a private folder" in refused.stderr
    w = Warm(env, "--index", str(index))
    folder = runtime / "mcp-nextcloud"
    try:
        os.chmod(folder, 0o755)
        assert _cli(env, "grep", "install", "--index", str(index)).returncode == 0   # ran on its own
    finally:
        os.chmod(folder, 0o700)
        log = w.stop()
    assert "grep: exit" not in log, log


def _forward_in_a_process(env: dict[str, str], index: Path, answer_seconds: float | None = None) -> str:
    """What `forward` returns for a grep, in a fresh process (None: the call runs in that process)."""
    code = ("import server.cli.warm_client as client\n"
            + (f"client.ANSWER_SECONDS = {answer_seconds}\n" if answer_seconds else "")
            + f"print(client.forward(['grep', 'install', '--index', {str(index)!r}]))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    return done.stdout.strip() + done.stderr


@pytest.mark.parametrize("takes_the_call", [False, True])
def test_a_warm_process_that_does_not_answer_is_not_waited_for(index: Path, runtime: Path, env: dict[str, str],
                                                               takes_the_call: bool) -> None:
    """A process at the socket that never takes the call (hung, or busy with others) is given 1 s; one that
    took it and then hangs, ANSWER_SECONDS (300 s: a long grep is still an answer; 1 s here). Then the call
    runs on its own."""
    sock = _socket_of(runtime, index)
    sock.parent.mkdir(mode=0o700, exist_ok=True)
    hung = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    hung.bind(str(sock))
    hung.listen(4)                                # connections wait in the backlog
    held: list[socket.socket] = []

    def take() -> None:                           # take the call, then never answer
        conn, _ = hung.accept()
        conn.sendall(TAKEN)
        held.append(conn)

    taker = threading.Thread(target=take, daemon=True)
    if takes_the_call:
        taker.start()
    try:
        assert _forward_in_a_process(env, index, 1.0 if takes_the_call else None) == "None"
        if takes_the_call:
            taker.join(timeout=10)
            assert held, "the call never reached the socket"
        else:
            done = _cli(env, "grep", "install", "--index", str(index))   # the whole command: 1 s lost
            assert done.returncode == 0 and "manual.md" in done.stdout
    finally:
        for conn in held:
            conn.close()
        hung.close()
        sock.unlink(missing_ok=True)


def test_ctrl_c_while_the_warm_process_works_ends_the_call_as_in_process(index: Path, runtime: Path,
                                                                        env: dict[str, str]) -> None:
    import signal

    sock = _socket_of(runtime, index)
    sock.parent.mkdir(mode=0o700, exist_ok=True)
    busy = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    busy.bind(str(sock))
    busy.listen(1)
    call = subprocess.Popen([sys.executable, "-m", "server.cli", "grep", "install", "--index", str(index)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        busy.settimeout(60)
        conn, _ = busy.accept()                   # the call is waiting for its answer now
        conn.sendall(TAKEN)
        call.send_signal(signal.SIGINT)
        out, err = call.communicate(timeout=60)
        assert call.returncode == 130 and err == "interrupted\n" and out == "", err
        conn.close()
    finally:
        if call.poll() is None:
            call.kill()
        busy.close()
        sock.unlink(missing_ok=True)


def test_the_wire_format_carries_any_text_exactly() -> None:
    fields = ["", "a:b,c", "naïve ☃", "bad \udcff byte", "x" * 70000]
    assert unpack(pack(fields)) == fields
    for broken in (b"5:abc,", b"3:abc", b"x:abc,", b"3:abc;"):
        with pytest.raises(ValueError):
            unpack(broken)
