"""Each person's calls, run by that person's own index service with that person's credentials.

A tools/call reaches `PersonTools.call` (server/app.py hands every call to `server.remote`): the person is the
subject of the bearer token of this request (the SDK's auth context), never anything the caller sends. Each
person has a folder of their own (people/<hash of the user id>, 0700) holding their index, call log and
settings; their calls go to the index service of that index (service/tools.py ServiceTools: one service per
index), with an environment naming only that person's credentials and folders. The service attaches on the
person's first call and keeps their index synced in the background.
"""
from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token

from mcp_nextcloud.nextcloud.errors import Category, ErrorCode
from mcp_nextcloud.server.errors import ToolFailure
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.team.store import Person, Store, private_folder
from mcp_nextcloud.team.vault import Vault
from mcp_nextcloud.environment import process

PEOPLE = "people"
ADDRESS_RECORD = "address-refusals"     # in the people folder: nextcloud.refusals.address_record's file
log = logging.getLogger("mcp_nextcloud.team")
RECHECK_S = 60.0     # a deleted app password ends the access within this, or at the first call Nextcloud refuses


# Nextcloud's answers that throttle this server: its brute-force protection, or a rate limit of the account.
THROTTLES = (ErrorCode.THROTTLED, ErrorCode.RATE_LIMITED)


def person_folder(state: Path, subject: str) -> Path:
    """The person's folder: named by a hash, so no user id (slashes, dots, case) can reach another's."""
    return state / PEOPLE / hashlib.sha256(subject.encode("utf-8")).hexdigest()[:32]


def team_service_name(state: Path) -> str:
    """The socket name of the team's one index service: keyed by the team's people folder, as a person's service
    is keyed by their index file (two team servers on two state folders never share one)."""
    from mcp_nextcloud.service.client import service_name

    return service_name(["serve", "--index", str(state.absolute() / PEOPLE)], {})


def refusals_path(folder: Path) -> Path:
    """The person's record of refused credentials (nextcloud.refusals): their calls and background sync write
    it when Nextcloud refuses their password, and this server reads it around each call, so one refused request
    ends the access at once and neither process sends that password again (one failed login per revocation)."""
    return folder / "config" / "refused-credentials"


def person_env(folder: Path, url: str, login_name: str, app_password: str) -> dict[str, str]:
    """The variables a person's calls run with: the team server's settings (MCP_NEXTCLOUD_MEANING...), their
    account, every folder inside their own, their record of refused credentials, the team's record of failed
    logins from its address (anyone's slows everyone: a slow answer then says so), and TEAM_SIGN_IN (a refused
    password's advice is to sign in again)."""

    from mcp_nextcloud.nextcloud.refusals import ADDRESS_ENV, ENV_PATH
    from mcp_nextcloud.server.tools.files.coverage import TEAM_SIGN_IN

    settings = {k: v for k, v in process().items() if k.startswith("MCP_NEXTCLOUD_")}
    return {**settings, TEAM_SIGN_IN: "1", "NEXTCLOUD_URL": url, "NEXTCLOUD_USER": login_name,
            "NEXTCLOUD_APP_PASSWORD": app_password, ENV_PATH: str(refusals_path(folder)),
            ADDRESS_ENV: str(folder.parent / ADDRESS_RECORD),
            "MCP_NEXTCLOUD_INDEX": str(folder / "index.db"),
            "MCP_NEXTCLOUD_TELEMETRY": str(folder / "calls.sqlite"),
            "MCP_NEXTCLOUD_CONFIG": str(folder / "config" / "account.json"),
            "HOME": str(folder), "XDG_DATA_HOME": str(folder / "data"), "XDG_CONFIG_HOME": str(folder / "config"),
            "XDG_CACHE_HOME": str(folder / "cache"), "XDG_STATE_HOME": str(folder / "state")}


def _not_signed_in() -> ToolFailure:
    return ToolFailure("this call carries no signed-in person (or their sign-in was revoked)",
                       "Sign in again from your MCP client", category=Category.REFUSED, status=ToolStatus.UNAUTHORIZED,
                       retry=False)


def _signed_out() -> ToolFailure:
    """The answer of every call of a person whose app password Nextcloud refused (the one owner of its words)."""
    from mcp_nextcloud.server.tools.files.coverage import TEAM_ACTION

    return ToolFailure("Nextcloud refused your app password for this server (deleted in Nextcloud, or no longer "
                       "valid), so this server no longer acts for you", TEAM_ACTION,
                       category=Category.REFUSED, status=ToolStatus.SIGNED_OUT, retry=False)


@dataclass(frozen=True)
class _Held:
    """A person's credential as this server holds it: the stored person, their app password opened from its seal,
    its fingerprint and their record of refused credentials (nextcloud.refusals, the file refusals_path names)."""

    person: Person
    password: str
    fingerprint: str
    record: Any


def _profile(limits: dict[str, Any]) -> Any:
    """The Profile a person chose at sign-in (its to_dict form: folders, read-only, tools): limits.py's."""
    from mcp_nextcloud.team.limits import profile_of

    return profile_of(limits)


def _error_code(result: Any) -> ErrorCode | None:
    """The error table's code of a failed call's result (the service answers failures as results), or None."""
    error = (getattr(result, "structured_content", None) or {}).get("error") if getattr(result, "is_error", False) \
        else None
    return ErrorCode.parse(error.get("code")) if isinstance(error, dict) else None


def _slowed(result: Any) -> bool:
    """Whether an answer says Nextcloud's brute-force delay slowed it (its warnings carry TEAM_SLOWED)."""
    from mcp_nextcloud.server.tools.files.coverage import TEAM_SLOWED

    warnings = (getattr(result, "structured_content", None) or {}).get("warnings")
    return isinstance(warnings, list) and any(isinstance(w, str) and TEAM_SLOWED in w for w in warnings)


def _account(person: Any, password: str) -> Any:
    """The person's Nextcloud account as their calls see it (the same fingerprint in nextcloud.refusals)."""
    from mcp_nextcloud.nextcloud.config import Account

    return Account(url=person.nc_url, user=person.login_name, app_password=password)


class PersonTools:
    """`server.remote` of the team server: routes each call to the calling person's service."""

    def __init__(self, state: Path, store: Store, vault: Vault, interval: float) -> None:
        self.state, self.store, self.vault, self.interval = state, store, vault, interval
        self._links: dict[str, tuple[bytes, Any]] = {}     # subject -> (sealed password it was built with, link)
        self._checked: dict[str, float] = {}                # subject -> when Nextcloud was last asked (see _check)
        self._held_by: dict[str, _Held] = {}                # subject -> their credential, opened (see _held)
        self._gone: dict[str, float] = {}                   # subject -> when a refusal signed them out (_sign_out)
        self.throttles = 0                                  # answers Nextcloud throttled (429) since the start
        self.slowed = 0                                     # answers its brute-force delay slowed (TEAM_SLOWED)
        self._lock = threading.Lock()
        self.service = team_service_name(state)
        self._keeper: Any = None

    def keep_service(self) -> None:
        """Start the team's index service now and keep it while this server runs (an attachment that asks for
        no sync): a person's first call then finds the tool stack loaded, never a process to start."""
        from mcp_nextcloud.service.tools import ServiceTools

        self._keeper = ServiceTools(self.service, self.state / PEOPLE, 0, {})
        self._keeper.attach()

    def call(self, name: str, arguments: dict[str, Any], chosen: Any, *, read_only: bool = False) -> Any:
        token = get_access_token()
        if token is None or not token.subject:
            raise _not_signed_in()
        subject = token.subject
        held = self._held(subject)
        if self._refused(held):             # refused since the last call (their background sync met it)
            self._sign_out(subject)
        if time.monotonic() - self._checked.get(subject, float("-inf")) > RECHECK_S:
            self._check(subject, held)
        limits = (token.claims or {}).get("profile")
        result = self._link(subject, held).call(name, arguments, _profile(limits) if limits else chosen,
                                                read_only=read_only)
        # A request of this call that Nextcloud refused ends the access now, whatever the tool made of it (a
        # grep answers from the index when its look at the server fails): no answer is served with that password.
        if self._refused(held):
            self._sign_out(subject)
        code = _error_code(result)
        if code is ErrorCode.AUTH:          # refused, and the record could not say so: ask Nextcloud once
            self._check(subject, held)
        elif code is not None and code in THROTTLES:
            self._throttled(f"a call of {name}", code)
        elif _slowed(result):
            self._was_slowed(f"a call of {name}")
        return result

    def _held(self, subject: str) -> _Held:
        """The person's credential as this server holds it (opened once per sealed password, not per call); a
        person no longer stored is told to sign in, or that they were signed out when a refusal did it."""
        from mcp_nextcloud.nextcloud import refusals

        person = self.store.person(subject)
        with self._lock:
            known = self._held_by.get(subject)
        if known is not None and person is not None and known.person.sealed == person.sealed:
            return known
        password = self.vault.open(person.sealed) if person is not None else None
        if person is None or password is None:
            if self._gone.get(subject) is not None:
                raise _signed_out()         # a concurrent call of theirs met the refusal first
            raise _not_signed_in()
        account = _account(person, password)
        held = _Held(person, password, refusals.fingerprint(account),
                     refusals.shared(refusals_path(person_folder(self.state, subject))))
        with self._lock:
            self._held_by[subject] = held
            self._gone.pop(subject, None)   # a password stored since: they signed in again
        return held

    @staticmethod
    def _refused(held: _Held) -> bool:
        """Whether Nextcloud refused the person's app password (any request, in any process: their record)."""
        return held.record.refused_at(held.fingerprint) is not None

    def _sign_out(self, subject: str) -> None:
        """End the person's access here (every token, the sealed password, the service link) and say so."""
        with self._lock:     # first: a call of theirs that finds them gone is told why
            self._gone[subject] = time.monotonic()
        self.forget(subject)
        raise _signed_out()

    def _check(self, subject: str, held: _Held) -> None:
        """Ask Nextcloud whether the person's app password still works; when it was refused, end their access
        here too. The request keeps to the person's record: a password refused before is not sent again."""
        from mcp_nextcloud.nextcloud.client import NextcloudClient
        from mcp_nextcloud.nextcloud.errors import NextcloudError

        failed: ErrorCode | None = None
        try:
            with NextcloudClient(_account(held.person, held.password), retries=0, total_timeout=10.0,
                                 refusals=held.record) as client:
                client.ocs.current_user()
        except NextcloudError as err:
            failed = err.code
        if failed is ErrorCode.AUTH:
            self._sign_out(subject)
        if failed is not None and failed in THROTTLES:
            self._throttled("the check of a person's app password", failed)
        # Nextcloud away, slow or throttling: the call itself will say so, and the next check waits its turn
        # (asked again at every call, a throttled or slow server would cost each call up to 10 s more)
        self._checked[subject] = time.monotonic()

    def _throttled(self, what: str, code: ErrorCode) -> None:
        """Say in the log, with a count, that Nextcloud throttled this server (the person's answer says it too)."""
        with self._lock:
            self.throttles += 1
            count = self.throttles
        why = ("its brute-force protection refuses every request from this server's address, everyone's, after "
               "failed logins from it: put the address on Nextcloud's brute-force IP allowlist (docs/team-server.md)"
               if code is ErrorCode.THROTTLED else "it rate-limits the account")
        log.warning("Nextcloud throttled %s (HTTP 429; %d time(s) since this server started): %s", what, count, why)

    def _was_slowed(self, what: str) -> None:
        """Say in the log, with a count, that Nextcloud's brute-force delay slowed this server (the answer says
        it too: coverage.TEAM_SLOWED)."""
        with self._lock:
            self.slowed += 1
            count = self.slowed
        log.warning("Nextcloud slowed %s (its brute-force delay after failed logins from this server's address; "
                    "%d time(s) since this server started): put the address on Nextcloud's brute-force IP "
                    "allowlist (docs/team-server.md)", what, count)

    def forget(self, subject: str) -> None:
        """End a person's access: tokens, sealed password and service link (their index stays on disk)."""
        self.store.revoke_subject(subject)
        self.store.drop_person(subject)
        with self._lock:
            known = self._links.pop(subject, None)
            self._checked.pop(subject, None)
            self._held_by.pop(subject, None)
        if known is not None:
            known[1].close()

    def link(self, subject: str) -> Any:
        """The person's ServiceTools, built (and attached: background sync) on first use or new credentials."""
        return self._link(subject, self._held(subject))

    def _link(self, subject: str, held: _Held) -> Any:
        from mcp_nextcloud.service.tools import ServiceTools

        person = held.person
        with self._lock:
            known = self._links.get(subject)
            if known is not None and known[0] == person.sealed:
                return known[1]
            folder = private_folder(person_folder(self.state, subject))
            env = person_env(folder, person.nc_url, person.login_name, held.password)
            index = folder / "index.db"
            link = ServiceTools(self.service, index, self.interval, env)
            if known is not None:
                known[1].close()
            self._links[subject] = (person.sealed, link)
        link.attach()
        return link

    def close(self) -> None:
        if self._keeper is not None:
            self._keeper.close()
        with self._lock:
            for _, link in self._links.values():
                link.close()
            self._links.clear()
