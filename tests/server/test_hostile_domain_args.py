"""Hostile arguments on the domain tools (issue 23 items 2, 6, 7, 8): one validator for every tool.

Control and format characters are refused by the declared kind of each text argument (server/argument_text.py),
types are strict (no "5" for an integer, no true for an id), "" is no time or id, and files_write's path and
fileId must name one file. Every refusal names the argument, never echoes the value, and nothing is stored.
"""
from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import caller

START = "2027-05-03T10:00Z"
SECRET = "s3cr3t-payload"


@pytest.fixture(scope="module")
def refusals() -> Any:
    """One emulator for the calls that must be refused (they change nothing, so they can share it)."""
    from mcp_nextcloud.fixtures.emulator.server import Emulator
    from tests.server.conftest import Pim

    with Emulator() as emu:
        yield Pim(emu)


def _events(pim: Any, ok: Any) -> list[dict[str, Any]]:
    return ok(pim.call("calendar_list_events", {"start": "2027-05-01", "end": "2027-05-31"}))["events"]


@pytest.mark.parametrize("bad", ["a\x00b", "a\x07b", "a\x1b[31mb", "a\x7fb", "a\x85b", "a\x9bb", "a\nb", "a\tb",
                                 "a\u202eb", "a\u2066b", "a\u200bb", "a\ufeffb", "a\u2028b", "a\uffffb"])
def test_control_and_format_characters_in_a_title_are_refused_and_nothing_is_stored(refusals, ok, err, bad):
    text = err(refusals.call("calendar_create_event", {"title": bad + SECRET, "start": START}))
    assert "title" in text and "U+" in text and "do not repeat this call unchanged" in text.lower()
    assert "do not retry" not in text.lower()   # "Fix it and call again" is never followed by "Do not retry"
    assert SECRET not in text and bad not in text          # the rejected value is never echoed
    assert _events(refusals, ok) == []                            # nothing stored, and the calendar still lists


def test_an_attendee_with_a_nul_is_refused_naming_the_item(refusals, ok, err):
    text = err(refusals.call("calendar_create_event", {"title": "t", "start": START,
                                                  "attendees": ["bob@example.invalid", "a@b.example\x00x"]}))
    assert "attendees" in text and "item 1" in text and "U+0000" in text
    assert _events(refusals, ok) == []


def test_multi_line_fields_keep_line_breaks_tabs_and_right_to_left_marks(pim, ok, err):
    notes = "Ordre du jour :\n\t1. budget\r\n\t2. \u2067\u05e9\u05dc\u05d5\u05dd\u2069 \u200d"
    made = ok(pim.call("calendar_create_event", {"title": "Réunion \u200c\u200e", "start": START,
                                                 "description": notes}))
    listed = [e for e in _events(pim, ok) if e["uid"] == made["uid"]]
    assert listed and listed[0]["title"] == "Réunion \u200c\u200e"
    # A NUL is refused even in a multi-line field: no XML (CalDAV) can carry it.
    text = err(pim.call("calendar_update_event", {"uid": made["uid"], "description": "a\x00b"}))
    assert "description" in text and "U+0000" in text


@pytest.mark.parametrize("tool,args,field", [
    ("deck_create_board", {"title": "b\x1bx"}, "title"),
    ("deck_create_board", {"title": "ok", "stacks": ["To do", "x\x00"]}, "stacks"),
    ("meet_create_room", {"name": "room\r\nX"}, "name"),
    ("contacts_search", {"query": "elo\x00die"}, "query"),
    ("meet_schedule", {"title": "t\u202e", "start": START}, "title"),
    ("calendar_create_event", {"title": "t", "start": START, "location": "x\x0by"}, "location"),
])
def test_every_domain_tool_refuses_control_characters_by_schema(refusals, err, tool, args, field):
    text = err(refusals.call(tool, args))
    assert f": {field}:" in text and "U+" in text


@pytest.mark.parametrize("tool,args,field,expected", [
    ("deck_list_cards", {"done": "yes"}, "done", "boolean"),
    ("deck_list_cards", {"limit": "5"}, "limit", "integer"),
    ("calendar_list_events", {"start": "2027-05-01", "limit": True}, "limit", "integer"),
    ("calendar_list_events", {"start": "2027-05-01", "includeAppCalendars": 1}, "includeAppCalendars", "boolean"),
    ("files_read", {"fileId": True}, "fileId", "integer"),
    ("files_read", {"path": "/Documents/manual.md", "offset": "10"}, "offset", "integer"),
    ("contacts_search", {"query": 42}, "query", "string"),
    ("calendar_create_event", {"title": "t", "start": START, "attendees": "bob@example.invalid"}, "attendees",
     "list"),
])
def test_loose_types_are_refused_naming_the_argument_and_the_type(refusals, err, tool, args, field, expected):
    text = err(refusals.call(tool, args))
    assert f"{field}:" in text and expected in text and "(got " in text, text


@pytest.mark.parametrize("tool,args,field", [
    ("calendar_list_events", {"start": "2027-05-01", "end": ""}, "end"),
    ("calendar_list_events", {"start": ""}, "start"),
    ("calendar_create_event", {"title": "t", "start": START, "end": ""}, "end"),
    ("calendar_delete_event", {"uid": "x", "calendar": ""}, "calendar"),
    ("deck_list_cards", {"board": ""}, "board"),
])
def test_an_empty_time_or_id_is_refused(refusals, err, tool, args, field):
    text = err(refusals.call(tool, args))
    assert f"{field}: is empty" in text


def test_a_documented_empty_value_still_clears(pim, ok):
    board = ok(pim.call("deck_create_board", {"title": "Hostile board", "stacks": ["To do"]}))["board"]
    card = ok(pim.call("deck_create_card", {"board": board["board"], "stack": "To do", "title": "c",
                                            "due": "2027-05-03"}))["card"]
    assert card["due"].startswith("2027-05-03")
    cleared = ok(pim.call("deck_update_card", {"board": board["board"], "card": card["card"], "due": ""}))["card"]
    assert not cleared.get("due")


def test_the_json_array_a_host_sends_as_a_string_is_still_parsed(pim, ok):
    made = ok(pim.call("calendar_create_event", {"title": "t", "start": START,
                                                 "attendees": '["bob@example.invalid"]'}))
    assert made["uid"]


def test_every_declared_text_kind_names_a_real_argument():
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.argument_text import EMPTY_CLEARS, KINDS
    from mcp_nextcloud.server.context import ServerContext
    from mcp_nextcloud.server.mail_app import build_mail_server

    tools: dict[str, set[str]] = {}
    for server in (build_server(ServerContext(account=None, index=None)),
                   build_mail_server(ServerContext(account=None, index=None))):
        for tool in server._tool_manager.list_tools():
            tools[tool.name] = set(tool.parameters.get("properties", {}))
    for tool, argument in [*KINDS, *EMPTY_CLEARS]:
        assert argument in tools.get(tool, set()), (tool, argument)


def test_kinds_refuse_what_they_say():
    from mcp_nextcloud.server.argument_text import LINE, PATH, TEXT, VERBATIM, character_problem

    assert character_problem("Zoë \u200d\u200c\u200e\u061c soft\u00adhyphen", LINE) is None
    assert character_problem("a\tb", LINE) and character_problem("a\tb\nc\r\n", TEXT) is None
    assert character_problem("a\x00b", TEXT) and character_problem("\u202e", TEXT) is None
    assert character_problem("\x00\x1b\x0c\ufffe", VERBATIM) is None
    assert character_problem("/a/\u200b\u202e.md", PATH) is None and character_problem("/a\x85", PATH)


def test_a_path_keeps_format_characters_and_refuses_controls(world, call, ok, err):
    name = "/Documents/zero\u200bwidth \u202eevil.md"   # named so by another client: it must still open
    world.emulator.state.put_file("alice", name, b"still mine")
    assert "still mine" in ok(call("files_read", {"path": name}))["content"]
    for bad in ("/Documents/a\x00b.md", "/Documents/a\nb.md", "/Documents/a\tb.md"):
        text = err(call("files_read", {"path": bad}))
        assert "path:" in text and "control character" in text


def test_mail_client_refuses_a_header_with_a_line_break():
    from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError
    from mcp_nextcloud.nextcloud.mail import check_headers

    check_headers(subject="Budget Q4 — ok", to=["bob@example.invalid"])
    for bad in ({"subject": "s\r\nBcc: evil@x.example", "to": ["a@b.example"]},
                {"subject": "s", "to": ["a@b.example\nBcc: evil@x.example"]},
                {"subject": "s", "to": ["a@b.example"], "bcc": ["x\r@y.example"]}):
        with pytest.raises(NextcloudError) as info:
            check_headers(**bad)  # type: ignore[arg-type]
        assert info.value.code is ErrorCode.BAD_REQUEST and "evil" not in str(info.value)


def test_files_write_with_a_path_and_another_files_id_is_refused(world, call, ok, err):
    state = world.emulator.state
    state.put_file("alice", "/Documents/hostile-a.md", b"file a")
    state.put_file("alice", "/Documents/hostile-b.md", b"file b")
    b = ok(call("files_read", {"path": "/Documents/hostile-b.md"}))
    text = err(call("files_write", {"path": "/Documents/hostile-a.md", "fileId": b["fileId"],
                                    "content": "overwrite", "etag": b["etag"]}))
    assert "path /Documents/hostile-a.md" in text and f"fileId {b['fileId']}" in text and "only one" in text
    assert state.find("alice", "/Documents/hostile-a.md").data == b"file a"
    assert state.find("alice", "/Documents/hostile-b.md").data == b"file b"
    # The same file by both handles is fine.
    same = ok(call("files_write", {"path": "/Documents/hostile-b.md", "fileId": b["fileId"],
                                   "content": "new b", "etag": b["etag"]}))
    assert same["fileId"] == b["fileId"] and state.find("alice", "/Documents/hostile-b.md").data == b"new b"


@pytest.fixture
def mail_call(ctx: Any) -> Any:
    """mail_call(name, args) -> CallToolResult from the mail server, through a real in-process MCP Client."""
    from mcp_nextcloud.server.mail_app import build_mail_server

    return caller(build_mail_server(ctx))


@pytest.mark.parametrize("args,field", [
    ({"subject": "s\r\nBcc: evil@x.example"}, "subject"),
    ({"to": ["bob@example.invalid\r\nBcc: evil@x.example"]}, "to"),
    ({"cc": ["bob@example.invalid\n"]}, "cc"),
    ({"sender": "me@example.invalid\rX-Evil: 1"}, "sender"),
])
def test_mail_compose_refuses_a_line_break_in_any_header_field(mail_call, err, args, field):
    # Refused at compose: no preview exists, so nothing can be sent or saved from it.
    base = {"to": ["bob@example.invalid"], "subject": "Standup", "body": "Line one.\nLine two."}
    text = err(mail_call("mail_compose", {**base, **args}))
    assert f": {field}:" in text and "evil" not in text


def test_mail_read_true_is_not_message_one(mail_call, err):
    text = err(mail_call("mail_read", {"id": True}))
    assert "id:" in text and "integer" in text and "got a boolean" in text


def test_an_array_sent_as_a_json_string_is_checked_as_the_array_it_becomes(refusals, err):
    text = err(refusals.call("calendar_create_event", {"title": "t", "start": START,
                                                       "attendees": '["a@b.example\\u0000x"]'}))
    assert "attendees" in text and "U+0000" in text


@pytest.mark.parametrize("field", ["to", "cc", "bcc"])
@pytest.mark.parametrize("address", ["a@", "", " "])
def test_an_address_without_a_domain_is_a_bad_address_not_a_crash(mail_call, err, field, address):
    args = {"to": ["bob@example.invalid"], "subject": "Standup", "body": "Hello", field: [address]}
    text = err(mail_call("mail_compose", args))
    assert f"{field}:" in text and "not an e-mail address" in text and "internal error" not in text


def test_files_search_in_a_missing_folder_names_the_path_argument(world, call, err):
    # Nothing in the index matches, so the server's SEARCH runs; Nextcloud answers a missing scope with a 500.
    text = err(call("files_search", {"name": "zzz-no-such-name", "path": "/No such folder here"}))
    assert "path /No such folder here" in text and "does not exist" in text
