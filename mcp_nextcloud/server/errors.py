"""Tool-layer errors: every failure a tool raises is a `ToolFailure` whose text is an instruction for an agent.

One model, three sources, matched with `isinstance`:

- `nextcloud.errors.NextcloudError` (the one table: code, cause, action,
  user step, retry) is worded here for an agent (the `AGENT` voice): a step
  only the person can take becomes something to tell the user;
- `reader.ReaderError` (a ReaderCode, a cause, an action and `retry`);
- `indexer.errors.IndexerError` (a request the index refuses: its code, cause
  and action);
- the tool layer's own cases (`misuse`, `refused`: a wrong argument, a
  guessed id, a file over a cap).

A failure carries `code`, `cause`, `action` and `retry` as fields: the MCP
answer's structuredContent `{"error": {...}}` and the CLI's JSON hold them, and
each front end words the retry from `retry` (no message writes it by hand).
It also carries the table's `Category` (refused / misuse / fault, for
telemetry and the CLI's exit code) and a short status, so the call log can say *why* calls fail without storing what was
asked. The CLI words the same failures for a person (`cli/errors.py`).
"""
from __future__ import annotations

from mcp_nextcloud.server.status import ToolStatus

import dataclasses
from typing import Any, Mapping, Sequence

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from mcp_nextcloud.indexer.errors import IndexerError, reader_category
from mcp_nextcloud.nextcloud.errors import PLAIN, Category, NextcloudError, instruction, split_instruction
from mcp_nextcloud.nextcloud.errors import sentence as _sentence
from mcp_nextcloud.reader.document import ReaderCode, ReaderError
from mcp_nextcloud.server.status import Status

# How a tool answer words what only a front end can say. A step only the person at the machine can take:
# the agent must not try to run it itself (it has no shell), it hands it to the user. The retry: said
# explicitly, from the failure's `retry` field (no message writes it by hand).
TELL_USER = "Tell the user (no tool can do this) to run"
AGENT = dataclasses.replace(PLAIN, step_lead=TELL_USER)   # the retry worded as in the library's plain voice

class ToolFailure(ToolError):
    """A failure the model can act on: `code`, `cause`, `action` and `retry` as fields; `str()` is the
    instruction worded for an agent (cause, next action, the retry said from `retry`).

    `status` is why, an enum member compared by identity (`server.status`): the tool layer's own
    `ToolStatus`, or the code of the layer the failure came from; `code` is its name on the wire. `category`
    (the table's Category) and `logged_status` (the HTTP status where Nextcloud gave one, else the code) feed
    the call log.
    """

    def __init__(self, cause: str, action: str | None = None, *, category: Category, status: Status,
                 retry: bool = False, http_status: int | None = None, source: NextcloudError | None = None) -> None:
        if action is None:
            cause, action = split_instruction(cause)
        self.cause, self.action, self.retry = cause.strip(), action.strip(), retry
        self.category = category
        self.status: Status = status
        self.code: str = status.value
        self.http_status = http_status
        self.source = source   # the table's error it came from: another front end words its parts itself
        super().__init__(self.text)

    @property
    def logged_status(self) -> str:
        """What the call log keeps: the HTTP status Nextcloud answered, else the code."""
        return str(self.http_status) if self.http_status is not None else self.code

    def reworded(self, action: str) -> ToolFailure:
        """The same failure with another next step (one the tool layer knows better than the source's: the
        source is dropped, so a front end words this action, not the source's)."""
        return ToolFailure(self.cause, action, category=self.category, status=self.status, retry=self.retry,
                           http_status=self.http_status)

    @property
    def text(self) -> str:
        return instruction(self.cause, self.action, self.retry, AGENT, self.category)

    def fields(self) -> dict[str, Any]:
        """The structured error of a tool result (and of the CLI's JSON)."""
        return {"code": self.code, "cause": _sentence(self.cause), "action": _sentence(self.action),
                "retry": self.retry}

    def result(self) -> CallToolResult:
        """The MCP answer: the instruction as text, its fields as structuredContent's `error`."""
        return CallToolResult(content=[TextContent(type="text", text=self.text)],
                              structured_content={"error": self.fields()}, is_error=True)


def misuse(message: str, *, status: ToolStatus = ToolStatus.BAD_ARGUMENT) -> ToolFailure:
    """A wrong argument, a guessed identifier or an impossible request; the message must say what to do."""
    return ToolFailure(message, category=Category.MISUSE, status=status)


def refused(message: str, *, status: Status) -> ToolFailure:
    """The system working as intended said no (too large, binary file, unreadable document)."""
    return ToolFailure(message, category=Category.REFUSED, status=status)


def agent_text(err: NextcloudError) -> str:
    """A Nextcloud error's instruction worded for an agent."""
    return err.render(AGENT)


def from_nextcloud(err: NextcloudError) -> ToolFailure:
    """A `NextcloudError` as a tool failure, worded for an agent."""
    return ToolFailure(err.cause_in(), err.action_in(AGENT), category=err.category, status=err.code,
                       retry=err.retry, http_status=err.status, source=err)


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
    """A `ReaderError` as a tool failure: its cause, action and retry, its code the status (the agent voice
    words the retry)."""
    action = err.action[:1].upper() + err.action[1:]   # the reader writes "cause: action"; here two sentences
    step = _READER_TOOL_STEP.get(err.code)
    if step:
        action = f"{_sentence(action)} {step}".strip()
    return ToolFailure(err.cause, action, category=reader_category(err.code), status=err.code, retry=err.retry)


def from_indexer(err: IndexerError) -> ToolFailure:
    """An `IndexerError` (a request the index refuses) as a tool failure, its code the status."""
    action = err.action[:1].upper() + err.action[1:]
    return ToolFailure(err.cause, action, category=err.category, status=err.code, retry=err.retry)


def as_tool_failure(exc: BaseException) -> ToolFailure | None:
    """Any error of the model as a tool failure; None for anything else (a crash, a bug)."""
    if isinstance(exc, ToolFailure):
        return exc
    if isinstance(exc, NextcloudError):
        return from_nextcloud(exc)
    if isinstance(exc, ReaderError):
        return from_reader(exc)
    if isinstance(exc, IndexerError):
        return from_indexer(exc)
    return None


def unknown_file_id(file_id: int) -> ToolFailure:
    return misuse(f"No file with fileId {file_id} exists in this account (or it is not visible to it). "
                  "Call files_search to find the file and use the path or fileId it returns; "
                  "do not guess identifiers.", status=ToolStatus.UNKNOWN_FILE_ID)


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
    return f"Invalid arguments for {tool}: " + "; ".join(parts)


FIX_ARGUMENTS = "Fix the arguments as the tool's schema describes and call again"


def invalid_arguments(tool: str, errors: Sequence[Mapping[str, Any]]) -> ToolFailure:
    """A pydantic argument error as a misuse failure (the values are not echoed: they are the caller's data)."""
    return ToolFailure(validation_message(tool, errors), FIX_ARGUMENTS, category=Category.MISUSE,
                       status=ToolStatus.BAD_ARGUMENT)
