"""The preview app in a real headless Chromium against the real Nextcloud Mail (start.sh --mail): a person presses
Send, then Save draft on another preview, and each message is read back over IMAP (elodie's INBOX, alice's Sent,
alice's Drafts), never from the tool's answer.

The host page and the bridge are those of tests/server/test_mail_apps_browser.py. Skips without Chromium or
playwright, or without the --mail server. One send: Mail allows 5 per 100 s per user.
"""
from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest

from mcp_nextcloud.server.tools.mail.tools import PREVIEW_APP
from tests.live.mail_live import MailServer, mail_server_or_skip
from tests.server.test_mail_apps_browser import _artifacts, _chromium, _render


@pytest.fixture
def mail_server() -> MailServer:
    return mail_server_or_skip()


def _press(button: str, done: str, shot: str) -> Any:
    """What the person does in the preview: wait for it, read what it shows, press `button`, wait for `done`."""
    async def interact(page: Any, app: Any, _result: Any) -> dict[str, Any]:
        await app.locator(f"#{button}:not([disabled])").wait_for(timeout=20_000)
        shown = {key: await app.locator(f"#{key}").inner_text() for key in ("to", "subject", "body")}
        await app.locator(f"#{button}").click()
        await app.locator("#status", has_text=done).wait_for(timeout=60_000)
        shown["status"] = await app.locator("#status").inner_text()
        await page.screenshot(path=str(_artifacts() / shot))
        return shown
    return interact


def test_live_preview_send_and_save_draft_pressed_in_chromium(tools_factory: Any, mail_server: MailServer) -> None:
    browser = _chromium()
    tools = tools_factory(mail=True)
    token = "B" + uuid.uuid4().hex[:8]
    to = mail_server.elodie.address

    sent_subject = f"{token} Lunch on Thursday? — à midi"
    seen = anyio.run(_render, tools.server, "mail_compose",
                     {"to": [to], "subject": sent_subject, "body": "Shall we meet at noon?\nAlice"},
                     PREVIEW_APP, browser, _press("send", "Sent to", "mail-preview-live-sent.png"))
    assert seen["to"] == to and seen["subject"] == sent_subject and seen["status"] == f"Sent to {to}."
    arrived = mail_server.wait_for(mail_server.elodie, "INBOX", f"{token} Lunch")
    assert [m["subject"] for m in arrived] == [sent_subject]
    assert "Shall we meet at noon?" in arrived[0]["message"].get_content()
    assert [m["subject"] for m in mail_server.wait_for(mail_server.alice, "Sent", f"{token} Lunch")] == [sent_subject]

    draft_subject = f"{token} Notes for the review"
    seen = anyio.run(_render, tools.server, "mail_compose",
                     {"to": [to], "subject": draft_subject, "body": "1. Budget\n2. Planning"},
                     PREVIEW_APP, browser, _press("draft", "Saved as a draft", "mail-preview-live-draft.png"))
    assert seen["status"] == "Saved as a draft." and seen["body"] == "1. Budget\n2. Planning"
    drafts = mail_server.wait_for(mail_server.alice, "Drafts", f"{token} Notes", timeout=10)
    assert [(m["subject"], m["draft"]) for m in drafts] == [(draft_subject, True)]
    assert drafts[0]["message"].get_content().replace("\r\n", "\n").strip() == "1. Budget\n2. Planning"
    assert not mail_server.messages(mail_server.elodie, "INBOX", f"{token} Notes")
