"""The index service (service/daemon.py): started on first use, reused, gone when idle, replaced when older,
recovered after kill -9, private to its user; every command gives the same output through it as in its own
process (MCP_NEXTCLOUD_SERVICE=0); two serves on one index share one background sync.

Real processes throughout: the CLI is `python -m mcp_nextcloud` from this tree, the service the process it starts.
Each test has its own runtime folder (short, under /tmp: a Unix socket path holds ~100 bytes) and stops every
service it started.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio

from mcp_nextcloud.fixtures.emulator.server import Emulator
from mcp_nextcloud.fixtures.emulator.testing import http_client
from tests.helpers import wait_for
from tests.service.procs import ROOT, _alive, _cli, _log_of, _pid_of, _sockets, _status  # noqa: F401

CODE = ("mcp_nextcloud",)


def test_the_first_call_starts_the_service_and_the_next_reuse_it(env: dict[str, str], runtime: Path) -> None:
    assert _status(env) == {"running": False}
    first = _cli(env, "index", "sync", "--wait", "60", "--json")
    assert first.returncode == 0, first.stderr
    started = _status(env)
    assert started["running"] and _alive(started["pid"])
    for _ in range(2):
        assert _cli(env, "grep", "install", "--json").returncode == 0
    again = _status(env)
    assert again["pid"] == started["pid"] and again["requests"] >= started["requests"] + 2
    # The runtime folder is this user's alone: 0700, the socket and the log 0600.
    folder = runtime / "mcp-nextcloud"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    [sock] = _sockets(runtime)
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(sock.with_suffix(".log").stat().st_mode) == 0o600
    # No secret on disk: the socket's name is a hash, the log holds no password.
    assert env["NEXTCLOUD_APP_PASSWORD"] not in sock.with_suffix(".log").read_text()
    assert _cli(env, "service", "stop").returncode == 0
    wait_for(lambda: not _alive(started["pid"]), what="the stopped service's exit")
    assert _sockets(runtime) == []


def test_one_index_one_service_whatever_the_environment(env: dict[str, str], runtime: Path) -> None:
    """A host-like environment (no XDG_* but the runtime folder, other variables) and a shell's share the service
    of their one index; each call runs with its own variables: other credentials answer as those credentials."""
    assert _cli(env, "whoami", "--json").returncode == 0
    host = {k: v for k, v in env.items() if not k.startswith(("XDG_DATA", "XDG_CACHE", "XDG_CONFIG", "LANG", "LC_"))}
    host.update({"XDG_RUNTIME_DIR": env["XDG_RUNTIME_DIR"], "SOME_HOST_VARIABLE": "1", "TERM": "dumb"})
    assert _cli(host, "whoami", "--json").returncode == 0
    other = _cli(env, "whoami", "--json", NEXTCLOUD_USER="bob")
    assert len(_sockets(runtime)) == 1
    assert "alice" not in other.stdout
    assert _status(env)["requests"] >= 3


def test_commands_that_need_no_index_start_nothing(env: dict[str, str], runtime: Path) -> None:
    for argv in (["--help"], ["help", "grep"], ["grep", "--help"], ["manifest"], ["grpe", "x"], []):
        _cli(env, *argv)
    assert _sockets(runtime) == []


REPRESENTATIVE = [
    ("grep", "install", "--json", "--limit", "2"),
    ("grep", "install", "--limit", "1"),
    ("grep", "--limit", "abc", "x"),                          # a usage error: exit 2, argparse's words
    ("grep", "--json", "--nope", "x"),                        # the same with --json: the error on stdout
    ("inspect", "mcp_nextcloud/fixtures/docs/notes.txt", "--json"),          # a relative path: the caller's folder
    ("index", "status", "--json"),
    ("contacts", "search", "elodie", "--json"),
    ("files", "search", "--json", "--limit", "2"),
    ("calendar", "create", "--title", "x", "--start", "2026-12-24", "--json"),   # needs --confirm: exit 2
    ("calendar", "create", "--input-file", "-", "--dry-run", "--json"),          # stdin read through the service
    ("deck", "list", "--board", "404", "--json"),                                 # a tool's failure
    ("help", "grep"),
    ("jobs", "status", "nosuchjob", "--json"),
]


def _steady(text: str) -> str:
    """Output without what differs from one run to the next (durations, ages, times)."""
    text = re.sub(r'"([A-Za-z]*(Ms|At|Seconds|Age)|now|localTime)":("[^"]*"|[0-9.e+-]+)', r'"\1":_', text)
    text = re.sub(r"(DTSTAMP|CREATED|LAST-MODIFIED):[0-9TZ]+", r"\1:_", text)
    text = re.sub(r"^(now|localTime): .*$", r"\1: _", text, flags=re.M)   # whoami's clock, read as a person
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "UUID", text)
    return re.sub(r"[0-9.]+ ms\b", "_ ms", text)


def test_every_representative_command_gives_the_same_output_both_ways(env: dict[str, str]) -> None:
    # No meaning build behind the sync: its window count grows between the two runs of `index status`.
    env = {**env, "MCP_NEXTCLOUD_MEANING": "0"}
    assert _cli(env, "index", "sync", "--wait", "60").returncode == 0
    event = json.dumps({"title": "Planning", "start": "2026-12-24"})
    for argv in REPRESENTATIVE:
        served = _cli(env, *argv, stdin=event)
        alone = _cli(env, *argv, stdin=event, MCP_NEXTCLOUD_SERVICE="0")
        assert (served.returncode, _steady(served.stdout), _steady(served.stderr)) == \
            (alone.returncode, _steady(alone.stdout), _steady(alone.stderr)), argv
    assert _status(env)["requests"] >= len(REPRESENTATIVE)   # they did go through it


def test_index_add_through_the_service_builds_the_meaning_index_there(env: dict[str, str], tmp_path: Path) -> None:
    """The service outlives `index add`: it embeds the added folder in the background, and neither a shed nor an
    idle exit cuts that build short; once built and idle, it sheds the model. In its own process
    (MCP_NEXTCLOUD_SERVICE=0) the command leaves nothing running behind it."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "limits.txt").write_text("Resource limits\nThe ulimit builtin sets limits on the resources a process "
                                     "may use, such as the maximum virtual memory size and open files.\n")
    (docs / "pancakes.txt").write_text("Pancakes\nMix flour, eggs and milk; fry in butter until golden.\n")
    env = {**env, "MCP_NEXTCLOUD_INDEX": str(tmp_path / "local.db"), "MCP_NEXTCLOUD_SERVICE_SHED_S": "1"}
    alone = _cli(env, "index", "add", str(docs), "--json", MCP_NEXTCLOUD_SERVICE="0")
    assert alone.returncode == 0, alone.stderr
    status = json.loads(_cli(env, "index", "status", "--json", MCP_NEXTCLOUD_SERVICE="0").stdout)
    assert not (status.get("meaning") or {}).get("files"), status.get("meaning")

    assert _cli(env, "index", "add", str(docs), "--json").returncode == 0

    def embedded() -> dict[str, Any] | None:
        meaning = json.loads(_cli(env, "index", "status", "--json", MCP_NEXTCLOUD_SERVICE="0").stdout).get("meaning")
        return meaning if meaning and meaning["complete"] == meaning["of"] == 2 else None

    wait_for(embedded, timeout=120, step=0.5, what="the service's meaning build of the added folder")
    wait_for(lambda: "tool stack or the model loaded: exiting" in _log_of(env), timeout=60,
             what="the shed of the model once built")
    found = _cli(env, "grep", "comment limiter la mémoire qu'un programme peut utiliser", "--json")
    assert found.returncode == 0, found.stderr
    assert [hit["path"] for hit in json.loads(found.stdout)["items"]][:1] == ["/limits.txt"]


def test_the_service_exits_when_idle(env: dict[str, str], runtime: Path) -> None:
    done = _cli(env, "inspect", "mcp_nextcloud/fixtures/docs/notes.txt", MCP_NEXTCLOUD_SERVICE_IDLE_S="1")
    assert done.returncode == 0
    pid = _status(env, MCP_NEXTCLOUD_SERVICE_IDLE_S="1")["pid"]
    wait_for(lambda: not _alive(pid), timeout=30, what="the idle service's exit")
    assert _sockets(runtime) == []


def test_after_kill_9_the_next_call_starts_a_new_service_and_nothing_is_lost(env: dict[str, str]) -> None:
    assert _cli(env, "index", "sync", "--wait", "60").returncode == 0
    before = _cli(env, "grep", "install", "--json")
    pid = _status(env)["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not _alive(pid), what="the killed service's end")
    after = _cli(env, "grep", "install", "--json")
    assert (after.returncode, _steady(after.stdout)) == (before.returncode, _steady(before.stdout))
    new = _status(env)["pid"]
    assert new != pid and _alive(new)


def test_a_service_of_older_code_is_replaced(env: dict[str, str], tmp_path: Path) -> None:
    """A copy of the code runs its service; an edit to that copy makes the next call start the current code."""
    tree = tmp_path / "tree"
    for package in CODE:
        shutil.copytree(ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__", "bad"))
    copy_env = {**env, "PYTHONPATH": str(tree)}
    assert _cli(copy_env, "inspect", str(ROOT / "mcp_nextcloud/fixtures/docs/notes.txt"), cwd=tree).returncode == 0
    old = _status(copy_env, cwd=tree)["pid"]
    marker = tree / "mcp_nextcloud" / "cli" / "inspect.py"
    edited = marker.with_suffix(".new")   # saved as editors, git and pip do: a new file replaces the old one
    edited.write_text(marker.read_text() + "\n# edited\n")
    os.replace(edited, marker)
    done = _cli(copy_env, "inspect", str(ROOT / "mcp_nextcloud/fixtures/docs/notes.txt"), cwd=tree)
    assert done.returncode == 0 and "Shopping list" in done.stdout
    wait_for(lambda: not _alive(old), what="the older service's exit")
    assert _status(copy_env, cwd=tree)["pid"] != old


def test_a_runtime_folder_open_to_others_is_not_used(env: dict[str, str], runtime: Path) -> None:
    folder = runtime / "mcp-nextcloud"
    folder.mkdir(mode=0o700)
    folder.chmod(0o755)
    done = _cli(env, "inspect", "mcp_nextcloud/fixtures/docs/notes.txt")
    assert done.returncode == 0 and "Shopping list" in done.stdout   # run in its own process
    assert _sockets(runtime) == []


def test_the_client_imports_only_the_hand_over(env: dict[str, str]) -> None:
    """What a call the service answers loads in the calling process: our entry point and a socket, nothing else."""
    env = {**env, "PYTHONPATH": str(ROOT)}
    assert _cli(env, "index", "sync", "--wait", "60").returncode == 0   # the service runs
    code = ("import sys\n"
            "before = set(sys.modules)\n"
            "import mcp_nextcloud\n"
            "from mcp_nextcloud.cli import main\n"
            "rc = main(['grep', 'install', '--limit', '1'])\n"
            "loaded = sorted(set(sys.modules) - before)\n"
            "sys.stdout.write('\\n' + repr((rc, loaded)) + '\\n')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=60)
    rc, loaded = eval(done.stdout.strip().splitlines()[-1])
    assert rc == 0 and "manual" in done.stdout
    assert set(loaded) <= {"mcp_nextcloud", "mcp_nextcloud.cli", "mcp_nextcloud.service", "mcp_nextcloud.environment",
                           "contextvars", "_contextvars",
                           "mcp_nextcloud.service.client", "_socket",
                           "_sha256", "_sha2"}, loaded


def test_two_serves_and_the_cli_share_one_sync(env: dict[str, str], emulator: Emulator) -> None:
    """Two serve processes on one index (each with --interval 1) and a CLI grep: the file that changed is
    downloaded once, by the service's one background sync; both serves answer tool calls through it."""
    from mcp import Client, StdioServerParameters

    assert _cli(env, "index", "sync", "--wait", "60").returncode == 0
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_nextcloud", "serve", "--interval", "1"],
                                   env=env, cwd=str(ROOT))
    path = "/Documents/service-shared.txt"
    dav = f"/remote.php/dav/files/alice{path}"

    async def session(client: Any) -> Any:
        return await client.call_tool("files_grep", {"query": "zanzibarquokka"})

    async def go() -> list[Any]:
        async with Client(params, mode="legacy") as one, Client(params, mode="legacy") as two:
            with http_client(emulator) as http:
                assert http.put(dav, content=b"zanzibarquokka lives here\n").status_code in (201, 204)

            def indexed() -> bool:
                return "service-shared" in _cli(env, "grep", "zanzibarquokka", "--json").stdout

            await anyio.to_thread.run_sync(lambda: wait_for(indexed, timeout=60, what="the background sync"))
            await anyio.sleep(3)   # three more sync periods of both serves: nothing more is downloaded
            return [await session(one), await session(two)]

    answers = anyio.run(go)
    for answer in answers:
        assert not answer.is_error and "service-shared" in answer.content[0].text
    downloads = [r for r in emulator.requests if r[0] == "GET" and r[1].endswith("service-shared.txt")]
    assert len(downloads) == 1, downloads
    status = wait_for(lambda: (lambda s: s if s.get("attachedServes") == 0 else None)(_status(env)),
                      timeout=30, step=0.2, what="the serves' going")
    assert status["backgroundSync"] is False   # the sync the serves asked for ended with them


def test_a_serve_profile_holds_for_the_tool_calls_the_service_runs(env: dict[str, str]) -> None:
    """serve --read-only --folder: the service runs each call under that serve's profile; the answers are those
    of a serve that runs its tools itself."""
    from mcp import Client, StdioServerParameters

    calls = [("files_write", {"path": "/Documents/nope.txt", "content": "x"}),
             ("files_read", {"path": "/Documents/notes.txt"}),
             ("files_grep", {"query": "install"}),
             ("nextcloud_whoami", {})]

    def answers(switch: str) -> list[tuple[bool, str]]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "mcp_nextcloud", "serve", "--interval", "0", "--read-only", "--folder",
                                          "/Photos"], env={**env, "MCP_NEXTCLOUD_SERVICE": switch}, cwd=str(ROOT))

        async def go() -> list[tuple[bool, str]]:
            async with Client(params, mode="legacy") as client:
                listed = {t.name for t in (await client.list_tools()).tools}
                assert "files_write" not in listed and "files_read" in listed
                out = []
                for name, args in calls:
                    result = await client.call_tool(name, args)
                    out.append((bool(result.is_error), _steady(result.content[0].text)))
                return out

        return anyio.run(go)

    assert _cli(env, "index", "sync", "--wait", "60").returncode == 0
    served = answers("1")
    assert _status(env)["requests"] >= len(calls)
    assert served == answers("0")
    assert served[0][0] and served[1][0]            # a write is not offered; /Documents is outside the jail
    assert "/Documents/" not in served[2][1]        # no hit outside /Photos


def test_an_idle_service_sheds_the_tool_stack_and_keeps_answering(env: dict[str, str]) -> None:
    """Idle past MCP_NEXTCLOUD_SERVICE_SHED_S with the MCP tools loaded, the service exits; the next call starts
    a lean one (the grep path only) and every command still answers the same."""
    env = {**env, "MCP_NEXTCLOUD_SERVICE_SHED_S": "2"}
    assert _cli(env, "index", "sync", "--wait", "60").returncode == 0
    first = _cli(env, "contacts", "search", "elodie", "--json")
    loaded = _status(env)
    wait_for(lambda: not _alive(loaded["pid"]), timeout=60, what="the shed (an exit)")
    assert "tool stack or the model loaded: exiting" in _log_of(env)
    assert _cli(env, "grep", "install", "--json").returncode == 0
    lean = _status(env)
    assert lean["pid"] != loaded["pid"]
    assert lean["memoryBytes"] < loaded["memoryBytes"] - 20 * 1024 * 1024, (loaded, lean)
    again = _cli(env, "contacts", "search", "elodie", "--json")
    assert (again.returncode, again.stdout) == (first.returncode, first.stdout)
