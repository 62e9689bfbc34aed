"""What the live mail tests share: the Mail servers of `start.sh --mail` (env.sh's NC34_MAIL_*), read over plain
IMAP (imaplib), and deliveries through its Postfix (deliver.sh, or mailtool.py's SMTP for a message deliver.sh
cannot build: HTML only, a reply in a thread). Our code is never in the path of a read-back.
"""
from __future__ import annotations

import email
import email.policy
import imaplib
import importlib.util
import os
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any, Iterator

from tests.live.conftest import OCC_SH

SERVER_DIR = OCC_SH.parent
DELIVER_SH = SERVER_DIR / "deliver.sh"
MAIL_VARS = ("NC34_MAIL", "NC34_IMAP", "NC34_MAIL_ALICE", "NC34_MAIL_ALICE_PASSWORD", "NC34_MAIL_ELODIE",
             "NC34_MAIL_ELODIE_PASSWORD", "NC34_ROOT")


def mail_configured() -> bool:
    return all(os.environ.get(v) for v in MAIL_VARS) and DELIVER_SH.is_file()


def mail_server_or_skip() -> MailServer:
    """The --mail server of env.sh; the test skips where the live suite or its Mail servers are not configured."""
    import pytest

    from tests.live.conftest import live_configured

    if not live_configured():
        pytest.skip("live suite not configured")
    if not mail_configured():
        pytest.skip("no Mail servers: start the shared server with `start.sh ROOT --mail` (env.sh NC34_MAIL_*)")
    return MailServer.from_env()


@dataclass(frozen=True)
class Mailbox:
    """One mail account of the --mail server: its address is also its IMAP login."""

    address: str
    password: str
    account_id: int


@dataclass(frozen=True)
class MailServer:
    """The Dovecot and Postfix of `start.sh ROOT --mail`, and its two accounts (env.sh)."""

    root: Path
    imap_at: tuple[str, int]
    alice: Mailbox
    elodie: Mailbox

    @classmethod
    def from_env(cls) -> MailServer:
        host, _, port = os.environ["NC34_IMAP"].rpartition(":")

        def box(who: str) -> Mailbox:
            return Mailbox(os.environ[f"NC34_MAIL_{who}"], os.environ[f"NC34_MAIL_{who}_PASSWORD"],
                           int(os.environ.get(f"NC34_MAIL_{who}_ACCOUNT") or 0))
        return cls(Path(os.environ["NC34_ROOT"]), (host, int(port)), box("ALICE"), box("ELODIE"))

    @contextmanager
    def imap(self, who: Mailbox) -> Iterator[imaplib.IMAP4]:
        conn = imaplib.IMAP4(*self.imap_at)
        try:
            conn.login(who.address, who.password)
            yield conn
        finally:
            try:
                conn.logout()
            except (imaplib.IMAP4.error, OSError):
                pass

    def messages(self, who: Mailbox, folder: str, subject_part: str) -> list[dict[str, Any]]:
        """The messages of `folder` whose Subject contains `subject_part` (ASCII), parsed, with flags and the
        arrival date (INTERNALDATE), read without marking anything read."""
        out = []
        with self.imap(who) as conn:
            typ, _ = conn.select(_quote(folder), readonly=True)
            assert typ == "OK", f"no IMAP folder {folder}"
            typ, data = conn.uid("SEARCH", None, "SUBJECT", _quote(subject_part))
            for uid in (data[0] or b"").split():
                typ, parts = conn.uid("FETCH", uid, "(FLAGS INTERNALDATE BODY.PEEK[])")
                head = parts[0][0].decode()
                msg = email.message_from_bytes(parts[0][1], policy=email.policy.default)
                arrived = imaplib.Internaldate2tuple(parts[0][0])
                out.append({"uid": int(uid), "subject": str(msg["Subject"]), "from": str(msg["From"]),
                            "to": str(msg["To"]), "seen": "\\Seen" in head, "draft": "\\Draft" in head,
                            "arrived": time.mktime(arrived) if arrived else None, "message": msg})
        return out

    def wait_for(self, who: Mailbox, folder: str, subject_part: str, timeout: float = 30.0) -> list[dict[str, Any]]:
        """messages(...) once at least one is there (Postfix delivers to Dovecot within a second or two)."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.messages(who, folder, subject_part)
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.3)

    def deliver(self, sender: str, to: str, subject: str, body: str, *, attach: Path | None = None,
                sync: bool = True) -> str:
        """deliver.sh: SMTP to this Postfix, waited for in Dovecot, then (unless sync=False) Mail synced."""
        args = ["bash", str(DELIVER_SH), str(self.root), sender, to, subject, body]
        if attach is not None:
            args += ["--attach", str(attach)]
        if not sync:
            args.append("--no-sync")
        done = subprocess.run(args, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, f"deliver.sh failed: {done.stderr[-500:]}"
        return done.stdout.strip().splitlines()[-1]

    def deliver_message(self, msg: EmailMessage) -> str:
        """A message deliver.sh cannot build (HTML only, In-Reply-To), through mailtool.py's SMTP and wait."""
        tool = _mailtool()
        env = dict(line.split("=", 1) for line in (self.root / "conf" / "mail.env").read_text().split()
                   if "=" in line)
        tool.wait_delivered(env["POSTFIX_LOG"].strip("'\""), [tool.send(env["SMTP"].strip("'\""), msg)])
        return str(msg["Message-ID"])

    def append(self, who: Mailbox, folder: str, msg: EmailMessage) -> None:
        """Put a message straight into a folder over IMAP (as another mail client does)."""
        with self.imap(who) as conn:
            typ, _ = conn.append(_quote(folder), None, imaplib.Time2Internaldate(time.time()), msg.as_bytes())
            assert typ == "OK"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _mailtool() -> Any:
    spec = importlib.util.spec_from_file_location("nc34_mailtool", SERVER_DIR / "mailtool.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
