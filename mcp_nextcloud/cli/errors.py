"""The CLI's one failure renderer: a failure -> its JSON, its words for a person, its exit code.

Every command reports a failure through `report()`, whatever raised it: a
`CliError` (the CLI's own checks), a tool's `ToolFailure`, a `NextcloudError`
from the one table, a `ReaderError`, an `IndexerError` (a request the index
refuses), or a plain exception carrying a message.
All become one `Failure` with the same fields a tool's structured error holds
(`code`, `cause`, `action`, `retry`), and

- with --json: `{"error": {"code", "cause", "action", "retry", "message"}}` on
  stdout (an agent parses one stream), nothing on stderr;
- without: one line on stderr, worded for the person at the terminal (their
  own step reads "Run `...`"; the retry is said only when it can help);
- the exit code follows the failure's category (documented in `EXIT_CODES`,
  shown by `mcp-nextcloud --help`).

The category is the one table's `Category` (nextcloud.errors), whatever the
source: a `ReaderError`'s comes from `indexer.errors.reader_category`, an
`IndexerError` says its own.
"""
from __future__ import annotations

import json
from typing import Any

from mcp_nextcloud.indexer.errors import IndexerError, reader_category
from mcp_nextcloud.nextcloud.errors import Category, NextcloudError, Voice, instruction, sentence, split_instruction
from mcp_nextcloud.reader.document import ReaderError
from mcp_nextcloud.cli.console import stderr, stdout
from mcp_nextcloud.cli.voice import for_person

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


PERSON = Voice("Run", RETRY_HELPS, "")


class CliError(Exception):
    """A failure the CLI itself finds; `usage` means the command was wrong (misuse, exit 2, nothing was done).

    `message` is the cause and the next action written as one text (its first sentence is the cause), or
    give `action` apart. `status` is its code; `category` defaults from `usage` (MISUSE, else FAULT).
    """

    def __init__(self, message: str, *, usage: bool = False, status: str | None = None,
                 category: Category | None = None, retry: bool = False, action: str | None = None,
                 source: BaseException | None = None, spoken: bool = True) -> None:
        super().__init__(message)
        self.spoken = spoken    # False: a tool's words (for an agent), said again in the person's voice
        self.source = source    # the table's error a tool failure came from: worded here from its parts
        self.message, self.action = message, action
        self.usage = usage
        self.status = status or ("bad_argument" if usage else "failed")
        self.category = category or (Category.MISUSE if usage else Category.FAULT)
        self.retry = retry


class Failure:
    """One failure as every front end of the CLI shows it."""

    def __init__(self, code: str, category: Category, cause: str, action: str = "", retry: bool = False) -> None:
        self.code, self.category, self.retry = code, category, retry
        # said with the CLI's commands and flags, never a tool's names (cli/voice.py)
        self.cause, self.action = sentence(cause), sentence(action)

    def for_person(self) -> "Failure":
        """This failure said with the CLI's commands and flags, never a tool's names (cli/voice.py)."""
        self.cause, self.action = for_person(self.cause), for_person(self.action)
        return self

    def words(self) -> str:
        """The instruction for a person: cause, next action, and the retry when it can help."""
        return instruction(self.cause, self.action, self.retry, PERSON)

    def fields(self) -> dict[str, Any]:
        return {"code": self.code, "cause": self.cause, "action": self.action, "retry": self.retry,
                "message": self.words()}

    @property
    def exit_code(self) -> int:
        return EXIT_USAGE if self.category is Category.MISUSE else EXIT_FAILED


def _capitalised(text: str) -> str:
    # the reader and the indexer write "cause: action"; shown as two sentences, the action starts a sentence
    return text[:1].upper() + text[1:]


# The failures that mean the server was not reached: the person sees which address was tried.
UNREACHED = ("network", "timeout")


def _tried(err: NextcloudError) -> str:
    """" Tried https://cloud.example.com." for a server not reached: the configured base URL, never its
    credentials (user info, query and fragment dropped); "" for any other failure or no account."""
    if err.code.value not in UNREACHED:
        return ""
    from mcp_nextcloud.nextcloud.config import load_account

    try:
        account = load_account()
    except (NextcloudError, OSError, ValueError):
        return ""
    return f" Tried {base_url(account.url)}." if account is not None else ""


def base_url(url: str) -> str:
    """A server address as it may be shown: scheme, host, port and path; no user, password, query or fragment."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path.rstrip('/')}" if parts.scheme else url.split("@")[-1]


def failure_of(err: BaseException) -> Failure:
    """Any failure as the one shape: its code, category, cause, action and retry; words from a tool or the
    library are said in the person's voice, the CLI's own words (a CliError) are already."""
    failure = _failure_of(err)
    return failure if isinstance(err, CliError) and err.spoken else failure.for_person()


def _failure_of(err: BaseException) -> Failure:
    if isinstance(err, NextcloudError):
        return Failure(err.code.value, err.category, err.cause_in() + _tried(err), err.action_in(PERSON), err.retry)
    source = getattr(err, "source", None)   # a ToolFailure made from a NextcloudError: word the table's parts
    if isinstance(source, NextcloudError):
        failure = _failure_of(source)
        category = getattr(err, "category", None)
        failure.category = category if isinstance(category, Category) else failure.category
        return failure
    if isinstance(err, CliError):
        cause, action = (err.message, err.action) if err.action is not None else split_instruction(err.message)
        return Failure(err.status, err.category, cause, action, err.retry)
    if isinstance(err, ReaderError):
        return Failure(err.code.value, reader_category(err.code), err.cause, _capitalised(err.action), err.retry)
    if isinstance(err, IndexerError):
        return Failure(err.code.value, err.category, err.cause, _capitalised(err.action), err.retry)
    category = getattr(err, "category", None)
    if isinstance(category, Category):   # a ToolFailure: the tool layer's parts (server.errors)
        return Failure(str(getattr(err, "code", "failed")), category, str(getattr(err, "cause", "")),
                       str(getattr(err, "action", "")), bool(getattr(err, "retry", False)))
    cause, action = split_instruction(str(err))
    if isinstance(err, LookupError):     # an unknown id (a job, a token): the command named something not there
        return Failure("not_found", Category.MISUSE, cause, action)
    if isinstance(err, ValueError):      # an argument the command cannot use
        return Failure("bad_argument", Category.MISUSE, cause, action)
    return Failure("failed", Category.FAULT, cause, action)


def report(err: BaseException, as_json: bool, prog: str = "mcp-nextcloud") -> int:
    """Print a failure (JSON on stdout with --json, else one line on stderr) and return its exit code."""
    failure = failure_of(err)
    if as_json:
        print(json.dumps({"error": failure.fields()}, separators=(",", ":"), ensure_ascii=False), file=stdout())
    else:
        print(f"{prog}: {failure.words()}", file=stderr())
    return failure.exit_code


def stored_words(text: str) -> str:
    """An instruction the library stored as text in its plain voice (a failed job's error), as a person hears
    it: the retry in the person's words, the address tried when the server was not reached, flags for names."""
    from mcp_nextcloud.nextcloud.errors import PLAIN, error_for

    text = text.replace(PLAIN.retry_yes, RETRY_HELPS).replace(PLAIN.retry_no, "").strip()
    for condition in UNREACHED:
        unreached = error_for("webdav", None, condition=condition)
        if text.startswith(sentence(unreached.cause)):
            cut = len(sentence(unreached.cause))
            text = text[:cut] + _tried(unreached) + text[cut:]
    return for_person(text)


def person_text(err: BaseException) -> str:
    """The instruction for a person: cause, next step, and whether trying again helps."""
    return failure_of(err).words()


