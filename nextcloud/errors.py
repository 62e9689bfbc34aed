"""The one error table: every failure talking to Nextcloud becomes a NextcloudError.

Errors are instructions for a model or a person: each message names the cause,
the next action, and says explicitly whether retrying can help. Messages never
carry a stack trace, a credential, an Authorization header, the server URL or a
DAV href: only the user-relative path the caller already knows.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# kind -> (category, retry). category: "refused" (Nextcloud said no, working as
# intended), "misuse" (a wrong argument or guessed id), "fault" (transient or a bug).
KINDS: dict[str, tuple[str, bool]] = {
    "no_credentials": ("misuse", False),
    "auth": ("refused", False),
    "forbidden": ("refused", False),
    "not_found": ("misuse", False),
    "missing_parent": ("misuse", False),
    "conflict": ("misuse", False),
    "exists": ("misuse", False),
    "precondition": ("refused", False),
    "locked": ("refused", True),
    "quota": ("refused", False),
    "app_missing": ("refused", False),
    "server": ("fault", True),
    "timeout": ("fault", True),
    "network": ("fault", True),
    "unknown_outcome": ("fault", False),
    "rate_limited": ("fault", True),
    "bad_request": ("misuse", False),
    "bad_path": ("misuse", False),
    "too_large": ("refused", False),
    "invalid_response": ("fault", False),
    "login": ("refused", False),
}

DO_NOT_RETRY = "Do not retry."
RETRY_ONCE = "Transient: one retry is reasonable, then stop and report."


class NextcloudError(Exception):
    """A failure with a stable `kind`, the HTTP `status` when there was one, and instructions.

    `str(err)` is the whole instruction (cause, next action, retry statement);
    `retry` says whether retrying may help; `category` feeds call telemetry.
    """

    def __init__(self, kind: str, message: str, *, status: int | None = None,
                 retry: bool | None = None, category: str | None = None,
                 path: str | None = None, retry_after: float | None = None) -> None:
        default_category, default_retry = KINDS.get(kind, ("fault", False))
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.retry = default_retry if retry is None else retry
        self.category = category or default_category
        self.path = path
        self.retry_after = retry_after
        self.detail: str | None = None

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"NextcloudError(kind={self.kind!r}, status={self.status!r}, message={self.message!r})"

    def to_dict(self) -> dict:
        """A compact, JSON-ready form for result envelopes and telemetry."""
        return {"kind": self.kind, "status": self.status, "retry": self.retry,
                "category": self.category, "message": self.message}


@dataclass(frozen=True)
class _Row:
    kind: str
    cause: str        # may use {where} (" (path)" or "") and {app}
    action: str
    retry: str


APP_NAMES = {"deck": "Deck", "talk": "Talk", "spreed": "Talk", "mail": "Mail",
             "caldav": "Calendar", "calendar": "Calendar", "carddav": "Contacts",
             "contacts": "Contacts"}

# Conditions win over statuses; statuses are looked up per source, then generic.
_CONDITIONS: dict[str, _Row] = {
    "no_credentials": _Row(
        "no_credentials", "No Nextcloud account is configured",
        "Run `mcp-nextcloud login URL` or set NEXTCLOUD_URL, NEXTCLOUD_USER, NEXTCLOUD_APP_PASSWORD",
        DO_NOT_RETRY + " (nothing changes until an account is configured)"),
    "missing_parent": _Row(
        "missing_parent", "The parent folder does not exist{where} and Nextcloud does not create intermediates",
        "Create the folder first (or confirm the path with files_search; do not guess variants)",
        "Do not retry the same path."),
    "is_folder": _Row(
        "conflict", "The path{where} is a folder, not a file",
        "Pick a file name inside that folder", DO_NOT_RETRY),
    "exists": _Row(
        "exists", "Something already exists there{where}",
        "Choose another name, or read the existing item first and write with its etag to replace it",
        "Do not retry the same request."),
    "app_missing": _Row(
        "app_missing", "The {app} app is not installed on this Nextcloud (or not enabled for this account)",
        "Tell the user this feature is unavailable here, or ask an administrator to enable the {app} app",
        DO_NOT_RETRY),
    "timeout": _Row(
        "timeout", "Nextcloud did not answer in time{where}",
        "Wait a moment; if it keeps happening the server is overloaded or the file is too big",
        "Retry once; if it times out again, stop and report."),
    "network": _Row(
        "network", "Could not reach the Nextcloud server (connection failed or was cut)",
        "Check the network and that the server is up",
        "Retry once; if it fails again, stop and report."),
    "unknown_outcome": _Row(
        "unknown_outcome",
        "The connection failed after the write was sent{where}: the write may or may not have happened",
        "Re-read (files_read / stat) before trying again",
        "Do not retry blindly."),
    "too_large": _Row(
        "too_large", "The file{where} is larger than the allowed size, so it was not downloaded",
        "Ask for a smaller part (a byte range or an offset) or a smaller file", DO_NOT_RETRY),
    "bad_path": _Row(
        "bad_path", "The path{where} is not allowed (no '..' segments, NUL characters or empty names)",
        "Use an absolute path inside the account, as files_search returns it", DO_NOT_RETRY),
    "invalid_response": _Row(
        "invalid_response", "Nextcloud sent a response that could not be understood{where}",
        "Stop and report it; this is a server or client bug, not your input",
        DO_NOT_RETRY),
    "unsafe_xml": _Row(
        "invalid_response", "Nextcloud's XML answer{where} was refused because it declares entities (unsafe XML)",
        "Stop and report it to the server administrator", DO_NOT_RETRY),
    "range": _Row(
        "bad_request", "The requested byte range{where} lies beyond the end of the file",
        "Stat the file for its size and ask for a range inside it", DO_NOT_RETRY),
    "deck_denied": _Row(
        "forbidden",
        "Deck refused access{where}: the board, stack or card does not exist or is not shared with this account",
        "Call deck_list_cards for valid board, stack and card ids; do not guess ids", DO_NOT_RETRY),
    "login_timeout": _Row(
        "login", "The login was not approved in the browser in time",
        "Run `mcp-nextcloud login URL` again and approve the login within the wait", DO_NOT_RETRY),
    "not_nextcloud": _Row(
        "login", "The address does not answer like a Nextcloud server",
        "Check the URL (the address you open in a browser, e.g. https://cloud.example.com)", DO_NOT_RETRY),
}

_STATUS: dict[int, _Row] = {
    400: _Row("bad_request", "Nextcloud rejected the request as malformed{where}",
              "Check the arguments against the tool description", "Do not retry the same request."),
    401: _Row("auth", "Nextcloud refused the credentials (wrong or revoked app password)",
              "Run `mcp-nextcloud login URL` again to create a new app password", DO_NOT_RETRY),
    403: _Row("forbidden", "This account is not allowed to do that{where}",
              "Ask the owner to share it with edit rights, or pick something this account owns", DO_NOT_RETRY),
    404: _Row("not_found", "Nothing exists at that path{where}",
              "Confirm the path with files_search; do not guess variants", DO_NOT_RETRY),
    405: _Row("exists", "That operation is not allowed here{where}; the item probably already exists",
              "Stat the path to see what is there", DO_NOT_RETRY),
    409: _Row("conflict", "The request conflicts with the current state{where}",
              "Stat the path and its parent folder, then adjust the request", DO_NOT_RETRY),
    412: _Row("precondition", "The file changed since you read it{where}",
              "Re-read it with files_read, merge your change, and write with the new etag",
              "Do not retry with the old etag."),
    413: _Row("too_large", "Nextcloud refused the upload as too large{where}",
              "Upload a smaller file", DO_NOT_RETRY),
    415: _Row("bad_request", "Nextcloud could not parse the data sent{where}",
              "Fix the content (invalid iCalendar/vCard/JSON) before writing again", DO_NOT_RETRY),
    416: _CONDITIONS["range"],
    423: _Row("locked", "The file{where} is locked, probably open in an editor or by another client",
              "Ask the user to close it, then try again later", "Retry only after the lock is released."),
    429: _Row("rate_limited", "Nextcloud is rate-limiting this account",
              "Wait before the next request", "Retry once after a pause, then stop and report."),
    507: _Row("quota", "Out of storage: the account's quota is full, nothing was written{where}",
              "Free space or ask an administrator for more quota", DO_NOT_RETRY),
}

# (An OCS or Talk 404 keeps its detail: "Please specify a valid account to share with" is the real cause.)
_SELF_EXPLAINING = frozenset({"app_missing", "auth", "not_found", "missing_parent", "precondition", "locked",
                              "quota", "rate_limited", "too_large", "no_credentials", "timeout", "network",
                              "unknown_outcome"})

_SERVER = _Row("server", "Nextcloud had an internal error{where}",
               "If it persists, report it to the server administrator", RETRY_ONCE)

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
        row = _Row("invalid_response" if status else "server",
                   "Nextcloud answered unexpectedly" + (f" (HTTP {status})" if status else "") + "{where}",
                   "Stop and report it", DO_NOT_RETRY)
    where = f" ({path})" if path else ""
    app = APP_NAMES.get(source, source.capitalize())
    text = f"{row.cause.format(where=where, app=app)}. {row.action.format(app=app)}. {row.retry}"
    if row.kind == "rate_limited" and retry_after:
        text = (f"{row.cause.format(where=where, app=app)}: it asks to wait {wait_text(retry_after)} "
                "(Retry-After). Wait that long before the next request; then one retry, and stop and report "
                "if it is refused again.")
    # The server's own words are added only where they say something the row cannot
    # (which field was bad, which rule refused). Where the row already tells the whole
    # story they are noise, or worse: a 401 lists every auth backend that failed, a 507
    # names a mount-relative path, a missing app's 404 says only "invalid query".
    self_explaining = row.kind in _SELF_EXPLAINING and not (row.kind == "not_found" and source != "webdav")
    extra = clean_detail(detail) if not self_explaining else None
    if extra:
        text += f" Server said: {extra}"
    retry_flag = None
    if row is _SERVER or row.kind in ("timeout", "network", "rate_limited"):
        retry_flag = True
    elif row.kind == "locked":
        retry_flag = True
    else:
        retry_flag = False
    err = NextcloudError(row.kind, text, status=status, retry=retry_flag, path=path,
                         retry_after=retry_after)
    err.detail = clean_detail(detail)  # for callers that branch on the server's words; never shown raw
    return err


def wait_text(seconds: float) -> str:
    """A Retry-After as a person says it: "45 s", "20 min", "about 1 h"."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 3600:
        return f"{round(seconds / 60)} min"
    return f"about {seconds / 3600:.0f} h" if seconds < 36 * 3600 else f"about {seconds / 86400:.0f} days"


def no_credentials() -> NextcloudError:
    """The error every entry point raises when no account is configured."""
    return error_for("config", None, condition="no_credentials")
