"""Fuzz every tool with random JSON arguments (issue 10): each answer is a result or an error from the
table - never an internal error, never an answer without text.

Runs on its own emulator and an empty index (random writes and shares must not disturb other tests), and
through one real in-process MCP Client session, so arguments take the path a host's do. The tool list is
read from the server, so tools added later are fuzzed too.
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterator

import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "100")), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# Statuses that mean "our side broke": the only ones a fuzzed call may never produce.
INTERNAL = {"internal", "tool_error"}


@pytest.fixture(scope="module")
def fuzz_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from mcp import Client

    from mcp_nextcloud.fixtures.emulator.server import Emulator
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.config import Account
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext, Settings
    from mcp_nextcloud.server.telemetry import CallLog

    tmp = tmp_path_factory.mktemp("fuzz")
    with Emulator() as emu:
        creds = emu.account("alice")
        account = Account(url=creds["url"], user=creds["user"], app_password=creds["app_password"])
        ctx = ServerContext(account=account, index=Index.open(tmp / "index.db"),
                            telemetry=CallLog(tmp / "calls.sqlite"), settings=Settings(freshness_interval_s=3600))
        server = build_server(ctx)
        with start_blocking_portal() as portal:
            client = portal.wrap_async_context_manager(Client(server, mode="legacy"))
            with client as session:
                tools = {t.name: t for t in portal.call(session.list_tools).tools}
                yield portal, session, tools, ctx
        ctx.close()


# Values the hostile test found trouble with, drawn as often as all random JSON together.
HOSTILE = st.sampled_from(["", "/", "/Documents", "/Documents/manual.md", "/Documents/\udc80.md", "..",
                           "/../etc/passwd", "*", '"x", *', "\udc80", "a\x00b", "caf\u00e9", "ab\x07cd",
                           'W/"1"', "2025-01-31", "read", "edit", "bob", "alice", "outline", "x" * 60_000,
                           "9" * 100_000, "%", "[", "\\", -1, 0, 2**63, 10**30, 1e308, True, None])
JSON_SCALARS = (st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
                | st.floats(allow_nan=False) | st.text(max_size=60))
JSON_VALUES = HOSTILE | st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=4)
                                     | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=8)


# A valid value for arguments a tool requires, so a call with one hostile value reaches the tool's code.
VALID = {"query": "budget", "content": "fuzz", "shareWith": "bob"}


def _arguments(tool: Any) -> st.SearchStrategy[dict[str, Any]]:
    """One hostile or random value on an otherwise valid call, or many random ones, sometimes an unknown name."""
    schema = tool.input_schema or {}
    names = sorted(schema.get("properties", {}))
    base = {name: VALID.get(name, "x") for name in schema.get("required", [])}
    if not names:
        return st.dictionaries(st.sampled_from(["zzz", ""]), JSON_VALUES, max_size=1)
    one = st.builds(lambda k, v: {**base, k: v}, st.sampled_from(names), JSON_VALUES)
    own = st.fixed_dictionaries({}, optional={n: JSON_VALUES for n in names})
    extra = st.dictionaries(st.sampled_from(["zzz", "offest", "Path", ""]), JSON_VALUES, max_size=1)
    many = st.builds(lambda a, b: {**base, **a, **b}, own, st.one_of(st.just({}), st.just({}), extra))
    return st.one_of(one, one, one, many)


def _check(name: str, args: dict[str, Any], result: Any, ctx: Any) -> None:
    assert result.content and result.content[0].text, (name, args)
    text = result.content[0].text
    if not result.is_error:
        payload = json.loads(text)
        assert payload == result.structured_content, (name, args)
        return
    row = ctx.telemetry.rows()[-1]
    assert row["tool"] == name
    assert row["status"] not in INTERNAL, (name, args, text)
    assert "internal error" not in text, (name, args, text)
    assert len(text) < 2000, (name, len(text))


FILE_TOOLS = ["files_search", "files_grep", "files_read", "files_write", "files_share_internal",
              "nextcloud_whoami"]


def _registered_tools() -> list[str]:
    """Every tool build_server registers (listing needs no account or index): tools added later are fuzzed too."""
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    server = build_server(ServerContext(account=None, index=None))
    return sorted(t.name for t in server._tool_manager.list_tools())


ALL_TOOLS = _registered_tools()
# The file tools get the full run; the others a shorter one each (there are many, and the budget is shared).
OTHER_EXAMPLES = int(os.environ.get("FUZZ_OTHER_EXAMPLES", "25"))


def test_the_fuzzed_tools_are_every_tool(fuzz_session):
    _, _, tools, _ = fuzz_session
    assert set(FILE_TOOLS) <= set(tools) and set(ALL_TOOLS) == set(tools)


@pytest.mark.parametrize("name", ALL_TOOLS)
def test_random_json_arguments_never_cause_an_internal_error(fuzz_session, name):
    portal, session, tools, ctx = fuzz_session
    budget = FUZZ if name in FILE_TOOLS else settings(FUZZ, max_examples=OTHER_EXAMPLES)

    @budget
    @given(args=_arguments(tools[name]))
    def run(args: dict[str, Any]) -> None:
        result = portal.call(session.call_tool, name, args)
        _check(name, args, result, ctx)

    run()
