"""The one error table: every failure talking to Nextcloud becomes a NextcloudError.

Errors are instructions for a model or a person: each message names the cause,
the next action, and says explicitly whether retrying can help. Messages never
carry a stack trace, a credential, an Authorization header, the server URL or a
DAV href: only the user-relative path the caller already knows.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any


class Category(Enum):
    """Why a call failed, for telemetry, the CLI's exit code and the front ends' wording."""

    REFUSED = "refused"   # Nextcloud said no, working as intended
    MISUSE = "misuse"     # a wrong argument or a guessed id
    FAULT = "fault"       # transient, or a bug on one side


_R, _M, _F = Category.REFUSED, Category.MISUSE, Category.FAULT


class ErrorCode(Enum):
    """The stable code of a NextcloudError; each row of the one table says what the code implies.

    Compare by identity (`err.code is ErrorCode.NOT_FOUND`); `.value` is the
    name on the wire (JSON, the call log, a stored sync failure). The row's
    attributes are the only place that decides, per code:

    - `category` and `retry` (whether trying again can help);
    - `transport`: the connection or the account failed, not the one file
      (a sync counts these in a row and stops when the server is gone);
    - `blocks_sync`: every sync fails until someone acts (fix the password,
      the network, the permissions);
    - `passing`: a failure of the moment (a best-effort call on a read path
      answers from the index instead).
    """

    category: Category
    retry: bool
    transport: bool
    blocks_sync: bool
    passing: bool

    def __new__(cls, wire: str, category: Category, retry: bool, traits: str = "") -> ErrorCode:
        member = object.__new__(cls)
        member._value_ = wire
        member.category, member.retry = category, retry
        member.transport, member.blocks_sync, member.passing = "T" in traits, "B" in traits, "P" in traits
        return member

    # traits: T transport, B blocks every sync, P passing
    NO_CREDENTIALS = ("no_credentials", _M, False, "TB")
    AUTH = ("auth", _R, False, "TB")
    FORBIDDEN = ("forbidden", _R, False, "B")
    NOT_FOUND = ("not_found", _M, False)
    MISSING_PARENT = ("missing_parent", _M, False)
    CONFLICT = ("conflict", _M, False)
    EXISTS = ("exists", _M, False)
    PRECONDITION = ("precondition", _R, False)
    LOCKED = ("locked", _R, True, "P")
    QUOTA = ("quota", _R, False)
    APP_MISSING = ("app_missing", _R, False)
    SERVER = ("server", _F, True, "P")
    TIMEOUT = ("timeout", _F, True, "TP")
    NETWORK = ("network", _F, True, "TB")
    UNKNOWN_OUTCOME = ("unknown_outcome", _F, False)
    RATE_LIMITED = ("rate_limited", _F, True, "P")
    THROTTLED = ("throttled", _R, False, "B")
    BAD_REQUEST = ("bad_request", _M, False)
    BAD_PATH = ("bad_path", _M, False)
    TOO_LARGE = ("too_large", _R, False)
    INVALID_RESPONSE = ("invalid_response", _F, False, "P")
    LOGIN = ("login", _R, False)

    @classmethod
    def parse(cls, wire: str | None) -> ErrorCode | None:
        """The code a stored or received wire name stands for; None for a name that is not a code."""
        return next((code for code in cls if code.value == wire), None)


@dataclass(frozen=True)
class Voice:
    """How one audience hears the parts only a front end can word: a step only the person at the
    machine can take, and whether trying again can help (the error knows *whether*; a voice says it)."""

    step_lead: str      # introduces `user_step`: "Run" for a person, "Tell the user to run" for an agent
    retry_yes: str      # said when `retry` is true
    retry_no: str       # said when it is false ("" to say nothing)
    fix_no: str | None = None   # said instead of retry_no for a misuse (None: retry_no)

    def retry_words(self, retry: bool, category: Category | None = None) -> str:
        """The retry in this voice. The one decision of what the words mean (issue 37): a misuse (its action
        says how to change the call) is told not to repeat the same call, never "do not retry", which reads
        as a contradiction after "fix the arguments and call again"; anything else that cannot succeed by
        trying again is told "do not retry" (what must change lies outside the call: a share, the quota)."""
        if retry:
            return self.retry_yes
        if category is Category.MISUSE and self.fix_no is not None:
            return self.fix_no
        return self.retry_no


# The library's own wording (logs, job records, `str(err)`): the retry said plainly, as to an agent.
PLAIN = Voice("Run", "Retry once; if it fails again, stop and report.", "Do not retry.",
              "Do not repeat this call unchanged.")
# What an index or a record keeps: cause and action, no retry (whoever shows it later words the retry from the
# code, for its own audience; a stored "do not retry" would outlive the moment it was true for).
STORED = Voice("Run", "", "")


class NextcloudError(Exception):
    """A failure with a stable `code` (an ErrorCode), the HTTP `status` when there was one, and instructions.

    The instruction is kept in parts so each front end can word it for its
    audience (a `Voice`): `cause`, `action` (what to do next), `user_step` (a
    command only the person at the machine can run; `action` then continues the
    sentence after it) and `detail` (the server's own words, cleaned). `retry`
    and `category` come from the one table `ErrorCode`: no message says the
    retry by hand, the voice words it. `str(err)` is the whole instruction in
    the `PLAIN` voice.

    The class of an instance follows its category (httpx's `_exceptions.py`
    shape): `NextcloudError(ErrorCode.NOT_FOUND, ...)` is a `NotFoundError`, which is a
    `MisuseError`, which is a `NextcloudError`; match with `isinstance`.
    """

    code: ErrorCode

    def __new__(cls, code: ErrorCode = ErrorCode.SERVER, *args: Any, **kwargs: Any) -> NextcloudError:
        if cls is NextcloudError:
            cls = _class_for(code)
        return super().__new__(cls)

    def __init__(self, code: ErrorCode, message: str | None = None, *, cause: str | None = None, action: str = "",
                 user_step: str | None = None, status: int | None = None,
                 path: str | None = None, retry_after: float | None = None, detail: str | None = None,
                 shown_detail: str | None = None) -> None:
        self.code = code
        self.category, self.retry = code.category, code.retry
        # A message written whole (the older form) is the cause, with nothing else to add.
        self.cause = cause if cause is not None else (message or code.value)
        self.action = action
        self.user_step = user_step
        self.status = status
        self.path = path
        self.retry_after = retry_after
        self.detail = detail          # for callers that branch on the server's words; never shown raw
        self.shown_detail = shown_detail  # the cleaned words worth showing (see error_for)
        super().__init__(self.message)

    def action_in(self, voice: Voice) -> str:
        """The next action in the audience's words (the person's own step introduced by the voice)."""
        if not self.user_step:
            return self.action
        return f"{voice.step_lead} `{self.user_step}`" + (f" {self.action}" if self.action else "")

    def cause_in(self) -> str:
        """The cause, with the server's own words when they add something."""
        return _sentence(self.cause) + (f" Server said: {_sentence(self.shown_detail)}" if self.shown_detail else "")

    def render(self, voice: Voice = PLAIN) -> str:
        """The whole instruction in one audience's words: cause, next action, retry."""
        return instruction(self.cause_in(), self.action_in(voice), self.retry, voice, self.category)

    @property
    def message(self) -> str:
        """The instruction in the library's plain voice (logs, job records)."""
        return self.render()

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code.value!r}, status={self.status!r}, message={self.message!r})"

    def __reduce__(self) -> Any:
        # Exceptions pickle as cls(*args); ours are keyword-built, so rebuild from the fields.
        return _rebuild, (type(self), dict(self.__dict__))

    def fields(self, voice: Voice = PLAIN) -> dict[str, Any]:
        """The failure as fields (a tool's structured error, the CLI's JSON): code, cause, action, retry."""
        return {"code": self.code.value, "cause": self.cause_in(), "action": _sentence(self.action_in(voice)),
                "retry": self.retry}


class RefusedError(NextcloudError):
    """Nextcloud said no and meant it (auth, permissions, quota, a lock, a missing app)."""


class MisuseError(NextcloudError):
    """The request was wrong: a path that does not exist, a guessed id, a bad argument."""


class FaultError(NextcloudError):
    """Something broke on the way or on the server; some of these are worth one retry (`retry`)."""


class NotFoundError(MisuseError):
    """Nothing exists at that path or id."""


def _class_for(code: ErrorCode) -> type[NextcloudError]:
    if code is ErrorCode.NOT_FOUND:
        return NotFoundError
    return {_R: RefusedError, _M: MisuseError, _F: FaultError}[code.category]


def _rebuild(cls: type[NextcloudError], state: dict[str, Any]) -> NextcloudError:
    err = Exception.__new__(cls)
    err.__dict__.update(state)
    Exception.__init__(err, err.message)
    return err


def sentence(text: str | None) -> str:
    """`text` as a sentence: stripped, with a full stop unless it ends with one."""
    text = (text or "").strip()
    return text if not text or text[-1] in ".!?" else text + "."


_sentence = sentence


def instruction(cause: str, action: str, retry: bool, voice: Voice = PLAIN, category: Category | None = None) -> str:
    """Cause, next action and the retry in one audience's words: how every failure's parts become one text
    (this table's errors, the reader's and the indexer's in the front ends, the server's HTTP refusals).
    `category` MISUSE words a retry that cannot help as "do not repeat this call unchanged" (Voice)."""
    return " ".join(p for p in (sentence(cause), sentence(action), voice.retry_words(retry, category)) if p)

# An instruction written as one text: its first sentence is the cause, the rest the next action.
_FIRST_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")


def split_instruction(text: str) -> tuple[str, str]:
    """(cause, action) of an instruction written as one text."""
    parts = _FIRST_SENTENCE.split(text.strip(), maxsplit=1)
    return (parts[0], parts[1]) if len(parts) == 2 else (parts[0], "")


@dataclass(frozen=True)
class _Row:
    code: ErrorCode
    cause: str        # may use {where} (" (path)" or "") and {app}
    action: str       # with `step`: continues the sentence after the step
    step: str | None = None   # a command only the person at the machine can run


LOGIN_STEP = "mcp-nextcloud login URL"

APP_NAMES = {"deck": "Deck", "talk": "Talk", "spreed": "Talk", "mail": "Mail",
             "caldav": "Calendar", "calendar": "Calendar", "carddav": "Contacts",
             "contacts": "Contacts"}

# Conditions win over statuses; statuses are looked up per source, then generic.
_CONDITIONS: dict[str, _Row] = {
    "no_credentials": _Row(ErrorCode.NO_CREDENTIALS, "No Nextcloud account is configured",
        "or set NEXTCLOUD_URL, NEXTCLOUD_USER, NEXTCLOUD_APP_PASSWORD (nothing changes until an account is configured)",
        step=LOGIN_STEP),
    "missing_parent": _Row(ErrorCode.MISSING_PARENT,
        "The parent folder does not exist{where} and Nextcloud does not create intermediates",
        "Create the folder first (or confirm the path with files_search; do not guess variants)"),
    "is_folder": _Row(ErrorCode.CONFLICT, "The path{where} is a folder, not a file",
        "Pick a file name inside that folder"),
    "exists": _Row(ErrorCode.EXISTS, "Something already exists there{where}",
        "Choose another name, or read the existing item first and write with its etag to replace it"),
    "app_missing": _Row(ErrorCode.APP_MISSING,
        "The {app} app is not installed on this Nextcloud (or not enabled for this account)",
        "Tell the user this feature is unavailable here, or ask an administrator to enable the {app} app"),
    "timeout": _Row(ErrorCode.TIMEOUT, "Nextcloud did not answer in time{where}",
        "Wait a moment; if it keeps happening the server is overloaded or the file is too big"),
    "network": _Row(ErrorCode.NETWORK, "Could not reach the Nextcloud server (connection failed or was cut)",
        "Check the network and that the server is up"),
    "unknown_outcome": _Row(ErrorCode.UNKNOWN_OUTCOME,
        "The connection failed after the write was sent{where}: the write may or may not have happened",
        "Re-read (files_read / stat) to see whether it happened before writing again"),
    "refused_before": _Row(ErrorCode.AUTH,
        "Nextcloud refused the credentials earlier (wrong or revoked app password), so they were not "
        "sent again: each failed login counts towards its brute-force protection, which then throttles every "
        "request from this address",
        "again to create a new app password (requests resume as soon as the password changes)", step=LOGIN_STEP),
    "throttled": _Row(ErrorCode.THROTTLED,
        "Nextcloud's brute-force protection is throttling this address (too many failed logins "
        "from it): it refuses every request, correct credentials included, for up to 30 minutes",
        "Fix the app password first (`mcp-nextcloud login URL`), then ask the server's administrator to run "
        "`occ security:bruteforce:reset <this machine's address>` (or wait 30 minutes); until then every attempt "
        "is refused and a wrong password prolongs it"),
    "too_large": _Row(ErrorCode.TOO_LARGE, "The file{where} is larger than the allowed size, so it was not downloaded",
        "Ask for a smaller part (a byte range or an offset) or a smaller file"),
    "bad_path": _Row(ErrorCode.BAD_PATH,
        "The path{where} is not allowed (no '..' segments, NUL characters or empty names)",
        "Use an absolute path inside the account, as files_search returns it"),
    "invalid_response": _Row(ErrorCode.INVALID_RESPONSE,
        "Nextcloud sent a response that could not be understood{where}",
        "Stop and report it; this is a server or client bug, not your input"),
    "unsafe_xml": _Row(ErrorCode.INVALID_RESPONSE,
        "Nextcloud's XML answer{where} was refused because it declares entities (unsafe XML)",
        "Stop and report it to the server administrator"),
    "range": _Row(ErrorCode.BAD_REQUEST, "The requested byte range{where} lies beyond the end of the file",
        "Stat the file for its size and ask for a range inside it"),
    "deck_denied": _Row(ErrorCode.FORBIDDEN,
        "Deck refused access{where}: the board, stack or card does not exist or is not shared with this account",
        "Call deck_list_cards for valid board, stack and card ids; do not guess ids"),
    "login_timeout": _Row(ErrorCode.LOGIN, "The login was not approved in the browser in time",
        "again and approve the login within the wait", step=LOGIN_STEP),
    "not_nextcloud": _Row(ErrorCode.LOGIN, "The address does not answer like a Nextcloud server",
        "Check the URL (the address you open in a browser, e.g. https://cloud.example.com)"),
}

_STATUS: dict[int, _Row] = {
    400: _Row(ErrorCode.BAD_REQUEST, "Nextcloud rejected the request as malformed{where}",
              "Check the arguments against the tool description"),
    401: _Row(ErrorCode.AUTH, "Nextcloud refused the credentials (wrong or revoked app password)",
              "again to create a new app password", step=LOGIN_STEP),
    403: _Row(ErrorCode.FORBIDDEN, "This account is not allowed to do that{where}",
              "Ask the owner to share it with edit rights, or pick something this account owns"),
    404: _Row(ErrorCode.NOT_FOUND, "Nothing exists at that path{where}",
              "Confirm the path with files_search; do not guess variants"),
    405: _Row(ErrorCode.EXISTS, "That operation is not allowed here{where}; the item probably already exists",
              "Stat the path to see what is there"),
    409: _Row(ErrorCode.CONFLICT, "The request conflicts with the current state{where}",
              "Stat the path and its parent folder, then adjust the request"),
    412: _Row(ErrorCode.PRECONDITION, "The file changed since you read it{where}",
              "Re-read it with files_read, merge your change, and write with the new etag (never the old one)"),
    413: _Row(ErrorCode.TOO_LARGE, "Nextcloud refused the upload as too large{where}",
              "Upload a smaller file"),
    415: _Row(ErrorCode.BAD_REQUEST, "Nextcloud could not parse the data sent{where}",
              "Fix the content (invalid iCalendar/vCard/JSON) before writing again"),
    416: _CONDITIONS["range"],
    423: _Row(ErrorCode.LOCKED, "The file{where} is locked, probably open in an editor or by another client",
              "Ask the user to close it, then try again once the lock is released"),
    429: _Row(ErrorCode.RATE_LIMITED, "Nextcloud is rate-limiting this account",
              "Wait before the next request"),
    507: _Row(ErrorCode.QUOTA, "Out of storage: the account's quota is full, nothing was written{where}",
              "Free space or ask an administrator for more quota"),
}

# (An OCS or Talk 404 keeps its detail: "Please specify a valid account to share with" is the real cause.)
_SELF_EXPLAINING = frozenset({
    ErrorCode.APP_MISSING, ErrorCode.AUTH, ErrorCode.THROTTLED, ErrorCode.NOT_FOUND, ErrorCode.MISSING_PARENT,
    ErrorCode.PRECONDITION, ErrorCode.LOCKED, ErrorCode.QUOTA, ErrorCode.RATE_LIMITED, ErrorCode.TOO_LARGE,
    ErrorCode.NO_CREDENTIALS, ErrorCode.TIMEOUT, ErrorCode.NETWORK, ErrorCode.UNKNOWN_OUTCOME
})

_SERVER = _Row(ErrorCode.SERVER, "Nextcloud had an internal error{where}",
               "If it persists, report it to the server administrator")

_URLISH = re.compile(r"(https?://\S+|/remote\.php/\S*|/index\.php/\S*|/ocs/v\d\.php/\S*)")


def clean_detail(detail: str | None, limit: int = 200) -> str | None:
    """The server's own message, reduced to something safe to show: no URL, no href, short."""
    if not detail:
        return None
    text = _URLISH.sub("…", " ".join(str(detail).split()))
    text = re.sub(r"(?i)\b(basic|bearer)\s+[A-Za-z0-9+/=._~-]{6,}", r"\1 …", text)
    text = re.sub(r"(?i)(authorization|password|app_?password|token)\s*[:=]\s*\S+", r"\1: …", text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text or None


def error_for(source: str, status: int | None, *, condition: str | None = None,
              path: str | None = None, detail: str | None = None,
              retry_after: float | None = None) -> NextcloudError:
    """Build the NextcloudError for (source, status, condition).

    `source` names the API ("webdav", "ocs", "deck", "talk", "mail", "caldav",
    "carddav", "login", "config"); `path` is the user-relative path or object the
    caller knows (shown as is); `detail` is the server's message (cleaned).
    """
    if condition is None and source == "deck" and status == 403:
        condition = "deck_denied"   # Deck answers 403 for ids that do not exist
    row: _Row | None = _CONDITIONS.get(condition) if condition else None
    if row is None and status is not None:
        row = _STATUS.get(status)
        if row is None and status >= 500:
            row = _SERVER
    if row is None:
        row = _Row(ErrorCode.INVALID_RESPONSE,
                   "Nextcloud answered unexpectedly" + (f" (HTTP {status})" if status else "") + "{where}",
                   "Stop and report it")
    where = f" ({path})" if path else ""
    app = APP_NAMES.get(source, source.capitalize())
    cause, action = row.cause.format(where=where, app=app), row.action.format(app=app)
    if row.code is ErrorCode.RATE_LIMITED and retry_after:
        cause += f": it asks to wait {wait_text(retry_after)} (Retry-After)"
        action = "Wait that long before the next request"
    # The server's own words are added only where they say something the row cannot
    # (which field was bad, which rule refused). Where the row already tells the whole
    # story they are noise, or worse: a 401 lists every auth backend that failed, a 507
    # names a mount-relative path, a missing app's 404 says only "invalid query".
    self_explaining = row.code in _SELF_EXPLAINING and not (row.code is ErrorCode.NOT_FOUND and source != "webdav")
    cleaned = clean_detail(detail)
    return NextcloudError(row.code, cause=cause, action=action, user_step=row.step,
                          status=status, path=path, retry_after=retry_after, detail=cleaned,
                          shown_detail=None if self_explaining else cleaned)


def wait_text(seconds: float) -> str:
    """A Retry-After as a person says it: "45 s", "20 min", "about 1 h"."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 3600:
        return f"{round(seconds / 60)} min"
    return f"about {seconds / 3600:.0f} h" if seconds < 36 * 3600 else f"about {seconds / 86400:.0f} days"


ACCOUNT_VARIABLES = ("NEXTCLOUD_URL", "NEXTCLOUD_USER", "NEXTCLOUD_APP_PASSWORD")


def no_credentials(missing: tuple[str, ...] | list[str] = ACCOUNT_VARIABLES) -> NextcloudError:
    """The error every entry point raises when no account is configured, naming what is `missing`
    (`nextcloud.config.no_account()` works that out from the environment and the config file)."""
    row = _CONDITIONS["no_credentials"]
    missing = [name for name in ACCOUNT_VARIABLES if name in missing] or list(ACCOUNT_VARIABLES)
    given = [name for name in ACCOUNT_VARIABLES if name not in missing]
    if not given:
        cause = f"{row.cause}: no login is stored and {', '.join(missing[:-1])} and {missing[-1]} are not set"
    else:
        cause = (f"{row.cause} completely: {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing "
                 f"({' and '.join(given)} {'is' if len(given) == 1 else 'are'} given)")
    return NextcloudError(row.code, cause=cause, action=row.action, user_step=row.step)
