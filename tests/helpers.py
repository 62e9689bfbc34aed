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
