"""mcp-mail against the emulator: search, read, people, compose, and the app-only send and draft."""
from __future__ import annotations

import json
from typing import Any, Callable

import anyio
import pytest

from mcp_nextcloud.fixtures.emulator.server import ALL_APPS, Emulator
from mcp_nextcloud.server.tools.mail.compose import TOKEN_META_KEY

SEND_PATH = "/ocs/v2.php/apps/mail/message/send"


@pytest.fixture
def mail_server(ctx: Any) -> Any:
    from mcp_nextcloud.server.mail_app import build_mail_server

    return build_mail_server(ctx)


@pytest.fixture
def mcall(mail_server: Any) -> Callable[..., Any]:
    """mcall(name, args) -> CallToolResult from the mail server, through a real in-process MCP Client."""
    from mcp import Client

    def run(name: str, args: dict[str, Any] | None = None, mode: str = "legacy") -> Any:
        async def go() -> Any:
            async with Client(mail_server, mode=mode) as client:
                return await client.call_tool(name, args or {})
        return anyio.run(go)
    return run


def _sends(world: Any) -> int:
    return sum(1 for method, path, _ in world.emulator.requests if method == "POST" and path == SEND_PATH)


def _compose(mcall: Any, ok: Any, **args: Any) -> tuple[dict[str, Any], str]:
    base = {"to": ["bob@example.invalid"], "subject": "Standup", "body": "See you at 9:45."}
    result = mcall("mail_compose", {**base, **args})
    data = ok(result)
    return data, (result.meta or {}).get(TOKEN_META_KEY, "")


def test_lists_six_tools_two_app_only_with_real_html_apps(mail_server: Any) -> None:
    from mcp import Client

    from mcp_nextcloud.server.policy import approval_for

    async def go() -> tuple[Any, Any, Any]:
        async with Client(mail_server, mode="legacy") as client:
            tools = (await client.list_tools()).tools
            resources = (await client.list_resources()).resources
            pages = [await client.read_resource(r.uri) for r in resources]
            return tools, resources, pages
    tools, resources, pages = anyio.run(go)
    by_name = {t.name: t for t in tools}
    assert set(by_name) == {"mail_contacts", "mail_search", "mail_read", "mail_compose", "mail_send", "mail_draft"}
    for name in ("mail_send", "mail_draft"):
        assert by_name[name].meta["ui"]["visibility"] == ["app"]
    assert by_name["mail_compose"].meta["ui"]["resourceUri"] == by_name["mail_send"].meta["ui"]["resourceUri"]
    assert "visibility" not in by_name["mail_search"].meta["ui"]
    assert approval_for(by_name["mail_send"].annotations).needs_approval
    assert not approval_for(by_name["mail_search"].annotations).needs_approval
    assert {r.mime_type for r in resources} == {"text/html;profile=mcp-app"}
    for page in pages:
        html = page.contents[0].text
        assert "ui/initialize" in html and "/*BRIDGE*/" not in html and "innerHTML" not in html


def test_search_finds_by_subject_sender_and_flags(mcall: Any, ok: Any) -> None:
    data = ok(mcall("mail_search", {"subject": "budget"}))
    assert [m["subject"] for m in data["messages"]] == ["Q4 budget numbers"]
    assert data["messages"][0]["from"] == "finance@example.invalid" and data["mailboxes"] == ["INBOX"]
    bob = ok(mcall("mail_search", {"sender": "bob", "limit": 2}))
    assert [m["subject"] for m in bob["messages"]] == ["Weekly standup moved", "Lunch on Friday?"]
    assert bob["truncated"] is True and bob["nextCursor"]
    rest = ok(mcall("mail_search", {"sender": "bob", "limit": 2, "cursor": bob["nextCursor"]}))
    assert [m["subject"] for m in rest["messages"]] == ["Welcome to the team"] and rest["truncated"] is False
    unread = ok(mcall("mail_search", {"unread": True, "limit": 50}))
    assert unread["messages"] and all(m["unread"] for m in unread["messages"])
    # Other tests send from the same session emulator: look for the seeded sent message by its subject.
    sent = ok(mcall("mail_search", {"mailbox": "Sent", "subject": "lunch"}))
    assert [m["subject"] for m in sent["messages"]] == ["Re: Lunch on Friday?"]


def test_empty_search_says_it_is_not_proof(mcall: Any, ok: Any) -> None:
    data = ok(mcall("mail_search", {"subject": "zebra quartet"}))
    assert data["messages"] == [] and data["truncated"] is False
    assert "not proof" in data["hint"].lower() or "no proof" in data["hint"].lower()
    assert data["mailboxes"] == ["INBOX"] and data["syncedAt"] in data["hint"]


def test_a_mailbox_mail_never_synced_is_synced_once_and_listed(world: Any, mcall: Any, ok: Any) -> None:
    """Real Mail answers 500 to listing Archive/Junk/Trash until one sync with init (issue 35, 1)."""
    before = len(world.emulator.requests)
    data = ok(mcall("mail_search", {"mailbox": "Trash"}))
    assert data["messages"] == [] and data["mailboxes"] == ["Trash"] and "warnings" not in data
    asked = [(m, p.rsplit("/", 1)[-1], status) for m, p, status in world.emulator.requests[before:]
             if "/mailboxes/" in p]
    # a sync without init is 428 for a mailbox Mail never synced, then one with init; the listing then works
    assert asked == [("POST", "sync", 428), ("POST", "sync", 200), ("GET", "messages", 200)], asked


def test_a_folder_mail_does_not_list_yet_is_found_after_a_folder_refresh(world: Any, mcall: Any, ok: Any) -> None:
    """Mail refreshes its folder list every two hours: the search asks it to refresh before saying 'no such'."""
    from mcp_nextcloud.fixtures.emulator.mail import mail_state

    mail_state(world.emulator.state).create_folder("alice@example.invalid", "Clients 2026")
    data = ok(mcall("mail_search", {"mailbox": "clients 2026"}))
    assert data["mailboxes"] == ["Clients 2026"] and data["messages"] == []


def test_the_client_lists_an_unsynced_mailbox_after_its_500(world: Any, ctx: Any) -> None:
    """The client's own answer to Mail's 500 for a mailbox it never synced: one sync with init, one listing."""
    mail = ctx.client().mail
    account = mail.accounts()[0]
    junk = next(b for b in mail.mailboxes(account.id) if b.name == "Junk")
    before = len(world.emulator.requests)
    assert mail.messages(junk.id, limit=5) == []
    asked = [(m, p, status) for m, p, status in world.emulator.requests[before:]]
    assert [(m, status) for m, _, status in asked] == [("GET", 500), ("POST", 200), ("GET", 200)], asked


def test_mail_delivered_after_the_last_sync_is_found_by_the_next_search(world: Any, mcall: Any, ok: Any) -> None:
    """A search asks Mail to sync first (deliver.sh --no-sync on the real server; issue 35, 4)."""
    from mcp_nextcloud.fixtures.emulator.mail import mail_state

    mail_state(world.emulator.state).deliver("alice@example.invalid", subject="Arrived just now", body="Fresh.",
                                             sender={"label": "Bob", "email": "bob@example.invalid"}, synced=False)
    data = ok(mcall("mail_search", {"subject": "Arrived just now"}))
    assert [m["subject"] for m in data["messages"]] == ["Arrived just now"]
    assert "arrived in the mailbox" in data["hint"] and "synced" in data["hint"]


def test_search_misuse_names_the_fix(mcall: Any, err: Any) -> None:
    text = err(mcall("mail_search", {"mailbox": "Projects"}))
    assert "INBOX" in text and "Do not repeat this call unchanged" in text and "just refreshed" in text
    assert "cursor" in err(mcall("mail_search", {"subject": "budget", "cursor": "bm9wZQ"}))
    assert "ISO date" in err(mcall("mail_search", {"after": "last tuesday"}))
    ok_cursor = json.loads(mcall("mail_search", {"sender": "bob", "limit": 1}).content[0].text)["nextCursor"]
    assert ok_cursor and "does not belong" in err(mcall("mail_search", {"sender": "chen", "cursor": ok_cursor}))


def test_read_slices_and_finds_in_the_body(mcall: Any, ok: Any, err: Any) -> None:
    msg = ok(mcall("mail_search", {"subject": "maintenance"}))["messages"][0]
    data = ok(mcall("mail_read", {"id": msg["id"]}))
    assert data["body"] == "Nextcloud will be down from 22:00 to 23:00 UTC." and data["truncated"] is False
    part = ok(mcall("mail_read", {"id": msg["id"], "offset": 10, "limit": 10}))
    assert part["body"] == data["body"][10:20] and part["nextOffset"] == 20
    found = ok(mcall("mail_read", {"id": msg["id"], "find": "23:00 utc"}))
    assert found["total"] == 1 and data["body"][found["matches"][0]["offset"]:].startswith("23:00 UTC")
    assert "past the end" in err(mcall("mail_read", {"id": msg["id"], "offset": 999}))
    missing = err(mcall("mail_read", {"id": 99999}))
    # The refusal names the id argument and where ids come from, not a file path (Mail answers a plain 404).
    assert "id 99999" in missing and "mail_search" in missing and "files_search" not in missing


def test_contacts_are_accent_insensitive_and_ambiguity_is_said(mcall: Any, ok: Any) -> None:
    elodie = ok(mcall("mail_contacts", {"name": "elodie"}))
    assert [p["email"] for p in elodie["people"]] == ["elodie.muller@example.invalid"]
    assert ok(mcall("mail_contacts", {"name": "garcia"}))["people"][0]["email"] == "jose.garcia@example.invalid"
    many = ok(mcall("mail_contacts", {"name": "example.invalid"}))
    assert len(many["people"]) > 1 and "which" in many["hint"]
    none = ok(mcall("mail_contacts", {"name": "Zorro Unknown"}))
    assert none["people"] == [] and "never build" in none["hint"]


def test_compose_keeps_the_send_token_out_of_the_model_text(mcall: Any, ok: Any) -> None:
    data, token = _compose(mcall, ok)
    assert token and token not in json.dumps(data)
    assert data["sent"] is False and data["to"] == ["bob@example.invalid"] and data["recipients"]
    assert "cannot send" in data["hint"]


def test_compose_refuses_an_address_built_from_a_name(mcall: Any, ok: Any, err: Any) -> None:
    text = err(mcall("mail_compose", {"to": ["elodie.mueller@example.invalid"], "subject": "x", "body": "y"}))
    assert "never build" in text.lower() and "mail_contacts" in text
    assert "not an e-mail address" in err(mcall("mail_compose", {"to": ["Bob Builder"], "subject": "x",
                                                                 "body": "y"}))
    typed, _ = _compose(mcall, ok, to=["new.person@example.invalid"], typedByUser=["new.person@example.invalid"])
    assert "new.person@example.invalid" in typed["warnings"][0]


def test_send_only_from_the_preview_and_only_once(world: Any, mcall: Any, ok: Any, err: Any) -> None:
    data, token = _compose(mcall, ok, subject="Send once", body="Only one copy, please.")
    before = _sends(world)
    refused = err(mcall("mail_send", {"id": data["id"], "token": "guessed", "recipients": data["recipients"]}))
    assert "preview app" in refused and _sends(world) == before
    sent = ok(mcall("mail_send", {"id": data["id"], "token": token, "recipients": data["recipients"]}))
    assert sent["sent"] is True and _sends(world) == before + 1
    again = ok(mcall("mail_send", {"id": data["id"], "token": token, "recipients": data["recipients"]}))
    assert again["alreadySent"] is True and _sends(world) == before + 1
    in_sent = ok(mcall("mail_search", {"mailbox": "Sent", "subject": "Send once"}))["messages"]
    assert [m["to"] for m in in_sent] == [["bob@example.invalid"]]


def test_changed_recipients_and_replaced_previews_are_refused(world: Any, mcall: Any, ok: Any, err: Any) -> None:
    first, token = _compose(mcall, ok, subject="Replaced")
    second, token2 = _compose(mcall, ok, subject="Replaced", to=["chen.wei@example.invalid"], replaces=first["id"])
    before = _sends(world)
    assert "replaced" in err(mcall("mail_send", {"id": first["id"], "token": token,
                                                 "recipients": first["recipients"]}))
    assert "recipients changed" in err(mcall("mail_send", {"id": second["id"], "token": token2,
                                                           "recipients": first["recipients"]}))
    assert _sends(world) == before


def test_rate_limit_is_an_instruction_not_a_retry_loop(world: Any, mcall: Any, ok: Any, err: Any) -> None:
    world.emulator.faults.clear()
    with Emulator() as emu:   # its own emulator: Mail's 5-per-100-s window must start empty
        ctx, server = _mail_context(emu)
        try:
            from mcp import Client

            async def go() -> list[Any]:
                out = []
                async with Client(server, mode="legacy") as client:
                    for i in range(6):
                        r = await client.call_tool("mail_compose", {"to": ["bob@example.invalid"],
                                                                    "subject": f"n{i}", "body": "b"})
                        payload = json.loads(r.content[0].text)
                        out.append(await client.call_tool("mail_send", {
                            "id": payload["id"], "token": r.meta[TOKEN_META_KEY],
                            "recipients": payload["recipients"]}))
                return out
            results = anyio.run(go)
        finally:
            ctx.close()
        assert [r.is_error for r in results] == [False] * 5 + [True]
        text = results[-1].content[0].text
        assert "5 sends per 100 s" in text and text.endswith("Do not retry.") and " s " in text
        assert sum(1 for m, p, _ in emu.requests if m == "POST" and p == SEND_PATH) == 5


def test_draft_is_saved_once_and_lands_in_drafts(world: Any, mcall: Any, ok: Any, err: Any) -> None:
    data, token = _compose(mcall, ok, subject="Draft me", body="Not yet.")
    assert "preview app" in err(mcall("mail_draft", {"id": data["id"], "token": ""}))
    saved = ok(mcall("mail_draft", {"id": data["id"], "token": token}))
    again = ok(mcall("mail_draft", {"id": data["id"], "token": token}))
    assert saved["draft"] == again["draft"] and saved["sent"] is False
    assert "Drafts mailbox" in saved["hint"] and "five minutes" not in saved["hint"]   # moved to IMAP at once
    moves = [p for m, p, _ in world.emulator.requests if m == "POST" and "/drafts/move/" in p]
    assert len(moves) == 1
    drafts = ok(mcall("mail_search", {"mailbox": "Drafts", "subject": "Draft me"}))["messages"]
    assert len(drafts) == 1
    assert ok(mcall("mail_read", {"id": drafts[0]["id"]}))["body"] == "Not yet."   # bodyPlain, not a dropped body


def test_a_refused_recipient_is_said_once_and_never_as_a_retry(world: Any, mcall: Any, ok: Any) -> None:
    """Mail's 500 for a recipient its mail server refuses (issue 35, 3): nothing sent, the addresses named."""
    data, token = _compose(mcall, ok, subject="To a stranger", to=["bob@example.invalid", "nobody@example.invalid"],
                           typedByUser=["nobody@example.invalid"])
    before = _sends(world)
    result = mcall("mail_send", {"id": data["id"], "token": token, "recipients": data["recipients"]})
    assert result.is_error and result.structured_content["error"]["retry"] is False
    text = result.content[0].text
    assert "sent it to no one" in text and "nobody@example.invalid" in text and "Most likely" in text
    assert "fails the same way" in text and text.endswith("Do not retry.") and "Retry once" not in text
    assert _sends(world) == before + 1


def _mail_context(emu: Emulator) -> tuple[Any, Any]:
    from mcp_nextcloud.nextcloud.config import Account
    from mcp_nextcloud.server.context import ServerContext
    from mcp_nextcloud.server.mail_app import build_mail_server

    creds = emu.account("alice")
    ctx = ServerContext(account=Account(url=creds["url"], user=creds["user"], app_password=creds["app_password"]),
                        index=None)
    return ctx, build_mail_server(ctx)


def test_without_mail_installed_no_tool_is_listed_and_calls_are_unknown_tools() -> None:
    """The instructions say why (test_mail_absent.py); a call to a tool listed nowhere is an unknown tool."""
    from mcp import Client

    with Emulator(apps=ALL_APPS - {"mail"}) as emu:
        ctx, server = _mail_context(emu)
        try:
            async def go() -> tuple[list[Any], Any]:
                async with Client(server, mode="legacy") as client:
                    return (await client.list_tools()).tools, await client.call_tool("mail_search", {})
            tools, result = anyio.run(go)
        finally:
            ctx.close()
    assert tools == []
    assert result.is_error and result.content[0].text.startswith("Unknown tool: mail_search")


def test_a_429_from_mail_is_said_once_and_not_retried() -> None:
    from mcp import Client

    with Emulator() as emu:
        emu.faults.add(method="POST", path_prefix=SEND_PATH, status=429, times=3, retry_after=1)
        ctx, server = _mail_context(emu)
        try:
            async def go() -> Any:
                async with Client(server, mode="legacy") as client:
                    r = await client.call_tool("mail_compose", {"to": ["bob@example.invalid"], "subject": "s",
                                                                "body": "b"})
                    payload = json.loads(r.content[0].text)
                    return await client.call_tool("mail_send", {"id": payload["id"], "token": r.meta[TOKEN_META_KEY],
                                                                "recipients": payload["recipients"]})
            result = anyio.run(go)
        finally:
            ctx.close()
        assert result.is_error and result.structured_content["error"]["retry"] is False
        assert result.content[0].text.endswith("Do not retry.")
        assert sum(1 for m, p, _ in emu.requests if m == "POST" and p == SEND_PATH) == 1


def test_a_send_whose_answer_was_lost_is_never_sent_twice() -> None:
    from mcp import Client

    with Emulator() as emu:
        emu.faults.add(method="POST", path_prefix=SEND_PATH, commit_then_timeout=True, delay=0.2, times=1)
        ctx, server = _mail_context(emu)
        ctx.client().transport.timeout = 0.5
        try:
            async def go() -> tuple[Any, Any]:
                async with Client(server, mode="legacy") as client:
                    r = await client.call_tool("mail_compose", {"to": ["bob@example.invalid"], "subject": "lost",
                                                                "body": "b"})
                    payload = json.loads(r.content[0].text)
                    args = {"id": payload["id"], "token": r.meta[TOKEN_META_KEY], "recipients": payload["recipients"]}
                    return await client.call_tool("mail_send", args), await client.call_tool("mail_send", args)
            first, second = anyio.run(go)
        finally:
            ctx.close()
        assert first.is_error and "may or may not have been sent" in first.content[0].text
        assert "mailbox='Sent'" in first.content[0].text
        assert not second.is_error and json.loads(second.content[0].text)["alreadySent"] is True
        assert sum(1 for m, p, _ in emu.requests if m == "POST" and p == SEND_PATH) == 1


def test_accents_threads_and_bodies_are_found_the_way_a_person_spells_them(world: Any, mcall: Any, ok: Any) -> None:
    """Mail compares subject/sender letter for letter and refuses a non-ASCII body word; the tool matches
    insensitive to case and accents, and lists an older message of a thread (view=singleton)."""
    from mcp_nextcloud.fixtures.emulator.mail import mail_state

    state = mail_state(world.emulator.state)
    first = state.deliver("alice@example.invalid", subject="Réunion du comité Zéphyr", body="Le café est prêt.",
                          sender={"label": "Élodie Martin", "email": "elodie.martin@example.invalid"})
    state.deliver("alice@example.invalid", subject="Re: Réunion du comité Zéphyr", body="Merci",
                  sender={"label": "Bob", "email": "bob@example.invalid"}, thread=f"<msg-{first.id}@example.invalid>")
    for spelled in ("réunion du comité zéphyr", "RÉUNION DU COMITÉ ZÉPHYR"):
        got = ok(mcall("mail_search", {"subject": spelled}))
        assert [m["subject"] for m in got["messages"]] == ["Re: Réunion du comité Zéphyr", "Réunion du comité Zéphyr"]
    by = ok(mcall("mail_search", {"sender": "élodie", "subject": "zéphyr"}))
    assert [m["subject"] for m in by["messages"]] == ["Réunion du comité Zéphyr"]   # the older one of the thread
    body = ok(mcall("mail_search", {"body": "café est prêt"}))
    assert [m["subject"] for m in body["messages"]] == ["Réunion du comité Zéphyr"]
    both = ok(mcall("mail_search", {"body": "café", "subject": "budget"}))   # Mail alone would OR the two
    assert both["messages"] == []
    both = ok(mcall("mail_search", {"body": "prêt", "subject": "comité"}))
    assert [m["subject"] for m in both["messages"]] == ["Réunion du comité Zéphyr"]
    plain = ok(mcall("mail_search", {"subject": "zephyr"}))
    assert plain["messages"] == [] and "accents" in plain["hint"]


def test_read_names_the_attached_files(mcall: Any, ok: Any) -> None:
    msg = ok(mcall("mail_search", {"subject": "budget"}))["messages"][0]
    data = ok(mcall("mail_read", {"id": msg["id"]}))
    assert data["attachments"] == [{"name": "attachment.pdf", "type": "application/pdf", "size": 1024}]
    other = ok(mcall("mail_search", {"subject": "maintenance"}))["messages"][0]
    assert "attachments" not in ok(mcall("mail_read", {"id": other["id"]}))


def test_a_send_mail_keeps_to_retry_is_never_sent_again_from_the_preview(world: Any, mcall: Any, ok: Any) -> None:
    """Mail's 500 '... will be retried': it is queued in Mail; a second press would be a second copy."""
    from mcp_nextcloud.fixtures.emulator.mail import mail_state

    mail_state(world.emulator.state).smtp_over_quota = 1
    data, token = _compose(mcall, ok, subject="Queued in Mail")
    before = _sends(world)
    args = {"id": data["id"], "token": token, "recipients": data["recipients"]}
    first = mcall("mail_send", args)
    assert first.is_error and first.structured_content["error"]["retry"] is False
    assert "queued in Mail" in first.content[0].text and "will not send it again" in first.content[0].text
    assert ok(mcall("mail_send", args))["alreadySent"] is True and _sends(world) == before + 1
