"""Helpers shared by test modules (import as `from tests.helpers import wait_for`)."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any, Callable


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, step: float = 0.05,
             what: str = "the condition") -> Any:
    """Poll `predicate` until it returns something truthy and return that; fail the test after `timeout` seconds.

    The timeout is a safety net for a hung test, never a measured bound: a
    slow, shared machine only makes a passing test take longer.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} was not reached within {timeout:g} s")
        time.sleep(step)


def failure_text(result: Any) -> str:
    """The text of a failed MCP call, after checking its structured error: code, cause, action and retry as
    fields, and the text the instruction made of them (the retry said from `retry`, never by hand)."""
    assert result.is_error, result.content[0].text
    text = result.content[0].text
    error = (result.structured_content or {}).get("error")
    assert isinstance(error, dict) and set(error) == {"code", "cause", "action", "retry"}, result.structured_content
    assert error["code"] and error["cause"] and text.startswith(error["cause"]) and error["action"] in text
    assert_retry_words(text, error["retry"])
    return text


def assert_retry_words(text: str, retry: bool) -> None:
    """The retry said once, in the error model's words (issue 37): "Retry once..." when it can help; else
    "Do not repeat this call unchanged." (a misuse: the action says how to change the call) or "Do not retry."
    (a refusal or a fault), never both, and never "Do not retry" in an answer that says to call again."""
    from mcp_nextcloud.nextcloud.errors import PLAIN

    if retry:
        assert text.endswith(PLAIN.retry_yes), text
        return
    assert text.endswith((PLAIN.retry_no, str(PLAIN.fix_no))), text
    assert not (PLAIN.retry_no.lower() in text.lower() and str(PLAIN.fix_no).lower() in text.lower()), text
    if "call again" in text.lower() or "call it again" in text.lower():
        assert PLAIN.retry_no.lower() not in text.lower(), text


Calls = list[tuple[str, dict[str, Any]]]


def list_and_call(server: Any, calls: Calls, as_profile: Any = None) -> tuple[list[str], list[Any]]:
    """Over an in-memory MCP client of `server`: the tool names it lists and the results of `calls`, made under
    `as_profile` when one is given (server/profile.py)."""
    import anyio
    from mcp import Client

    from mcp_nextcloud.server import profile

    async def go() -> tuple[list[str], list[Any]]:
        async with Client(server, mode="legacy") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            return names, [await client.call_tool(n, a) for n, a in calls]
    if as_profile is None:
        return anyio.run(go)
    with profile.using(as_profile):
        return anyio.run(go)


def caller(server: Any) -> Callable[[str, dict[str, Any]], Any]:
    """call(name, args) -> the result of one tool call over an in-memory MCP client of `server`."""
    def call(name: str, args: dict[str, Any]) -> Any:
        return list_and_call(server, [(name, args)])[1][0]
    return call


def serve_and_call(env: dict[str, str], calls: Calls, *, cwd: str, interval: float, stay_s: float) -> list[Any]:
    """Start `python -m mcp_nextcloud serve --interval N` over stdio in `cwd` with exactly `env`, make the calls,
    and keep
    it running `stay_s` seconds in all (so its background sync gets to run); the calls' results."""
    import sys

    import anyio
    from mcp import Client, StdioServerParameters

    argv = ["-m", "mcp_nextcloud", "serve", "--interval", f"{interval:g}"]
    params = StdioServerParameters(command=sys.executable, args=argv, env=env, cwd=cwd)

    async def go() -> list[Any]:
        started = time.monotonic()
        async with Client(params, mode="legacy") as client:
            results = [await client.call_tool(name, args) for name, args in calls]
            await anyio.sleep(max(0.0, stay_s - (time.monotonic() - started)))
            return results

    return anyio.run(go)


def cli_env(world: Any, tmp_path: Path, index: Path | None = None) -> dict[str, str]:
    """The variables a CLI run on the session's emulator needs: its account, an index (the session's unless
    named), private config/data/cache folders, the command run in this process (no index service)."""
    acct = world.emulator.account("alice")
    return {"NEXTCLOUD_URL": acct["url"], "NEXTCLOUD_USER": acct["user"],
            "NEXTCLOUD_APP_PASSWORD": acct["app_password"], "MCP_NEXTCLOUD_SERVICE": "0",
            "MCP_NEXTCLOUD_INDEX": str(index or world.index_path),
            "MCP_NEXTCLOUD_JOURNAL": str(tmp_path / "journal.db"),
            "MCP_NEXTCLOUD_ARTIFACTS": str(tmp_path / "artifacts"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def stop(proc: "subprocess.Popen[Any]", timeout: float = 10) -> None:
    """End a process a test started: asked first, killed when it does not end within `timeout` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
