"""One httpx.Client per account, with deadlines, bounded retries and the error table.

Idempotent requests (GET, HEAD, PROPFIND, SEARCH, REPORT, OPTIONS, or a write
the caller marks idempotent) are retried on connection errors, 429 and 5xx
with exponential backoff and jitter, honouring Retry-After (capped). A
non-idempotent write is only retried when the request never left (connect
failure); a failure after it was sent is reported as "unknown_outcome".
A 401 ends the attempt in every layer: the credentials are recorded as refused
(nextcloud.refusals, by fingerprint) and not sent again until they change, and a
429 from Nextcloud's brute-force protection is named as such and not retried:
each failed login would prolong the throttling of the whole address.
Logs carry the method, the user-relative path and the status: never a URL,
header or credential.
"""
from __future__ import annotations

import email.utils
import json
import logging
import random
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

import httpx

from . import refusals as refused_credentials
from .config import Account
from .davxml import sabre_error
from .errors import NextcloudError, error_for

# A library only creates its logger: levels (httpx's and httpcore's kept at WARNING,
# since they log URLs) are set by the application (cli/logs.py).
log = logging.getLogger("mcp_nextcloud.nextcloud.http")

IDEMPOTENT = frozenset({"GET", "HEAD", "PROPFIND", "SEARCH", "REPORT", "OPTIONS"})
RETRY_AFTER_CAP = 10.0          # seconds: a longer Retry-After is reported, not waited for
USER_AGENT = "mcp-nextcloud/0.1 (httpx)"


def _retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass(frozen=True)
class RetryPolicy:
    """Whether a failed attempt is tried again, and after how long: exponential backoff with jitter,
    honouring Retry-After up to a cap, never past the request's overall deadline."""

    retries: int = 3
    backoff: float = 0.25
    retry_after_cap: float = RETRY_AFTER_CAP

    @staticmethod
    def retryable_status(status: int, *, safe: bool, no_retry: tuple[int, ...] = ()) -> bool:
        """A 429 was refused before any work was done, so even a write may retry; a 5xx only when safe."""
        if status in no_retry:
            return False
        return status == 429 or (status >= 500 and safe)

    def wait(self, attempt: int, *, retry_after: float | None, remaining: float) -> float | None:
        """Seconds to sleep before attempt `attempt + 1`, or None to give up (retries spent, too long a wait)."""
        if attempt >= self.retries:
            return None
        wait = self.backoff * (2 ** attempt) * (0.5 + random.random())
        if retry_after is not None:
            if retry_after > self.retry_after_cap:
                return None
            wait = max(wait, retry_after)
        return None if wait >= remaining else wait


SLOWDOWN_WINDOW_S = 1800.0   # Nextcloud blocks on the failed logins of the last 30 minutes


def recent_failed_login(account: Account, refusals: refused_credentials.Refusals | None = None) -> float | None:
    """When a login of this account from here (or, where an address record is named, anyone's login from this
    address: a team server's people) was last refused, within the brute-force window; else None.

    Then a slow or missing answer may be Nextcloud's brute-force delay, not an overloaded server."""
    store = refusals or refused_credentials.shared()
    marks = [store.refused_at(refused_credentials.server_fingerprint(account))]
    address = refused_credentials.address_record()     # anyone's, on a team server: everyone is slowed
    if address is not None:
        marks.append(address.refused_at(refused_credentials.ADDRESS_MARK))
    recent = [when for when in marks if when is not None and time.time() - when < SLOWDOWN_WINDOW_S]
    return max(recent) if recent else None


def is_bruteforce_throttle(resp: httpx.Response) -> bool:
    """A 429 from Nextcloud's brute-force protection (not a per-route rate limit): seen on Nextcloud 34 as a
    DAV TooManyRequests exception, or "Reached maximum delay" from OCS and the app APIs."""
    if resp.status_code != 429:
        return False
    body = resp.content[:4000] if resp.content else b""
    return b"TooManyRequests" in body or b"Reached maximum delay" in body


def is_login_failure(resp: httpx.Response) -> bool:
    """A 401 that refuses the credentials themselves (WWW-Authenticate, OCS 997 "Unauthorised", or a DAV
    NotAuthenticated), as opposed to an app's own 401 about one object."""
    if resp.status_code != 401:
        return False
    if resp.headers.get("www-authenticate"):
        return True
    body = resp.content[:4000] if resp.content else b""
    return b"NotAuthenticated" in body or b'"statuscode":997' in body or b"<statuscode>997<" in body \
        or not body


def response_detail(resp: httpx.Response) -> str | None:
    """The server's own error message, from a Sabre XML, OCS, Deck or Talk body."""
    body = resp.content[:20000] if resp.content else b""
    if not body:
        return None
    ctype = resp.headers.get("content-type", "")
    text = body.decode("utf-8", "replace").strip()
    if text.startswith("{") or "json" in ctype:
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if isinstance(data, dict):
            meta = (data.get("ocs") or {}).get("meta") if isinstance(data.get("ocs"), dict) else None
            if meta and meta.get("message"):
                return str(meta["message"])
            ocs_data = (data.get("ocs") or {}).get("data") if isinstance(data.get("ocs"), dict) else None
            if isinstance(ocs_data, dict) and ocs_data.get("error"):
                return str(ocs_data["error"])
            for key in ("message", "error"):
                if isinstance(data.get(key), str):
                    return str(data[key])
        return None
    if text.startswith("<"):
        _, msg = sabre_error(body)
        if msg:
            return msg
        if "<ocs>" in text:
            start, end = text.find("<message>"), text.find("</message>")
            if 0 <= start < end:
                return text[start + 9:end]
        return None
    return text[:200]


def ocs_statuscode(resp: httpx.Response) -> int | None:
    """meta.statuscode of an OCS JSON body (998 = no such route, e.g. an app that is not installed)."""
    try:
        return int(resp.json()["ocs"]["meta"]["statuscode"])
    except (ValueError, KeyError, TypeError):
        text = resp.text if resp.content else ""
        start, end = text.find("<statuscode>"), text.find("</statuscode>")
        if 0 <= start < end and text[start + 12:end].strip().isdigit():
            return int(text[start + 12:end])
        return None


class Transport:
    """Sends requests for one account; counts them; maps failures to NextcloudError."""

    def __init__(self, account: Account, *, timeout: float = 30.0, connect_timeout: float = 5.0,
                 total_timeout: float = 120.0, retries: int = 3, backoff: float = 0.25,
                 refusals: refused_credentials.Refusals | None = None) -> None:
        self.account = account
        self.refusals = refusals or refused_credentials.shared()
        self._fingerprint = refused_credentials.fingerprint(account)
        self._server_fp = refused_credentials.server_fingerprint(account)
        self._address = refused_credentials.address_record()
        self.base_url = account.url
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.total_timeout = total_timeout
        self.policy = RetryPolicy(retries=max(0, int(retries)), backoff=max(0.0, float(backoff)))
        self._count = 0
        self._lock = threading.Lock()
        self.client = httpx.Client(
            base_url=account.url,
            auth=httpx.BasicAuth(account.user, account.app_password),
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            headers={"User-Agent": USER_AGENT},
            follow_redirects=False,
        )

    @property
    def request_count(self) -> int:
        return self._count

    def close(self) -> None:
        self.client.close()

    # -- helpers -------------------------------------------------------------------------
    def _headers(self, headers: Mapping[str, str] | None, dav: bool) -> dict[str, str]:
        out = dict(headers or {})
        if not dav:
            # Nextcloud's CSRF check passes for Basic auth only with this header.
            out.setdefault("OCS-APIRequest", "true")
            out.setdefault("Accept", "application/json")
        return out

    def _sleep_before_retry(self, attempt: int, resp: httpx.Response | None, deadline: float) -> bool:
        """Sleep what the retry policy says; False when it says to give up."""
        wait = self.policy.wait(attempt, retry_after=_retry_after(resp) if resp is not None else None,
                                remaining=deadline - time.monotonic())
        if wait is None:
            return False
        time.sleep(wait)
        return True

    def _attempt_timeout(self, deadline: float) -> httpx.Timeout:
        remaining = max(0.05, deadline - time.monotonic())
        return httpx.Timeout(min(self.timeout, remaining), connect=min(self.connect_timeout, remaining))

    # -- the one entry point -------------------------------------------------------------
    def request(self, method: str, url: str, *, source: str, path: str | None = None,
                headers: Mapping[str, str] | None = None, content: bytes | str | None = None,
                params: Any = None, json_body: Any = None, data: Any = None, dav: bool = False,
                idempotent: bool | None = None, ok: tuple[int, ...] = (),
                stream: bool = False, conditions: Mapping[int, str] | None = None,
                no_retry: tuple[int, ...] = ()) -> httpx.Response:
        """Send one logical request (with retries); return the response or raise NextcloudError.

        `url` is relative to the server; `path` is what messages may show.
        Statuses in `ok` (or 2xx when `ok` is empty) are returned; others raise,
        via the error table (`conditions` maps a status to a more precise row,
        e.g. {404: "missing_parent"} for a PUT); statuses in `no_retry` are
        deterministic for this call and are not retried. With stream=True the
        caller must close the response.
        """
        method = method.upper()
        if self.refusals.refused_at(self._fingerprint) is not None:
            # Refused before (here or in another process): sending them again is one more failed login.
            raise error_for(source, 401, condition="refused_before", path=path)
        safe = (method in IDEMPOTENT) if idempotent is None else idempotent
        hdrs = self._headers(headers, dav)
        # One id per logical request (all its attempts): sent along, and named when a write's outcome is unknown.
        request_id = hdrs.setdefault("X-Request-Id", uuid.uuid4().hex[:20])
        deadline = time.monotonic() + self.total_timeout
        attempt = 0
        while True:
            sent_at = time.monotonic()
            resp: httpx.Response | None = None
            try:
                with self._lock:
                    self._count += 1
                req = self.client.build_request(method, url, headers=hdrs, content=content, params=params,
                                                json=json_body, data=data,
                                                timeout=self._attempt_timeout(deadline))
                resp = self._send(req, stream, deadline, source, path)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                # The request never reached the server: retrying is safe even for writes.
                log.info("%s %s: connect failed (%s)", method, path or "", type(exc).__name__)
                if self._sleep_before_retry(attempt, None, deadline):
                    attempt += 1
                    continue
                cond = "timeout" if isinstance(exc, httpx.ConnectTimeout) else "network"
                raise error_for(source, None, condition=cond, path=path) from None
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                log.info("%s %s: failed after sending (%s)", method, path or "", type(exc).__name__)
                if not safe:
                    raise _unknown_outcome(source, path, request_id) from None
                if self._sleep_before_retry(attempt, None, deadline):
                    attempt += 1
                    continue
                cond = "timeout" if isinstance(exc, httpx.TimeoutException) else "network"
                raise error_for(source, None, condition=cond, path=path) from None
            except httpx.HTTPError as exc:
                log.info("%s %s: http error (%s)", method, path or "", type(exc).__name__)
                raise error_for(source, None, condition="network", path=path) from None

            status = resp.status_code
            log.debug("%s %s -> %d in %.0f ms", method, path or "", status, (time.monotonic() - sent_at) * 1000)
            good = (status in ok) if ok else (200 <= status < 300)
            if good:
                if self.refusals.refused_at(self._server_fp) is not None:
                    self.refusals.forget(self._server_fp)   # a login passed: Nextcloud dropped its delay too
                return resp
            if stream:
                _read_error_body(resp)   # the error body holds the server's message (and the throttle's mark)
            throttled = self._judge_refusal(resp, method, path)
            if (not throttled and self.policy.retryable_status(status, safe=safe, no_retry=no_retry)
                    and self._sleep_before_retry(attempt, resp, deadline)):
                attempt += 1
                continue
            raise self.error_from(resp, source=source, path=path,
                                  condition="throttled" if throttled else (conditions or {}).get(status))

    def _send(self, req: httpx.Request, stream: bool, deadline: float, source: str,
              path: str | None) -> httpx.Response:
        """Send one attempt; while the credentials are unproven, one attempt at a time carries them."""
        gate = None if self.refusals.accepted(self._fingerprint) else self._unproven(deadline, source, path)
        try:
            resp = self.client.send(req, stream=stream)
            if resp.status_code not in (401, 429):
                self.refusals.mark_accepted(self._fingerprint)
            return resp
        finally:
            if gate is not None:
                gate.release()

    def _unproven(self, deadline: float, source: str, path: str | None) -> threading.Lock | None:
        """The credentials' gate, held: this attempt is the one that carries them; None when another attempt
        proved them while this one waited. Refused meanwhile: raised, nothing sent."""
        gate = self.refusals.gate(self._fingerprint)
        if not gate.acquire(timeout=max(0.0, deadline - time.monotonic())):
            # Another request is still learning whether these credentials pass: not one more login attempt.
            raise error_for(source, None, condition="timeout", path=path)
        if self.refusals.refused_at(self._fingerprint) is not None:
            gate.release()
            raise error_for(source, 401, condition="refused_before", path=path)
        if self.refusals.accepted(self._fingerprint):
            gate.release()
            return None
        return gate

    def _judge_refusal(self, resp: httpx.Response, method: str, path: str | None) -> bool:
        """Record refused credentials (a login failure); True when the brute-force protection throttles us."""
        if resp.status_code == 401 and is_login_failure(resp):
            self.refusals.record(self._fingerprint, self._server_fp)
            if self._address is not None:
                self._address.record(refused_credentials.ADDRESS_MARK)
            log.warning("%s %s -> 401: credentials refused; not sent again until they change", method, path or "")
        return is_bruteforce_throttle(resp)

    def error_from(self, resp: httpx.Response, *, source: str, path: str | None = None,
                   condition: str | None = None) -> NextcloudError:
        """Map a failed response to the error table (detects a missing app's empty 404 / OCS 998)."""
        status = resp.status_code
        if condition is None and source in ("deck", "talk", "mail") and status in (404, 405):
            if not resp.content or ocs_statuscode(resp) == 998:
                condition = "app_missing"
        detail = response_detail(resp)
        return error_for(source, status, condition=condition, path=path, detail=detail,
                         retry_after=_retry_after(resp))

    @contextmanager
    def stream(self, method: str, url: str, **kw: Any) -> Iterator[httpx.Response]:
        """request(..., stream=True) as a context manager that always closes the response."""
        resp = self.request(method, url, stream=True, **kw)
        try:
            yield resp
        finally:
            resp.close()

    def json(self, resp: httpx.Response, *, source: str, path: str | None = None) -> Any:
        """Decode a JSON body or raise invalid_response."""
        try:
            return resp.json()
        except ValueError:
            raise error_for(source, resp.status_code, condition="invalid_response", path=path) from None

    def ocs_data(self, resp: httpx.Response, *, source: str, path: str | None = None) -> Any:
        """ocs.data of an OCS JSON envelope."""
        data = self.json(resp, source=source, path=path)
        try:
            return data["ocs"]["data"]
        except (KeyError, TypeError):
            raise error_for(source, resp.status_code, condition="invalid_response", path=path,
                            detail="no OCS envelope") from None


def _read_error_body(resp: httpx.Response) -> None:
    """Read a streamed error response whole (it is small) and close it, so its body can be judged and shown."""
    try:
        resp.read()
    except httpx.HTTPError:
        pass
    finally:
        resp.close()


def _unknown_outcome(source: str, path: str | None, request_id: str) -> NextcloudError:
    """A write sent but unanswered: the error carries the request id, so the outcome can be traced and reconciled."""
    err = error_for(source, None, condition="unknown_outcome", path=path)
    err.cause = f"{err.cause.rstrip('.')} (request id: {request_id})"
    err.request_id = request_id    # type: ignore[attr-defined]  # for programs; the cause says it for people
    return err
