"""Helpers shared by test modules (import as `from tests.helpers import wait_for`)."""
from __future__ import annotations

import time
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
    assert text.endswith("Retry once; if it fails again, stop and report." if error["retry"] else "Do not retry.")
    return text
