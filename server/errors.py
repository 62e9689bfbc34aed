"""Tool-layer errors: every failure a tool raises is a `ToolFailure` whose text is an instruction for an agent.

One model, three sources, matched with `isinstance`:

- `nextcloud.errors.NextcloudError` (the one table: code, cause, action,
  user step, retry statement) is worded here for an agent: a step only the
  person can take becomes something to tell the user;
- `reader.ReaderError` (a ReaderCode; its text is the instruction);
- the tool layer's own cases (`misuse`, `refused`: a wrong argument, a
  guessed id, a file over a cap).

Each failure carries the telemetry kind (refused / misuse / fault) and a short
status, so the call log can say *why* calls fail without storing what was
asked. The CLI words the same errors for a person (`server/cli/errors.py`).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from mcp.server.mcpserver.exceptions import ToolError

from nextcloud.errors import NextcloudError
from reader.document import ReaderCode, ReaderError

DO_NOT_RETRY = "Do not retry."

# How a tool answer introduces a step only the person at the machine can take: the agent must not try
# to run it itself (it has no shell), it hands it to the user.
TELL_USER = "Tell the user (no tool can do this) to run"


class ToolFailure(ToolError):
    """A failure the model can act on: `str()` is cause + next action + retry statement.

    `kind` (refused / misuse / fault) and `status` feed the call log; `retry` says whether
    retrying can help (the text says so too: this is for programs).
    """

    def __init__(self, message: str, *, kind: str, status: str | int, retry: bool = False,
                 cause: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = str(status)
        self.retry = retry
        self.cause = cause   # the cause alone, when the failure came from the error table


def misuse(message: str, *, status: str = "bad_argument") -> ToolFailure:
    """A wrong argument, a guessed identifier or an impossible request; the message must say what to do."""
    return ToolFailure(message, kind="misuse", status=status)


def refused(message: str, *, status: str) -> ToolFailure:
    """The system working as intended said no (too large, binary file, unreadable document)."""
    return ToolFailure(message, kind="refused", status=status)


def agent_text(err: NextcloudError) -> str:
    """A Nextcloud error's instruction worded for an agent."""
    return err.render(TELL_USER)


def from_nextcloud(err: NextcloudError) -> ToolFailure:
    """A `NextcloudError` as a tool failure, worded for an agent."""
    status = err.status if err.status is not None else err.code.value
    return ToolFailure(agent_text(err), kind=err.category.value, status=status, retry=err.retry, cause=err.cause)


def nextcloud_call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a client call; a NextcloudError becomes the tool failure carrying its instruction."""
    try:
        return fn(*args, **kwargs)
    except NextcloudError as exc:
        raise from_nextcloud(exc) from None


# The reader knows no tools (it is pure); where a tool can do something about its refusal, the answer says so.
_READER_TOOL_STEP = {
    ReaderCode.TOO_LARGE: "files_grep finds passages in it if it is indexed.",
}


def from_reader(err: ReaderError) -> ToolFailure:
    """A `ReaderError` as a tool failure (its text is the instruction, its code the status)."""
    text = str(err)
    step = _READER_TOOL_STEP.get(err.code)
    if step:
        text = f"{text.rstrip('.')}. {step}"
    return ToolFailure(text, kind=err.category, status=err.code.value, retry=err.retry)


def as_tool_failure(exc: BaseException) -> ToolFailure | None:
    """Any error of the model as a tool failure; None for anything else (a crash, a bug)."""
    if isinstance(exc, ToolFailure):
        return exc
    if isinstance(exc, NextcloudError):
        return from_nextcloud(exc)
    if isinstance(exc, ReaderError):
        return from_reader(exc)
    return None


def unknown_file_id(file_id: int) -> ToolFailure:
    return misuse(f"No file with fileId {file_id} exists in this account (or it is not visible to it). "
                  "Call files_search to find the file and use the path or fileId it returns. "
                  "Do not guess identifiers; do not retry this fileId.", status="unknown_file_id")


def validation_message(tool: str, errors: Sequence[Mapping[str, Any]]) -> str:
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
