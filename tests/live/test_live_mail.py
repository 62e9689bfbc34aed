"""mcp-mail against a real Nextcloud Mail (start.sh --mail: Mail 5.11.2, Dovecot, Postfix), every effect read back
over plain IMAP (imaplib) or Postfix's log, never from the tool's own answer.

Skipped unless NEXTCLOUD_* and the NC34_MAIL_* of env.sh are set. The module delivers its own messages through
Postfix (a unique token in each subject: the server is shared and keeps earlier runs' mail): plain, HTML only,
with an attachment, a thread, a long one, one to two people. Mail allows 5 sends per 100 s per user; this
module sends 2 (one delivered, one refused), the browser test 1.
"""
from __future__ import annotations

import json
import time
import unicodedata
import uuid
from email.message import EmailMessage
from email.utils import formataddr, make_msgid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live.conftest import ServerAdmin, plain_client
from tests.live.mail_live import MailServer, mail_server_or_skip

TOOLS_JSON = Path(__file__).resolve().parents[2] / "mcp_nextcloud" / "cli" / "tools.json"
OCS = "/ocs/v2.php/apps/mail"
WEB = "/index.php/apps/mail/api"
LONG_NEEDLE_AT = 25_000


@pytest.fixture(scope="module")
def mail_server() -> MailServer:
    """The --mail server's Dovecot and Postfix (skips where env.sh has no NC34_MAIL)."""
    return mail_server_or_skip()


@pytest.fixture(scope="module")
def admin(mail_server: MailServer) -> ServerAdmin:
    import os

    return ServerAdmin(mail_server.root, os.environ["NEXTCLOUD_URL"].rstrip("/"))


@pytest.fixture(scope="module")
def corpus(mail_server: MailServer, admin: ServerAdmin, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Messages of this run in alice's INBOX, delivered through Postfix; Mail synced once at the end."""
    srv, token = mail_server, "T" + uuid.uuid4().hex[:8]
    elodie = formataddr(("Élodie Martin", srv.elodie.address))
    subjects = {"cafe": f"{token} Réunion du café", "html": f"{token} HTML only", "pdf": f"{token} Contract attached",
                "first": f"{token} Thread start", "reply": f"Re: {token} Thread start", "long": f"{token} Long report",
                "both": f"{token} For both of you"}
    srv.deliver(elodie, srv.alice.address, subjects["cafe"], f"Le café est prêt. Thé aussi. Budget {token}.",
                sync=False)
    html = _message("Boutique <news@boutique.example>", srv.alice.address, subjects["html"])
    html.set_content(f"<html><body><p>Prix spécial <b>soldes</b> d'hiver {token}</p></body></html>", subtype="html")
    srv.deliver_message(html)
    pdf = tmp_path_factory.mktemp("mail") / "contract-2026.txt"
    pdf.write_text("Contract terms.\n")
    srv.deliver("factures@fournisseur.example", srv.alice.address, subjects["pdf"], "See the attached contract.",
                attach=pdf, sync=False)
    first = _message(elodie, srv.alice.address, subjects["first"])
    first.set_content("Shall we start the thread?")
    srv.deliver_message(first)
    reply = _message("Françoise Lefèvre <francoise.lefevre@example.invalid>", srv.alice.address, subjects["reply"])
    reply["In-Reply-To"] = reply["References"] = first["Message-ID"]
    reply.set_content("Yes, here is my answer.")
    srv.deliver_message(reply)
    filler = "Lorem ipsum dolor sit amet, quarterly figures attached below. " * (LONG_NEEDLE_AT // 62 + 1)
    long_body = filler[:LONG_NEEDLE_AT] + f"NEEDLE-{token} is the final figure.\n" + "Appendix line.\n" * 200
    srv.deliver(elodie, srv.alice.address, subjects["long"], long_body, sync=False)
    srv.deliver(elodie, f"{srv.alice.address}, {srv.elodie.address}", subjects["both"], "For both of you.",
                sync=False)
    with srv.imap(srv.alice) as conn:   # one read message, as a person who opened it elsewhere
        conn.select("INBOX")
        typ, data = conn.uid("SEARCH", None, "SUBJECT", f'"{token} For both"')
        conn.uid("STORE", data[0].split()[0], "+FLAGS", r"(\Seen)")
    admin.occ("mail:account:sync", str(srv.alice.account_id))
    return {"token": token, "subjects": subjects, "long_body": long_body}


def _message(sender: str, to: str, subject: str) -> EmailMessage:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, to, subject
    msg["Message-ID"] = make_msgid(domain="example.invalid")
    return msg


@pytest.fixture
def mail_tools(tools_factory: Any, mail_server: MailServer) -> Any:
    """mcp-mail on the live account (a server of its own per test: its sync memory starts empty)."""
    tools = tools_factory(mail=True)
    assert tools.server.mail_installed(), "Mail does not answer on a --mail server"
    return tools


def _subjects(data: dict[str, Any]) -> list[str]:
    return [m["subject"] for m in data["messages"]]


def _imap_subjects(srv: MailServer, token: str, keep: Any = lambda m: True, folder: str = "INBOX") -> set[str]:
    return {m["subject"] for m in srv.messages(srv.alice, folder, token) if keep(m)}


def _lines(text: str) -> str:
    """A body as read over IMAP, with the line ends a person means (Mail writes CRLF inside the text)."""
    return text.replace("\r\n", "\n")


def _fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text.casefold()) if not unicodedata.combining(c))


# --- mail_contacts -------------------------------------------------------------------------------------------

def test_live_contacts_find_real_addresses(mail_tools: Any, mail_server: MailServer) -> None:
    for spelled in ("élodie", "ELODIE", "Martin"):
        found = mail_tools.ok("mail_contacts", {"name": spelled})["people"]
        assert mail_server.elodie.address in [p["email"] for p in found], (spelled, found)
    with mail_server.imap(mail_server.elodie):   # the address is a real mailbox: its IMAP login works
        pass
    nobody = mail_tools.ok("mail_contacts", {"name": "Zorro Quintanilla"})
    assert nobody["people"] == [] and "never build" in nobody["hint"]


# --- mail_search: every filter, compared with what IMAP holds ---------------------------------------------------

def test_live_search_by_subject_lists_every_message_of_a_thread(mail_tools: Any, mail_server: MailServer,
                                                                corpus: dict[str, Any]) -> None:
    token = corpus["token"]
    data = mail_tools.ok("mail_search", {"subject": token, "limit": 50})
    assert set(_subjects(data)) == _imap_subjects(mail_server, token) == set(corpus["subjects"].values())
    # Mail's own (threaded) listing shows a thread once: the older message was never findable by that view
    with plain_client(mail_tools.ctx.account) as http:
        inbox = next(b for b in mail_tools.ctx.client().mail.mailboxes(mail_server.alice.account_id)
                     if b.name == "INBOX")
        threaded = http.get(f"{OCS}/ocs/mailboxes/{inbox.id}/messages",
                            params={"format": "json", "limit": 50, "filter": f"subject:{token}"}).json()
    assert corpus["subjects"]["first"] not in [m["subject"] for m in threaded["ocs"]["data"]]
    dates = [m["date"] for m in data["messages"]]
    assert dates == sorted(dates, reverse=True) and "arrived" in data["hint"]


@pytest.mark.parametrize("spelled", ["élodie", "ÉLODIE", "Élodie Martin", "elodie"])
def test_live_search_by_sender_ignores_case_and_accents(mail_tools: Any, mail_server: MailServer,
                                                        corpus: dict[str, Any], spelled: str) -> None:
    token = corpus["token"]
    data = mail_tools.ok("mail_search", {"sender": spelled, "subject": token, "limit": 50})
    expected = _imap_subjects(mail_server, token, lambda m: "elodie" in _fold(m["from"]))
    assert set(_subjects(data)) == expected and corpus["subjects"]["first"] in expected


def test_live_an_unaccented_name_mail_cannot_match_says_why(mail_tools: Any, mail_server: MailServer,
                                                            corpus: dict[str, Any]) -> None:
    """"Elodie Martin" is neither in the name (Élodie) nor in the address: Mail finds nothing, and says why."""
    token = corpus["token"]
    data = mail_tools.ok("mail_search", {"sender": "Elodie Martin", "subject": token})
    assert data["messages"] == [] and _imap_subjects(mail_server, token, lambda m: "Élodie Martin" in m["from"])
    assert "accents" in data["hint"] and "'Elodie Martin'" in data["hint"]


def test_live_search_by_recipient_subject_accents_and_body(mail_tools: Any, mail_server: MailServer,
                                                           corpus: dict[str, Any]) -> None:
    token, subjects = corpus["token"], corpus["subjects"]
    to_elodie = mail_tools.ok("mail_search", {"to": "elodie", "subject": token})
    assert set(_subjects(to_elodie)) == _imap_subjects(mail_server, token, lambda m: "elodie" in m["to"].lower())
    for spelled in (f"{token} réunion", f"{token} RÉUNION DU CAFÉ"):
        assert _subjects(mail_tools.ok("mail_search", {"subject": spelled})) == [subjects["cafe"]]
    plain = mail_tools.ok("mail_search", {"subject": f"{token} reunion"})   # Mail compares accents exactly
    assert plain["messages"] == [] and "accents" in plain["hint"] and "not proof" in plain["hint"]
    assert _subjects(mail_tools.ok("mail_search", {"body": "soldes", "subject": token})) == [subjects["html"]]
    assert _subjects(mail_tools.ok("mail_search", {"body": "Thé aussi", "subject": token})) == [subjects["cafe"]]
    needle = mail_tools.ok("mail_search", {"body": f"NEEDLE-{token}"})   # far beyond Mail's preview
    assert _subjects(needle) == [subjects["long"]]
    assert _subjects(mail_tools.ok("mail_search", {"subject": f"{token} Contract"})) == [subjects["pdf"]]


def test_live_search_by_unread_and_dates(mail_tools: Any, mail_server: MailServer, corpus: dict[str, Any]) -> None:
    token = corpus["token"]
    unread = mail_tools.ok("mail_search", {"unread": True, "subject": token, "limit": 50})
    assert set(_subjects(unread)) == _imap_subjects(mail_server, token, lambda m: not m["seen"])
    read = mail_tools.ok("mail_search", {"unread": False, "subject": token, "limit": 50})
    assert set(_subjects(read)) == _imap_subjects(mail_server, token, lambda m: m["seen"]) == {
        corpus["subjects"]["both"]}
    # The four seeded messages arrived over the last two days (their INTERNALDATE set back): dates are arrivals
    seeds = [m for m in mail_server.messages(mail_server.alice, "INBOX", "") if m["arrived"]
             and time.time() - m["arrived"] > 1800][:4]
    assert len(seeds) >= 3
    days = sorted({time.strftime("%Y-%m-%d", time.gmtime(m["arrived"])) for m in seeds})
    after, before = days[0], days[-2] if len(days) > 1 else days[0]
    data = mail_tools.ok("mail_search", {"after": after, "before": before, "limit": 50})
    expected = {m["subject"] for m in seeds if after <= time.strftime("%Y-%m-%d", time.gmtime(m["arrived"])) <= before}
    assert {s for s in _subjects(data) if s in {m["subject"] for m in seeds}} == expected
    assert all(after <= m["date"][:10] <= before for m in data["messages"])


def test_live_search_in_a_folder_mail_never_synced(mail_tools: Any, mail_server: MailServer,
                                                   corpus: dict[str, Any]) -> None:
    """A folder made over IMAP (as another client does): Mail's folder list lacks it until a refresh, and its
    listing answers 500 until a sync with init (issue 35, 1). The tool finds the message anyway."""
    token = corpus["token"]
    folder = f"Projects-{token}"
    with mail_server.imap(mail_server.alice) as conn:
        assert conn.create(folder)[0] == "OK"
    filed = _message("Chen Wei <chen.wei@partner.example>", mail_server.alice.address, f"{token} Filed away")
    filed.set_content("In a folder of its own.")
    mail_server.append(mail_server.alice, folder, filed)
    data = mail_tools.ok("mail_search", {"mailbox": folder})
    assert _subjects(data) == [f"{token} Filed away"] == sorted(_imap_subjects(mail_server, token, folder=folder))
    archived = _message("Chen Wei <chen.wei@partner.example>", mail_server.alice.address, f"{token} Archived")
    archived.set_content("Old news.")
    mail_server.append(mail_server.alice, "Archive", archived)
    assert f"{token} Archived" in _subjects(mail_tools.ok("mail_search", {"mailbox": "Archive", "subject": token}))


def test_live_an_unsynced_mailbox_is_a_500_that_the_client_answers(mail_tools: Any, mail_server: MailServer,
                                                                   corpus: dict[str, Any]) -> None:
    """The real behaviour, asked plainly, then the client's answer to it: one sync with init, then the list."""
    token = corpus["token"]
    folder = f"Unsynced-{token}"
    with mail_server.imap(mail_server.alice) as conn:
        conn.create(folder)
    msg = _message("Chen Wei <chen.wei@partner.example>", mail_server.alice.address, f"{token} Not cached")
    msg.set_content("x")
    mail_server.append(mail_server.alice, folder, msg)
    with plain_client(mail_tools.ctx.account) as http:
        boxes = http.get(f"{WEB}/mailboxes", params={"accountId": mail_server.alice.account_id,
                                                     "forceSync": "true"}).json()["mailboxes"]
        box = next(b["databaseId"] for b in boxes if b["name"] == folder)
        listed = http.get(f"{OCS}/ocs/mailboxes/{box}/messages", params={"format": "json", "limit": 5})
        assert listed.status_code == 500
    assert [m.subject for m in mail_tools.ctx.client().mail.messages(box, limit=5)] == [f"{token} Not cached"]


def test_live_mail_delivered_after_the_last_sync_is_found_and_the_answer_says_so(
        mail_tools: Any, mail_server: MailServer, admin: ServerAdmin, corpus: dict[str, Any]) -> None:
    """deliver.sh --no-sync: in IMAP, not in Mail's copy; the search asks Mail to sync first (issue 35, 4)."""
    subject = f"{corpus['token']} Arrived late"
    mail_server.deliver(formataddr(("Élodie Martin", mail_server.elodie.address)), mail_server.alice.address,
                        subject, "Just arrived.", sync=False)
    assert _imap_subjects(mail_server, subject) == {subject}
    with plain_client(mail_tools.ctx.account) as http:
        inbox = next(b.id for b in mail_tools.ctx.client().mail.mailboxes(mail_server.alice.account_id)
                     if b.name == "INBOX")
        before = http.get(f"{OCS}/ocs/mailboxes/{inbox}/messages",
                          params={"format": "json", "limit": 5, "filter": f"subject:{corpus['token']}%20Arrived"})
        assert before.json()["ocs"]["data"] == []     # Mail's last sync did not see it
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
    data = mail_tools.ok("mail_search", {"subject": subject})
    assert _subjects(data) == [subject]
    assert data["syncedAt"] >= started and data["syncedAt"] in data["hint"] and "not proof" in data["hint"]


# --- mail_read -----------------------------------------------------------------------------------------------

def _one(tools: Any, subject: str) -> int:
    found = tools.ok("mail_search", {"subject": subject})["messages"]
    assert len(found) == 1, found
    return int(found[0]["id"])


def test_live_read_a_long_message_with_budgets_and_find(mail_tools: Any, mail_server: MailServer,
                                                        corpus: dict[str, Any]) -> None:
    token, subject = corpus["token"], corpus["subjects"]["long"]
    imap_body = mail_server.messages(mail_server.alice, "INBOX", subject)[0]["message"].get_content()
    msg_id = _one(mail_tools, subject)
    first = mail_tools.ok("mail_read", {"id": msg_id, "limit": 500})
    shown = len(first["body"])
    assert first["truncated"] is True and first["nextOffset"] == shown and 450 <= shown <= 500
    assert first["body"] == _lines(imap_body)[:shown] and first["total"] >= LONG_NEEDLE_AT
    second = mail_tools.ok("mail_read", {"id": msg_id, "offset": shown, "limit": 500})
    assert second["body"] == _lines(imap_body)[shown:shown + len(second["body"])]
    default = mail_tools.ok("mail_read", {"id": msg_id})
    assert 7500 <= len(default["body"]) <= 8000 and default["truncated"] is True
    found = mail_tools.ok("mail_read", {"id": msg_id, "find": f"needle-{token.lower()}"})
    assert found["total"] == 1
    at = found["matches"][0]["offset"]
    there = mail_tools.ok("mail_read", {"id": msg_id, "offset": at, "limit": 60})
    assert there["body"].startswith(f"NEEDLE-{token}") and abs(at - LONG_NEEDLE_AT) < 50
    assert "past the end" in mail_tools.error("mail_read", {"id": msg_id, "offset": 10_000_000})


def test_live_read_html_only_and_an_attachment(mail_tools: Any, mail_server: MailServer,
                                               corpus: dict[str, Any]) -> None:
    html = mail_tools.ok("mail_read", {"id": _one(mail_tools, corpus["subjects"]["html"])})
    assert "soldes" in html["body"] and "Prix spécial" in html["body"] and "<b>" not in html["body"]
    pdf_subject = corpus["subjects"]["pdf"]
    attached = mail_server.messages(mail_server.alice, "INBOX", pdf_subject)[0]["message"]
    names = [part.get_filename() for part in attached.iter_attachments()]
    read = mail_tools.ok("mail_read", {"id": _one(mail_tools, pdf_subject)})
    assert [a["name"] for a in read["attachments"]] == names == ["contract-2026.txt"]
    assert "attached contract" in read["body"]


# --- mail_compose, and mail_send / mail_draft as the preview app calls them -----------------------------------

def _compose(tools: Any, **args: Any) -> tuple[dict[str, Any], str]:
    from mcp_nextcloud.server.tools.mail.compose import TOKEN_META_KEY

    result = tools.call("mail_compose", args)
    assert not result.is_error, result.content[0].text
    data = json.loads(result.content[0].text)
    token = (result.meta or {}).get(TOKEN_META_KEY, "")
    assert token and token not in result.content[0].text
    return data, token


def test_live_compose_previews_and_sends_nothing(mail_tools: Any, mail_server: MailServer,
                                                 corpus: dict[str, Any]) -> None:
    subject = f"{corpus['token']} Preview only"
    data, _ = _compose(mail_tools, to=[mail_server.elodie.address], subject=subject, body="Draft of a thought.")
    assert data["sent"] is False and data["to"] == [mail_server.elodie.address] and data["from"]
    assert "cannot send it yourself" in data["hint"]
    time.sleep(2)
    assert not mail_server.messages(mail_server.elodie, "INBOX", subject)
    assert not mail_server.messages(mail_server.alice, "Sent", subject)
    guessed = mail_tools.error("mail_compose", {"to": ["elodie.martinez@example.invalid"], "subject": "x",
                                                "body": "y"})
    assert "mail_contacts" in guessed


def test_live_send_from_the_preview_reaches_elodie_with_a_copy_in_sent(mail_tools: Any, mail_server: MailServer,
                                                                       corpus: dict[str, Any]) -> None:
    subject = f"{corpus['token']} Budget review — café at 10"
    body = "Hi Élodie,\n\nShall we review the budget over a café at 10?\n\nAlice"
    data, token = _compose(mail_tools, to=[mail_server.elodie.address], subject=subject, body=body)
    assert "preview app" in mail_tools.error("mail_send", {"id": data["id"], "token": "guessed",
                                                           "recipients": data["recipients"]})
    sent = mail_tools.ok("mail_send", {"id": data["id"], "token": token, "recipients": data["recipients"]})
    assert sent["sent"] is True
    arrived = mail_server.wait_for(mail_server.elodie, "INBOX", corpus["token"] + " Budget review")
    assert [m["subject"] for m in arrived] == [subject]
    assert _lines(arrived[0]["message"].get_content()).strip() == body.strip()
    assert mail_server.alice.address in arrived[0]["from"]
    copies = mail_server.wait_for(mail_server.alice, "Sent", corpus["token"] + " Budget review")
    assert [m["subject"] for m in copies] == [subject]
    again = mail_tools.ok("mail_send", {"id": data["id"], "token": token, "recipients": data["recipients"]})
    assert again["alreadySent"] is True
    time.sleep(1)
    assert len(mail_server.messages(mail_server.elodie, "INBOX", corpus["token"] + " Budget review")) == 1
    listed = mail_tools.ok("mail_search", {"mailbox": "Sent", "subject": f"{corpus['token']} Budget review"})
    assert _subjects(listed) == [subject]


def test_live_draft_from_the_preview_is_in_imap_drafts_with_its_text(mail_tools: Any, mail_server: MailServer,
                                                                      corpus: dict[str, Any]) -> None:
    subject = f"{corpus['token']} Draft for later"
    body = "Ideas for the offsite:\n- the lake\n- the café by the station"
    data, token = _compose(mail_tools, to=[mail_server.elodie.address], subject=subject, body=body)
    saved = mail_tools.ok("mail_draft", {"id": data["id"], "token": token})
    assert saved["sent"] is False and "Drafts mailbox" in saved["hint"] and "five minutes" not in saved["hint"]
    drafts = mail_server.wait_for(mail_server.alice, "Drafts", subject, timeout=10)
    assert [(m["subject"], m["draft"]) for m in drafts] == [(subject, True)]
    # Mail 5.11 drops a `body`: the text is bodyPlain
    assert _lines(drafts[0]["message"].get_content()).strip() == body
    assert mail_server.elodie.address in drafts[0]["to"]
    assert not mail_server.messages(mail_server.elodie, "INBOX", subject)
    listed = mail_tools.ok("mail_search", {"mailbox": "Drafts", "subject": subject})
    assert _subjects(listed) == [subject]


def test_live_a_refused_recipient_is_a_refusal_that_never_suggests_a_retry(
        mail_tools: Any, mail_server: MailServer, corpus: dict[str, Any]) -> None:
    """Postfix answers 550 for an unknown mailbox of example.invalid; Mail then answers 500 without a reason."""
    nobody = f"nobody-{corpus['token'].lower()}@example.invalid"
    subject = f"{corpus['token']} To nobody"
    data, token = _compose(mail_tools, to=[nobody, mail_server.elodie.address], subject=subject, body="x",
                           typedByUser=[nobody])
    log = mail_server.root / "logs" / "postfix.log"
    mark = log.stat().st_size
    result = mail_tools.call("mail_send", {"id": data["id"], "token": token, "recipients": data["recipients"]})
    assert result.is_error and result.structured_content["error"]["retry"] is False
    text = result.content[0].text
    assert nobody in text and "Most likely" in text and "sent it to no one" in text and "fails the same way" in text
    assert text.endswith("Do not retry.") and "Retry once" not in text
    with log.open("rb") as fh:
        fh.seek(mark)
        said = fh.read().decode(errors="replace")
    assert f"550 5.1.1 <{nobody}>" in said
    time.sleep(1)
    assert not mail_server.messages(mail_server.elodie, "INBOX", subject)   # one refusal aborts the whole send


# --- a server without Mail for this account's identity: the main server -----------------------------------------

def test_live_main_identity_has_no_mail_tools(tools_factory: Any, live_http: httpx.Client) -> None:
    main = tools_factory()
    names = main.list_tools()
    registered = [n for n, spec in json.loads(TOOLS_JSON.read_text()).items() if spec["server"] == "main"]
    assert sorted(names) == sorted(registered) and not [n for n in names if n.startswith("mail_")]  # own identity
    answers = live_http.get(f"{OCS}/account/list", params={"format": "json"}).status_code != 404
    assert main.ok("nextcloud_whoami")["apps"]["mail"] == answers
