"""The agent CLI conventions (issue 14): tool commands over the same code, manifest, collections, writes, batch.

Commands run in-process through `cli.main` against the session's
emulator (conftest `world`) unless the test needs a process of its own (a
kill, a broken pipe). Writes happen only on a private emulator.
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from mcp_nextcloud.fixtures.emulator.server import Emulator
from mcp_nextcloud.cli import build_parser, main
from mcp_nextcloud.cli import toolspec
from mcp_nextcloud.cli.manifest import walk
from mcp_nextcloud.cli.tool_commands import TOOL_COMMANDS, all_commands, derived, is_write, needs_confirm, option
from mcp_nextcloud.cli.tool_exec import SAFE_METHODS

ROOT = Path(__file__).resolve().parents[2]
SPECS = toolspec.load()
COLLECTIONS = [c for c in TOOL_COMMANDS if c.records]
WRITES = [c for c in TOOL_COMMANDS if is_write(SPECS[c.tool])]
# Arguments that are valid against the emulator's seed, for each write command's dry run.
WRITE_ARGS = {
    "files write": ["--path", "/Notes/dry-run.md", "--content", "hello"],
    "files share": ["--path", "/Documents", "--share-with", "bob"],
    "deck create-board": ["--title", "Dry board", "--stacks", "A", "--stacks", "B", "--labels", "x"],
    "deck create-card": ["--board", "Product Launch", "--stack", "To do", "--title", "Dry card"],
    "deck update-card": ["--board", "1", "--card", "1", "--title", "Renamed in a dry run"],
    "deck move-card": ["--board", "1", "--card", "1", "--stack", "Done"],
    "calendar create": ["--title", "Dry event", "--start", "2026-12-10T09:00Z", "--attendees", "bob@example.invalid"],
    "calendar update": ["--uid", "work-single-1@nextcloud.test", "--title", "Renamed in a dry run"],
    "calendar delete": ["--uid", "work-single-1@nextcloud.test"],
    "meet create-room": ["--name", "Dry room", "--participants", "bob"],
    "meet schedule": ["--title", "Dry meeting", "--start", "2026-12-10T14:00Z", "--participants", "bob"],
}


def _env(emulator: Emulator, tmp: Path, index: Path | None = None) -> dict[str, str]:
    acct = emulator.account("alice")
    return {"NEXTCLOUD_URL": acct["url"], "NEXTCLOUD_USER": acct["user"],
            "NEXTCLOUD_APP_PASSWORD": acct["app_password"],
            "MCP_NEXTCLOUD_INDEX": str(index or tmp / "index.db"), "MCP_NEXTCLOUD_JOURNAL": str(tmp / "journal.db"),
            "MCP_NEXTCLOUD_ARTIFACTS": str(tmp / "artifacts"), "XDG_CONFIG_HOME": str(tmp / "config"),
            "XDG_DATA_HOME": str(tmp / "data"), "NEXTCLOUD_PUBLIC_URL": "https://cloud.example.test"}


@pytest.fixture
def cli(world: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    """cli(*argv) -> (exit code, stdout, stderr), in-process, on the session's emulator and index."""
    for key, value in _env(world.emulator, tmp_path, world.index_path).items():
        monkeypatch.setenv(key, value)
    world.emulator.faults.clear()

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def _json(out: str) -> dict[str, Any]:
    return json.loads(out)


def _writes(emulator: Emulator) -> int:
    return sum(1 for m, _, _ in list(emulator.requests) if m not in SAFE_METHODS)


# -- one definition: snapshot, parser and manifest agree with the tools -------------------------------------

def test_tool_snapshot_matches_the_registered_tools() -> None:
    assert toolspec.render(toolspec.live_tools()) == toolspec.SNAPSHOT.read_text(encoding="utf-8"), \
        "cli/tools.json drifted from the tools: run python3 -m mcp_nextcloud.cli.toolspec --write"


def test_a_tool_command_builds_a_server_of_its_own_tool_module_alone() -> None:
    """A CLI tool call registers only the module that defines its tool (not the 23 others and their imports)."""
    from mcp_nextcloud.server.app import TOOL_MODULES, build_server
    from mcp_nextcloud.server.context import ServerContext
    from mcp_nextcloud.cli.tool_exec import _server

    ctx = ServerContext(account=None, index=None)
    whole = {t.name for t in build_server(ctx)._tool_manager.list_tools()}
    main_tools = {name: spec for name, spec in SPECS.items() if spec["server"] == "main"}
    assert set(main_tools) == whole and {spec["module"] for spec in main_tools.values()} == set(TOOL_MODULES)
    for name, spec in main_tools.items():
        alone = {t.name for t in _server(spec, ctx)._tool_manager.list_tools()}
        assert name in alone and alone == {n for n, s in main_tools.items() if s["module"] == spec["module"]}
    assert {t.name for t in _server(SPECS["contacts_search"], ctx)._tool_manager.list_tools()} == {"contacts_search"}


def test_every_model_tool_has_a_cli_command() -> None:
    mirrored = {c.tool for c in all_commands()}
    model_tools = {name for name, spec in SPECS.items() if not spec.get("appOnly")}
    assert mirrored == model_tools
    assert len({c.full_name for c in all_commands()}) == len(mirrored)     # no two tools share a command


def test_a_tool_without_a_declared_command_gets_one() -> None:
    """A new domain's tools (calendar, contacts, Talk...) are commands before anyone declares them."""
    spec = {"server": "main", "description": "List events.", "annotations": SPECS["files_search"]["annotations"],
            "input": {"type": "object", "required": ["calendar"],
                      "properties": {"calendar": {"type": "string"}, "cursor": {"type": "string"}}},
            "records": {"events": ["uid", "title"]}}
    cmd = derived("calendar_list_events", spec)
    assert (cmd.full_name, cmd.records, cmd.ids) == ("calendar list-events", "events", ("uid",))
    assert cmd.example == ("calendar", "list-events", "--calendar", "x")


@pytest.mark.parametrize("cmd", TOOL_COMMANDS, ids=lambda c: c.full_name)
def test_command_arguments_are_the_tool_arguments(cmd: Any) -> None:
    parsers = {name: p for name, p, _ in walk(build_parser())}
    declared = {a.action.dest for a in parsers[cmd.full_name].arguments}
    props = set(SPECS[cmd.tool]["input"].get("properties", {}))
    assert props <= declared, f"{cmd.full_name} lacks {props - declared}"
    for prop in props - set(cmd.positional):
        flags = next(a.flags for a in parsers[cmd.full_name].arguments if a.action.dest == prop)
        assert option(prop) in flags


def test_manifest_is_built_from_the_parser_and_is_stable(cli: Any) -> None:
    code, out, _ = cli("manifest")
    assert code == 0
    manifest = _json(out)
    assert cli("manifest")[1] == out                       # stable: nothing volatile in it
    assert "/tmp" not in out and str(Path.home()) not in out
    parsers = {name: p for name, p, _ in walk(build_parser())}
    assert [c["name"] for c in manifest["commands"]] == list(parsers)
    for entry in manifest["commands"]:
        declared = [a for a in parsers[entry["name"]].arguments]
        assert len(entry["arguments"]) == len(declared), entry["name"]
        for example in entry["examples"]:
            args = build_parser().parse_args(example)      # every example is executable as an argv
            assert callable(args.func)
    search = next(c for c in manifest["commands"] if c["name"] == "files search")
    limit = next(a for a in search["arguments"] if a["name"] == "--limit")
    assert (limit["type"], limit["default"], limit["maximum"]) == ("integer", 20, 100)
    assert search["records"]["ids"] == ["path", "fileId"]
    create = next(c for c in manifest["commands"] if c["name"] == "deck create-card")
    assert create["confirm"] is True and create["inputSchema"]["required"] == ["board", "stack", "title"]
    batch = next(c for c in manifest["commands"] if c["name"] == "deck create-cards")
    assert batch["inputSchema"]["properties"]["cards"]["maxItems"] == 100


def test_help_command_gives_exact_syntax(cli: Any) -> None:
    code, out, _ = cli("help", "files", "search")
    assert code == 0 and "usage: mcp-nextcloud files search" in out and "--fields" in out
    code, _, err = cli("help", "nope")
    assert code == 2 and "no command 'nope'" in err


# -- collections -----------------------------------------------------------------------------------------

COLLECTION_ARGS = {"files grep": ["install"], "mail contacts": ["a"], "contacts search": ["a"],
                   "calendar list": ["--start", "2026-11-01", "--end", "2027-01-31"]}


@pytest.mark.parametrize("cmd", COLLECTIONS, ids=lambda c: c.full_name)
def test_collections_page_with_limit_cursor_and_fields(cmd: Any, cli: Any, world: Any) -> None:
    base = [*cmd.full_name.split(), *COLLECTION_ARGS.get(cmd.full_name, [])]
    has_limit = "limit" in SPECS[cmd.tool]["input"]["properties"]
    code, out, err = cli(*base, *(["--limit", "1"] if has_limit else []), "--json")
    assert code == 0, err
    first = _json(out)
    assert set(first["page"]) == {"returned", "has_more", "next_cursor"}
    assert first["page"]["returned"] == len(first["items"]) <= (1 if has_limit else 100)
    assert first["items"], f"{cmd.full_name} found nothing in the emulator's seed"
    fields = SPECS[cmd.tool]["records"][cmd.records]
    extra = next(f for f in fields if f not in cmd.ids)
    code, out, _ = cli(*base, *(["--limit", "1"] if has_limit else []), "--fields", extra, "--json")
    trimmed = _json(out)
    assert all(set(item) <= {extra, *cmd.ids} for item in trimmed["items"])
    assert all(any(i in item for i in cmd.ids) for item in trimmed["items"])    # ids always kept
    assert trimmed["page"] == first["page"]                                     # the page is never trimmed
    if first["page"]["next_cursor"]:
        code, out, _ = cli(*base, "--limit", "1", "--cursor", first["page"]["next_cursor"], "--json")
        assert code == 0
        assert _json(out)["items"] != first["items"]


@pytest.mark.parametrize("cmd", COLLECTIONS, ids=lambda c: c.full_name)
def test_unknown_field_is_refused_before_any_request(cmd: Any, cli: Any, world: Any) -> None:
    world.emulator.reset_requests()
    code, out, _ = cli(*cmd.full_name.split(), *COLLECTION_ARGS.get(cmd.full_name, []), "--fields", "nope", "--json")
    assert code == 2
    assert _json(out)["error"]["code"] == "bad_argument" and "nope" in _json(out)["error"]["message"]
    assert world.emulator.request_count() == 0


def test_a_cursor_is_bound_to_its_query(cli: Any) -> None:
    first = _json(cli("files", "search", "--limit", "1", "--json")[1])
    assert first["page"]["has_more"]
    code, out, _ = cli("files", "search", "--name", "*.pdf", "--limit", "1", "--cursor",
                       first["page"]["next_cursor"], "--json")
    assert code == 2 and _json(out)["error"]["code"] == "cursor_mismatch"
    code, out, _ = cli("files", "search", "--cursor", "garbage", "--json")
    assert code == 2 and _json(out)["error"]["code"] == "bad_cursor"


# -- writes ----------------------------------------------------------------------------------------------

def test_the_write_commands_are_the_ones_tested_here() -> None:
    assert {c.full_name for c in WRITES} == set(WRITE_ARGS)


@pytest.mark.parametrize("name", sorted(WRITE_ARGS))
def test_dry_run_resolves_and_writes_nothing(name: str, cli: Any, world: Any) -> None:
    world.emulator.reset_requests()
    code, out, err = cli(*name.split(), *WRITE_ARGS[name], "--dry-run", "--json")
    assert code == 0, out + err
    plan = _json(out)
    assert plan["dryRun"] is True and plan["writes"] == 0 and plan["command"] == name
    assert plan["wouldWrite"] or plan.get("result"), plan
    if name != "files write":                              # a write by path has nothing to look up first
        assert world.emulator.request_count() > 0        # it did resolve names against the server...
    assert _writes(world.emulator) == 0                   # ...and the emulator saw no write at all


def test_dry_run_shows_resolved_ids(cli: Any) -> None:
    plan = _json(cli("deck", "create-card", *WRITE_ARGS["deck create-card"], "--dry-run", "--json")[1])
    assert plan["wouldWrite"]["call"] == "deck.create_card"
    assert plan["wouldWrite"]["with"]["board_id"] == 1 and plan["wouldWrite"]["with"]["stack_id"] == 1


@pytest.mark.parametrize("name", sorted(n for n in WRITE_ARGS
                                        if needs_confirm(SPECS[next(c.tool for c in WRITES if c.full_name == n)])))
def test_commands_needing_approval_refuse_without_confirm(name: str, cli: Any, world: Any) -> None:
    world.emulator.reset_requests()
    code, out, _ = cli(*name.split(), *WRITE_ARGS[name], "--json")
    assert code == 2 and _json(out)["error"]["code"] == "needs_confirm"
    assert world.emulator.request_count() == 0


def test_confirm_follows_the_approval_policy() -> None:
    # Moving a card is idempotent and not destructive: the MCP policy runs it without asking, so does the CLI.
    assert not needs_confirm(SPECS["deck_move_card"])
    assert needs_confirm(SPECS["files_write"]) and needs_confirm(SPECS["deck_create_card"])
    assert "--confirm" not in build_parser().parse_args(["deck", "move-card", "--help"][:2]).__dict__


def test_input_file_gives_nested_arguments_and_options_override(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "card.json"
    path.write_text(json.dumps({"board": "Product Launch", "stack": "To do", "title": "From a file",
                                "labels": ["urgent"]}))
    plan = _json(cli("deck", "create-card", "--input-file", str(path), "--title", "Overridden", "--dry-run",
                     "--json")[1])
    assert plan["arguments"]["title"] == "Overridden" and plan["arguments"]["labels"] == ["urgent"]
    path.write_text(json.dumps({"board": 1, "colour": "red"}))
    code, out, _ = cli("deck", "create-card", "--input-file", str(path), "--dry-run", "--json")
    assert code == 2 and "colour" in _json(out)["error"]["message"]


def test_a_missing_index_is_not_created(cli: Any, tmp_path: Path) -> None:
    typo = tmp_path / "typo.db"
    code, out, _ = cli("files", "grep", "install", "--index", str(typo), "--json")
    assert code == 2 and "no index" in _json(out)["error"]["message"]
    assert not typo.exists()


def test_large_text_goes_to_an_artifact(cli: Any, tmp_path: Path) -> None:
    code, out, _ = cli("files", "read", "--path", "/Documents/manual.pdf", "--limit", "30000", "--json")
    answer = _json(out)
    assert code == 0 and answer["content"] is None and answer["truncated"] is True
    (art,) = answer["artifacts"]
    assert Path(art["path"]).is_absolute() and Path(art["path"]).stat().st_size == art["size"] > 16_000
    assert art["mediaType"].startswith("text/plain") and art["summary"]
    code, out, _ = cli("files", "read", "--path", "/Documents/photo.png", "--json")
    (img,) = _json(out)["artifacts"]
    assert img["mediaType"] == "image/png" and Path(img["path"]).read_bytes()[:4] == b"\x89PNG"


def test_a_write_whose_answer_never_came_reports_an_unknown_outcome_with_its_request_id(private: Any) -> None:
    emu, env = private
    # The card is created, then the connection is dropped: the outcome is unknown to the client, never "failed".
    emu.faults.add(method="POST", path_prefix="/index.php/apps/deck/api/v1.0/boards/1/stacks/1/cards",
                   commit_then_timeout=True)
    done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "deck", "create-card", "--board", "1", "--stack", "1",
                           "--title", "Maybe made", "--confirm", "--json"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    error = json.loads(done.stdout)["error"]
    assert done.returncode == 1 and error["code"] == "unknown_outcome" and error["retry"] is False
    assert "request id: " in error["message"]
    posts = [p for m, p, _ in emu.requests if m == "POST" and p.endswith("/cards")]
    assert len(posts) == 1                                     # no second layer retried the write
    assert _cards_titled(emu, env, "Maybe made") == ["Maybe made"]   # it did happen: reading state says so


# -- batch -----------------------------------------------------------------------------------------------

@pytest.fixture
def private(tmp_path: Path) -> Iterator[tuple[Emulator, dict[str, str]]]:
    with Emulator() as emu:
        env = {**os.environ, **_env(emu, tmp_path), "PYTHONPATH": str(ROOT)}
        yield emu, env


def _cards_titled(emu: Emulator, env: dict[str, str], prefix: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "deck", "list", "--board", "1", "--limit", "200",
                           "--fields", "title", "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    return [c["title"] for c in json.loads(done.stdout)["items"] if c["title"].startswith(prefix)]


def test_a_batch_killed_midway_replays_nothing_completed(private: Any, tmp_path: Path) -> None:
    emu, env = private
    batch = tmp_path / "cards.json"
    batch.write_text(json.dumps({"board": "Product Launch", "cards": [
        {"id": f"item-{i}", "stack": "To do", "title": f"Batch card {i}"} for i in range(6)]}))
    argv = [sys.executable, "-m", "mcp_nextcloud", "deck", "create-cards", "--input-file", str(batch), "--confirm",
            "--json"]
    # Each card creation takes 0.4 s, so the kill lands in the middle of the batch.
    emu.faults.add(method="POST", path_prefix="/index.php/apps/deck/api/v1.0/boards/1/stacks/1/cards",
                   delay=0.4, times=100)
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    journal = Path(env["MCP_NEXTCLOUD_JOURNAL"])
    deadline = time.monotonic() + 60
    done = 0
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists():
            try:
                with sqlite3.connect(journal) as db:
                    done = db.execute("SELECT count(*) FROM items WHERE state='done'").fetchone()[0]
            except sqlite3.OperationalError:    # created a moment ago, its table not yet
                done = 0
            if done >= 2:
                break
        time.sleep(0.05)
    assert proc.poll() is None, "the batch finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _cards_titled(emu, env, "Batch card")
    assert 2 <= len(before) < 6
    emu.faults.clear()
    rerun = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    outcome = {o["id"]: o["outcome"] for o in json.loads(rerun.stdout)["items"]}
    assert sum(1 for o in outcome.values() if o == "done_before") >= 2
    assert set(outcome.values()) <= {"done_before", "reconciled", "created"}
    after = _cards_titled(emu, env, "Batch card")
    assert sorted(after) == [f"Batch card {i}" for i in range(6)]      # each exactly once
    again = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert {o["outcome"] for o in json.loads(again.stdout)["items"]} == {"done_before"}


def test_a_batch_is_validated_whole_before_any_write(private: Any, tmp_path: Path) -> None:
    emu, env = private
    batch = tmp_path / "cards.json"
    batch.write_text(json.dumps({"board": "Product Launch", "cards": [
        {"id": "ok", "stack": "To do", "title": "Fine"}, {"id": "bad", "stack": "No such column", "title": "X"}]}))
    emu.reset_requests()
    done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "deck", "create-cards", "--input-file", str(batch),
                           "--confirm", "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert "bad:" in error["message"] and "nothing was created" in error["message"]
    assert _writes(emu) == 0
    too_many = {"board": 1, "cards": [{"id": str(i), "stack": 1, "title": "t"} for i in range(101)]}
    batch.write_text(json.dumps(too_many))
    done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "deck", "create-cards", "--input-file", str(batch),
                           "--confirm"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "at most 100" in done.stderr


# -- pipes -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["manifest"], ["report"], ["help", "files", "search"]])
def test_a_closed_pipe_ends_quietly(argv: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "MCP_NEXTCLOUD_TELEMETRY": str(tmp_path / "calls.sqlite"), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", *argv], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()               # the reader went away before the first line (`| head -0`)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert err == "", err


def test_grep_into_a_closed_pipe_ends_quietly(world: Any, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CONFIG_HOME": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", "grep", "the", "--index", str(world.index_path)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and err == "", err


def test_example_lines_quote_like_a_shell() -> None:
    for cmd in TOOL_COMMANDS:
        line = " ".join(shlex.quote(a) for a in cmd.example)
        assert shlex.split(line) == list(cmd.example)


# -- what a new user tripped on ----------------------------------------------------------------------------

def test_login_names_a_malformed_address(cli: Any) -> None:
    code, _, err = cli("login", "not-a-url")
    assert code == 2 and "does not look like a web address" in err and "reach" not in err


def test_an_empty_file_search_still_says_how_many(cli: Any) -> None:
    code, out, _ = cli("files", "search", "--name", "zz-no-such-name-zz", "--json")
    answer = _json(out)
    assert code == 0 and answer["items"] == [] and answer["total"] == 0


def test_serve_http_says_nothing_about_serving_when_the_port_is_taken(world: Any, tmp_path: Path) -> None:
    import socket

    env = {**os.environ, **_env(world.emulator, tmp_path, world.index_path), "PYTHONPATH": str(ROOT),
           "MCP_NEXTCLOUD_CONFIG": str(tmp_path / "config" / "account.json"),
           "MCP_NEXTCLOUD_TELEMETRY": str(tmp_path / "calls.sqlite")}
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "serve", "--http", "--port", str(port),
                               "--interval", "0"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and f"127.0.0.1:{port} is already in use" in done.stderr
    assert "serving" not in done.stderr and "token" not in done.stderr


def test_demo_json_and_what_to_try_next() -> None:
    import io

    from mcp_nextcloud.cli.demo import NEXT_STEPS, run

    out = io.StringIO()
    assert run(query="quota", out=out, as_json=True) == 0
    report = json.loads(out.getvalue())
    assert report["tools"]["count"] == len(report["tools"]["names"]) and len(report["calls"]) == 9
    assert report["calls"][0]["answer"]["userId"] == "alice" and report["calls"][-1]["ok"] is False
    assert [n["command"] for n in report["next"]] == [c for c, _ in NEXT_STEPS]
    assert any("demo --serve" in c for c, _ in NEXT_STEPS)


def test_demo_serve_prints_a_configuration_that_works(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", "demo", "--serve", "--json"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        setup = json.loads(proc.stdout.readline())
        host = setup["host"]["mcpServers"]["nextcloud-demo"]
        assert host["env"] == setup["env"] and host["args"][-1] == "serve"
        # The Inspector line passes every variable with -e (it does not inherit the shell's environment).
        inspector = setup["inspector"]
        assert [inspector[i + 1] for i, a in enumerate(inspector) if a == "-e"] == \
            [f"{k}={v}" for k, v in setup["env"].items()]
        run_env = {**os.environ, **setup["env"], "PYTHONPATH": str(ROOT), "XDG_CONFIG_HOME": str(tmp_path)}
        who = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "whoami", "--json"], cwd=ROOT, env=run_env,
                             capture_output=True, text=True, timeout=60)
        assert json.loads(who.stdout)["userId"] == "alice", who.stderr
        grep = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "files", "grep", "install", "--json"], cwd=ROOT,
                              env=run_env, capture_output=True, text=True, timeout=60)
        assert any(h["path"] == "/Documents/manual.pdf" for h in json.loads(grep.stdout)["items"])
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


def _line(proc: Any, timeout: float) -> str:
    """The next stdout line of a running process, or a failure after `timeout` seconds (never a hang)."""
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        assert sel.select(timeout), f"no output within {timeout} s"
    return str(proc.stdout.readline())


def test_index_watch_json_streams_events(tmp_path: Path) -> None:
    folder = tmp_path / "watched"
    folder.mkdir()
    (folder / "a.txt").write_text("first heron")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", "index", "watch", str(folder), "--index",
                             str(tmp_path / "w.db"), "--json"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = json.loads(_line(proc, 60))
        assert first == {"event": "watching", "folder": str(folder), "files": 1}
        (folder / "b.txt").write_text("second heron")
        assert json.loads(_line(proc, 30)) == {"event": "indexed", "path": str(folder / "b.txt")}
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert json.loads(out.strip().splitlines()[-1]) == {"event": "stopped"} and "Traceback" not in err
