"""Tool-layer errors: every failure a tool raises is a `ToolFailure` whose text is an instruction.

Nextcloud's answers come from the one table in `nextcloud/errors.py`; the
reader's from `ReaderError`; the tool layer adds its own misuse cases (an
unknown fileId, an offset past the end, a bad argument). Each carries the
telemetry kind (ok / refused / misuse / fault) and a short status, so the
call log can say *why* calls fail without storing what was asked.
"""
from __future__ import annotations

import re
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

DO_NOT_RETRY = "Do not retry."


class ToolFailure(ToolError):
    """A failure the model can act on: `str()` is cause + next action + retry statement."""

    def __init__(self, message: str, *, kind: str, status: str | int) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = str(status)


def misuse(message: str, *, status: str = "bad_argument") -> ToolFailure:
    """A wrong argument, a guessed identifier or an impossible request; the message must say what to do."""
    return ToolFailure(message, kind="misuse", status=status)


def refused(message: str, *, status: str) -> ToolFailure:
    """The system working as intended said no (too large, binary file, unreadable document)."""
    return ToolFailure(message, kind="refused", status=status)


# The client's table serves the CLI too: its "Run `mcp-nextcloud login URL`" is a step only the person at
# the machine can take. A tool answer hands it to them, so the agent never tries to run it itself.
_CLI_STEP = re.compile(r"\b[Rr]un (`mcp-nextcloud )")
_TELL_USER = r"Tell the user (no tool can do this) to run \1"


def tool_text(text: str) -> str:
    """An instruction fit for a tool answer: a CLI step becomes something to tell the user."""
    return _CLI_STEP.sub(_TELL_USER, text)


def from_nextcloud(err: Any) -> ToolFailure:
    """A `nextcloud.errors.NextcloudError` as a tool failure (its text is already the instruction)."""
    status = err.status if getattr(err, "status", None) is not None else getattr(err, "kind", "nextcloud")
    return ToolFailure(tool_text(str(err)), kind=getattr(err, "category", "fault"), status=status)


# Reader codes that mean "our side broke or ran out of time" rather than "this file cannot be read".
_READER_FAULTS = {"timeout", "crashed", "internal", "memory"}


def from_reader(err: Any) -> ToolFailure:
    """A `reader.ReaderError` (str = the instruction, .code) as a tool failure."""
    code = getattr(err, "code", "unreadable")
    return ToolFailure(str(err), kind="fault" if code in _READER_FAULTS else "refused", status=code)


def unknown_file_id(file_id: int) -> ToolFailure:
    return misuse(f"No file with fileId {file_id} exists in this account (or it is not visible to it). "
                  "Call files_search to find the file and use the path or fileId it returns. "
                  "Do not guess identifiers; do not retry this fileId.", status="unknown_file_id")


def validation_message(tool: str, errors: list[dict[str, Any]]) -> str:
    """A pydantic argument error as one instruction line, without echoing the rejected values."""
    parts = []
    for e in errors[:5]:
        loc = ".".join(str(p) for p in e.get("loc", ())) or "arguments"
        msg = str(e.get("msg", "invalid value"))
        if e.get("type") == "missing":
            msg = "is required"
        elif e.get("type") == "extra_forbidden":
            msg = "is not an argument of this tool"
        parts.append(f"{loc}: {msg}")
    return (f"Invalid arguments for {tool}: " + "; ".join(parts)
            + ". Fix the arguments as the tool's schema describes and call again; "
              "do not retry unchanged.")
