"""The CLI's one failure renderer: a failure -> its JSON, its words for a person, its exit code.

Every command reports a failure through `report()`, whatever raised it: a
`CliError` (the CLI's own checks), a tool's `ToolFailure`, a `NextcloudError`
from the one table, a `ReaderError`, or a plain exception carrying a message.
All become one `Failure` with the same fields a tool's structured error holds
(`code`, `cause`, `action`, `retry`), and

- with --json: `{"error": {"code", "cause", "action", "retry", "message"}}` on
  stdout (an agent parses one stream), nothing on stderr;
- without: one line on stderr, worded for the person at the terminal (their
  own step reads "Run `...`"; the retry is said only when it can help);
- the exit code follows the failure's category (documented in `EXIT_CODES`,
  shown by `mcp-nextcloud --help`).

Cheap to import: the error table (no httpx, no reader) is loaded only when a
failure is worded, so a command that meets none does not pay for it.
"""
from __future__ import annotations

import json
import sys

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

    from mcp_nextcloud.nextcloud.errors import Voice

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

# The exit codes every command shares (`mcp-nextcloud --help` prints this; sync and jobs add 75).
EXIT_CODES = """\
Exit codes:
  0    done
  1    failed: Nextcloud or this machine refused or broke (with --json, "retry" says whether trying
       again can help)
  2    misuse: fix the command, its arguments or the setup (a wrong argument, an unknown id, no index,
       no account configured)
  75   a sync or job is still running (index sync --wait, jobs wait)
  130  interrupted"""

# How the person at the terminal hears a failure: their own step is a command they run; the retry is said
# when it can help, and not at all when it cannot (the cause and the next step already say what to do).
RETRY_HELPS = "Trying again in a moment may help."


def person_voice() -> Voice:
    from mcp_nextcloud.nextcloud.errors import Voice

    return Voice("Run", RETRY_HELPS, "")


class CliError(Exception):
    """A failure the CLI itself finds; `usage` means the command was wrong (misuse, exit 2, nothing was done).

    `message` is the cause and the next action written as one text (its first sentence is the cause), or
    give `action` apart. `status` is its code.
    """

    def __init__(self, message: str, *, usage: bool = False, status: str | None = None,
                 kind: str | None = None, retry: bool = False, action: str | None = None,
                 source: BaseException | None = None) -> None:
        super().__init__(message)
        self.source = source    # the table's error a tool failure came from: worded here from its parts
        self.message, self.action = message, action
        self.usage = usage
        self.status = status or ("bad_argument" if usage else "failed")
        self.kind = kind or ("misuse" if usage else "fault")
        self.retry = retry


class Failure:
    """One failure as every front end of the CLI shows it."""

    def __init__(self, code: str, category: str, cause: str, action: str = "", retry: bool = False) -> None:
        from mcp_nextcloud.nextcloud.errors import sentence

        self.code, self.category, self.retry = code, category, retry
        self.cause, self.action = sentence(cause), sentence(action)

    def words(self) -> str:
        """The instruction for a person: cause, next action, and the retry when it can help."""
        return " ".join(p for p in (self.cause, self.action, RETRY_HELPS if self.retry else "") if p)

    def fields(self) -> dict[str, Any]:
        return {"code": self.code, "cause": self.cause, "action": self.action, "retry": self.retry,
                "message": self.words()}

    @property
    def exit_code(self) -> int:
        return EXIT_USAGE if self.category == "misuse" else EXIT_FAILED


def failure_of(err: BaseException) -> Failure:
    """Any failure as the one shape: its code, category, cause, action and retry."""
    from mcp_nextcloud.nextcloud.errors import NextcloudError, split_instruction

    if isinstance(err, NextcloudError):
        return Failure(err.code.value, err.category.value, err.cause_in(), err.action_in(person_voice()), err.retry)
    source = getattr(err, "source", None)   # a ToolFailure made from a NextcloudError: word the table's parts
    if isinstance(source, NextcloudError):
        failure = failure_of(source)
        failure.category = str(getattr(err, "kind", None) or failure.category)
        return failure
    if isinstance(err, CliError):
        cause, action = (err.message, err.action) if err.action is not None else split_instruction(err.message)
        return Failure(err.status, err.kind, cause, action, err.retry)
    code: Any = getattr(err, "code", None)
    part_cause, part_action = getattr(err, "cause", None), getattr(err, "action", None)
    if isinstance(part_cause, str) and isinstance(part_action, str):   # a ToolFailure, a ReaderError
        category = getattr(err, "kind", None) or getattr(err, "category", "fault")
        return Failure(str(getattr(code, "value", code) or "failed"), str(category), part_cause, part_action,
                       bool(getattr(err, "retry", False)))
    cause, action = split_instruction(str(err))
    if isinstance(err, LookupError):     # an unknown id (a job, a token): the command named something not there
        return Failure("not_found", "misuse", cause, action)
    if isinstance(err, ValueError):      # an argument the command cannot use
        return Failure("bad_argument", "misuse", cause, action)
    return Failure("failed", "fault", cause, action)


def report(err: BaseException, as_json: bool, prog: str = "mcp-nextcloud") -> int:
    """Print a failure (JSON on stdout with --json, else one line on stderr) and return its exit code."""
    failure = failure_of(err)
    if as_json:
        print(json.dumps({"error": failure.fields()}, separators=(",", ":"), ensure_ascii=False))
    else:
        print(f"{prog}: {failure.words()}", file=sys.stderr)
    return failure.exit_code


def person_text(err: BaseException) -> str:
    """The instruction for a person: cause, next step, and whether trying again helps."""
    return failure_of(err).words()


