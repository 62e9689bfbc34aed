"""Calls into the hostile world (tests/hostile_world.py) with a time limit, and what each one did.

A hostile call may never return (an RRULE expansion that spins, memory
growing): run in-process it would take the test run with it. So the tools
run in a child (`python -m tests.hostile_world`) that answers one JSON line
per call, and `HostileClient` kills it when a call passes its time limit (a
hang, counted) and starts a fresh one for the next.
"""
from __future__ import annotations

import json
import os
import re
import selectors
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
INTERNAL = {"internal", "tool_error"}


@dataclass
class Outcome:
    """One call's result and what it left behind."""

    tool: str
    args: Any
    kind: str                 # ok, misuse, refused, fault, or hung
    status: str = ""
    text: str = ""
    ms: float = 0.0
    stored_controls: int = 0
    multi_address: int = 0
    rooms_left: int = 0
    header_crlf: int = 0
    listing: str = ""         # after an accepted write: ok, or what broke
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        return self.kind == "fault" and self.status in INTERNAL or "internal error" in self.text

    def names_an_argument(self) -> bool:
        """A refusal names one of the call's arguments, by name or by quoting its whole value (or takes none)."""
        args = self.args if isinstance(self.args, dict) else {}
        if not args or any(re.search(rf"\b{re.escape(n)}\b", self.text) for n in args):
            return True
        values = [v for v in args.values() if isinstance(v, (str, int)) and not isinstance(v, bool)]
        return any(len(str(v)) >= 3 and str(v) in self.text for v in values)


class HostileClient:
    """Calls into a child world; a call past `timeout_s` is a hang: the child is killed and replaced."""

    def __init__(self, timeout_s: float = 20.0, start_timeout_s: float = 120.0) -> None:
        self.timeout_s = timeout_s
        self.start_timeout_s = start_timeout_s
        self.proc: subprocess.Popen[str] | None = None
        self.base: dict[str, dict[str, Any]] = {}
        self.foreign: dict[str, list[Any]] = {}
        self.restarts = 0

    def __enter__(self) -> "HostileClient":
        self._start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop()

    def _start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.hostile_world"], cwd=str(ROOT), env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, start_new_session=True)
        hello = self._read(self.start_timeout_s)
        if hello is None:
            self._stop()
            raise RuntimeError("the hostile world did not start")
        data = json.loads(hello)
        self.base, self.foreign = data["base"], data["foreign"]

    def _stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)   # our own child's process group (start_new_session)
        proc.wait(timeout=30)

    def _read(self, timeout: float) -> str | None:
        assert self.proc is not None and self.proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout):
                return None
        line = self.proc.stdout.readline()
        return line or None

    def call(self, tool: str, args: Any, *, listing: bool = True) -> Outcome:
        if self.proc is None or self.proc.poll() is not None:
            self.restarts += 1
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"tool": tool, "args": args, "listing": listing}) + "\n")
        self.proc.stdin.flush()
        line = self._read(self.timeout_s)
        if line is None:
            self._stop()
            return Outcome(tool, args, "hung", text=f"no answer within {self.timeout_s:g} s (call or listing)")
        reply = json.loads(line)
        if "harness_error" in reply:
            raise RuntimeError(f"harness: {reply['harness_error']} on {tool}")
        return Outcome(**reply)
