"""NextcloudClient: one account, one HTTP connection pool, every API as an attribute."""
from __future__ import annotations

import threading
from typing import Any, Callable, TypeVar, cast

from . import paths
from .caldav import CalDAV
from .carddav import CardDAV
from .config import Account, no_account
from .deck import Deck
from .errors import ErrorCode, NextcloudError
from .http import Transport
from .mail import Mail
from .ocs import OCS
from .refusals import Refusals
from .talk import Talk
from .unified import UnifiedSearch
from .webdav import WebDAV

# Login names that are plainly a user id: Nextcloud ids are these characters,
# while LDAP / e-mail style logins (with '@' or spaces) often map to another id.
_PLAIN_ID = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")

_App = TypeVar("_App")


class NextcloudClient:
    """Everything this project says to one Nextcloud account.

    Use as a context manager or call close(). `request_count` counts the HTTP
    requests actually sent (retries included), for tests and benchmarks.
    """

    def __init__(self, account: Account | None, *, timeout: float = 30.0, connect_timeout: float = 5.0,
                 total_timeout: float = 120.0, retries: int = 3, backoff: float = 0.25,
                 refusals: Refusals | None = None) -> None:
        """`refusals`: the record of refused credentials to honour and keep (default: this environment's,
        nextcloud.refusals.shared())."""
        if account is None or not (account.url and account.user and account.app_password):
            raise no_account()
        self.account = account
        self._transport = Transport(account, timeout=timeout, connect_timeout=connect_timeout,
                                    total_timeout=total_timeout, retries=retries, backoff=backoff,
                                    refusals=refusals)
        self._user_id: str | None = account.user_id
        self._uid_verified = False   # a guessed or saved id is confirmed via OCS on the first DAV 404
        self._uid_lock = threading.Lock()
        self.webdav = WebDAV(self._transport, lambda: self.user_id, recheck_user=self._recheck_user_id)
        self.ocs = OCS(self._transport, probe_dav=self._probe_dav)
        self._apps: dict[str, object] = {}   # caldav, carddav, deck, talk, mail, unified: made on first use
        self._apps_lock = threading.Lock()

    def bounded(self, seconds: float) -> "NextcloudClient":
        """A client of the same account for best-effort calls: one attempt, every timeout `seconds`.

        Its own connection pool, so a request hanging here never holds a connection the others wait for."""
        twin = NextcloudClient(self.account, timeout=seconds, connect_timeout=seconds, total_timeout=seconds,
                               retries=0)
        twin._user_id = self._user_id
        return twin

    def _app(self, name: str, make: Callable[[], _App]) -> _App:
        """The app client `name`, made once (thread-safe) by `make()` on first use."""
        client = self._apps.get(name)
        if client is None:
            with self._apps_lock:
                client = self._apps.get(name)
                if client is None:
                    client = self._apps[name] = make()
        return cast(_App, client)   # _apps[name] is only ever what make() made

    # Each app client is made on first use, once (thread-safe): most calls need one or two of them.
    @property
    def caldav(self) -> CalDAV:
        """CalDAV calendars and events."""
        return self._app("caldav", lambda: CalDAV(self._transport, lambda: self.user_id))

    @property
    def carddav(self) -> CardDAV:
        """CardDAV address books and contacts."""
        return self._app("carddav", lambda: CardDAV(self._transport, lambda: self.user_id))

    @property
    def deck(self) -> Deck:
        """Deck boards, stacks and cards."""
        return self._app("deck", lambda: Deck(self._transport))

    @property
    def talk(self) -> Talk:
        """Talk rooms and chat."""
        public_url = self.account.public_url or self.account.url
        return self._app("talk", lambda: Talk(self._transport, public_url=public_url))

    @property
    def mail(self) -> Mail:
        """The Mail app's API."""
        return self._app("mail", lambda: Mail(self._transport))

    @property
    def unified(self) -> UnifiedSearch:
        """Unified search: the server's providers (file names; contents with the Full text search app)."""
        return self._app("unified", lambda: UnifiedSearch(self._transport))

    @property
    def user_id(self) -> str:
        """The DAV user id: the login name when it is plainly an id, else resolved once via OCS cloud/user."""
        if self._user_id is None:
            with self._uid_lock:
                if self._user_id is None:
                    login = self.account.user
                    if login and set(login) <= _PLAIN_ID:
                        self._user_id = login
                    else:
                        self._user_id = self.ocs.current_user().id or login
        return self._user_id

    def _recheck_user_id(self) -> bool:
        """After a DAV 404: confirm a guessed user id once via OCS; True when it was wrong and is now fixed."""
        with self._uid_lock:
            if self._uid_verified:
                return False
            self._uid_verified = True
        old = self.user_id
        try:
            new = self.ocs.current_user().id
        except NextcloudError:
            return False
        with self._uid_lock:
            if new and new != old:
                self._user_id = new
                return True
        return False

    def resolve_user_id(self) -> str:
        """Ask the server for the user id (one OCS request) and use it from now on."""
        uid = self.ocs.current_user().id
        with self._uid_lock:
            self._user_id = uid or self.account.user
            self._uid_verified = True
        return self._user_id

    def _probe_dav(self, home: str) -> bool:
        """Whether a CalDAV/CardDAV home answers for this user (PROPFIND Depth 0)."""
        url = f"/remote.php/dav/{home}" + paths.encode(self.user_id) + "/"
        try:
            self._transport.request("PROPFIND", url, source="webdav", dav=True, headers={"Depth": "0"},
                                    ok=(207,))
        except NextcloudError as err:
            if err.code in (ErrorCode.NOT_FOUND, ErrorCode.FORBIDDEN, ErrorCode.EXISTS, ErrorCode.INVALID_RESPONSE,
                            ErrorCode.BAD_REQUEST):
                return False
            raise
        return True

    @property
    def request_count(self) -> int:
        return self._transport.request_count

    @property
    def transport(self) -> Transport:
        return self._transport

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> "NextcloudClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"NextcloudClient(user={self.account.user!r})"
