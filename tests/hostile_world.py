"""The domain tools on their own emulator, one call per JSON line, in a child process (issue 23).

`tests/hostile_client.py` starts it and enforces the time limit. Each answer
carries, besides the result, what the call left on the server, read from the
emulator's own state (no tool in the path): control characters stored,
attendees that are not one address, Talk rooms left behind, mail headers with
CR/LF, and whether the domain's listing still works after an accepted write.
What a call created or changed is put back after it (from a copy of the
emulator's state), so one hostile object cannot spoil the calls after it.
"""
from __future__ import annotations

import copy
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.hostile_client import Outcome

MAIL_TOOLS = ("mail_search", "mail_read", "mail_contacts", "mail_compose", "mail_send", "mail_draft")
TOKEN_META_KEY = "mcp-nextcloud/sendToken"
# One address (RFC 5322 addr-spec, dot-atom form): what an ATTENDEE may hold after mailto:.
ONE_ADDRESS = re.compile(r"[^\s@,;:\"<>()\[\]\\]+@[^\s@,;:\"<>()\[\]\\]+")


class _World:
    """alice's main and mail servers on one emulator, with bob's objects to aim at."""

    def __init__(self, tmp: Path) -> None:
        from anyio.from_thread import start_blocking_portal
        from mcp import Client

        from mcp_nextcloud.fixtures.emulator.server import Emulator
        from mcp_nextcloud.indexer.index import Index
        from mcp_nextcloud.nextcloud.config import Account
        from mcp_nextcloud.server.app import build_server
        from mcp_nextcloud.server.context import ServerContext, Settings
        from mcp_nextcloud.server.mail_app import build_mail_server
        from mcp_nextcloud.server.telemetry import CallLog

        self.emu = Emulator().start()
        creds = self.emu.account("alice")
        account = Account(url=creds["url"], user=creds["user"], app_password=creds["app_password"],
                          public_url=self.emu.url)
        self.ctx = ServerContext(account=account, index=Index.open(tmp / "index.db"),
                                 telemetry=CallLog(tmp / "calls.sqlite"),
                                 settings=Settings(freshness_interval_s=3600))
        self.portal_cm = start_blocking_portal()
        self.portal = self.portal_cm.__enter__()
        self.sessions: dict[str, Any] = {}
        for key, server in (("main", build_server(self.ctx)), ("mail", build_mail_server(self.ctx))):
            cm = self.portal.wrap_async_context_manager(Client(server, mode="legacy"))
            self.sessions[key] = (cm, cm.__enter__())
        self.base, self.foreign = self._objects()

    def raw(self, tool: str, args: Any, user_session: Any = None) -> Any:
        session = user_session or self.sessions["mail" if tool in MAIL_TOOLS else "main"][1]
        return self.portal.call(session.call_tool, tool, args)

    def ok(self, tool: str, args: dict[str, Any], session: Any = None) -> dict[str, Any]:
        result = self.raw(tool, args, session)
        assert not result.is_error, (tool, result.content[0].text)
        return json.loads(result.content[0].text)

    def _objects(self) -> tuple[dict[str, dict[str, Any]], dict[str, list[Any]]]:
        """Valid arguments for every tool (alice's own objects), and bob's object ids."""
        from mcp import Client

        from mcp_nextcloud.nextcloud.config import Account
        from mcp_nextcloud.server.app import build_server
        from mcp_nextcloud.server.context import ServerContext

        state = self.emu.state
        state.makedirs("alice", "/Fuzz")
        state.put_file("alice", "/Fuzz/note.md", b"# Fuzz\nA note about the budget.\n")
        state.put_file("bob", "/Notes/bob-secret.md", b"bob's own")
        board = self.ok("deck_create_board", {"title": "Fuzz board", "stacks": ["To do", "Done"]})["board"]
        card = self.ok("deck_create_card", {"board": board["board"], "stack": "To do", "title": "Fuzz card"})["card"]
        event = self.ok("calendar_create_event", {"title": "Fuzz base", "start": "2027-01-04T09:00Z"})
        self.ok("mail_search", {})
        room = self.ok("meet_create_room", {"name": "Fuzz base room"})   # Talk's seeded rooms exist from here on
        from mcp_nextcloud.fixtures.emulator.caldav import new_calendar

        with state.lock:   # a task list (Personal takes events only, as on Nextcloud)
            state.apps["caldav"].home("alice")["tasks"] = new_calendar("tasks", "Tasks", components=("VTODO",))
        task = self.ok("tasks_create", {"title": "Fuzz base task"})
        state.put_file("alice", "/Fuzz/trash-me.md", b"# Trash me\n")
        mail = state.apps["mail"]
        message = min(mail.messages)
        bob_acc = mail.add_account("bob", "bob@example.invalid")
        bob_msg = mail.add_message(mail.box(bob_acc, "inbox"), subject="bob only", sender={"email": "x@y.example"},
                                   to=[{"email": "bob@example.invalid"}], body="private", date=1)
        creds = self.emu.account("bob")
        bob = ServerContext(account=Account(url=creds["url"], user="bob", app_password=creds["app_password"],
                                            public_url=self.emu.url), index=None)
        cm = self.portal.wrap_async_context_manager(Client(build_server(bob), mode="legacy"))
        session = cm.__enter__()
        try:
            bob_event = self.ok("calendar_create_event", {"title": "Bob private", "start": "2027-01-05T09:00Z"},
                                session)
            bob_board = self.ok("deck_create_board", {"title": "Bob private", "stacks": ["Mine"]}, session)["board"]
            bob_card = self.ok("deck_create_card", {"board": bob_board["board"], "stack": "Mine", "title": "b"},
                               session)["card"]
        finally:
            cm.__exit__(None, None, None)
        base = {
            "calendar_list_events": {"start": "2027-01-01"},
            "calendar_create_event": {"title": "Fuzz event", "start": "2027-01-05T10:00Z"},
            "calendar_update_event": {"uid": event["uid"], "title": "Fuzz base"},
            "calendar_delete_event": {"uid": "fuzz-nobody@x.example"},
            "contacts_search": {"query": "bob"},
            "deck_create_board": {"title": "Fuzz board 2"},
            "deck_create_card": {"board": board["board"], "stack": "To do", "title": "Fuzz card 2"},
            "deck_list_cards": {"board": board["board"]},
            "deck_move_card": {"board": board["board"], "card": card["card"], "stack": "Done"},
            "deck_update_card": {"board": board["board"], "card": card["card"], "title": "Fuzz card"},
            "files_search": {"name": "note"},
            "files_grep": {"query": "budget"},
            "files_read": {"path": "/Fuzz/note.md"},
            "files_write": {"path": "/Fuzz/written.md", "content": "fuzz"},
            "files_share_internal": {"path": "/Fuzz/note.md", "shareWith": "bob"},
            "meet_create_room": {"name": "Fuzz room"},
            "meet_schedule": {"title": "Fuzz meeting", "start": "2027-01-06T10:00Z"},
            "nextcloud_whoami": {},
            "mail_search": {},
            "mail_read": {"id": message},
            "mail_contacts": {"name": "bob"},
            "mail_compose": {"to": ["bob@example.invalid"], "subject": "Fuzz", "body": "Hello"},
            "mail_send": {"id": "nope", "token": "nope", "recipients": "nope"},
            "mail_draft": {"id": "nope", "token": "nope"},
            "talk_rooms": {"query": "Fuzz"},
            "talk_read": {"token": room["token"]},
            "talk_post": {"token": room["token"], "message": "Fuzz message"},
            "tasks_list": {},
            "tasks_create": {"title": "Fuzz task"},
            "tasks_update": {"uid": task["uid"], "title": "Fuzz base task"},
            "files_move": {"path": "/Fuzz/note.md", "to": "/Fuzz/note.md", "copy": True},
            "files_delete": {"path": "/Fuzz/trash-me.md"},
            "files_restore": {"path": "/Fuzz/trash-me.md"},
            "files_history": {"path": "/Fuzz/note.md"},
        }
        bob_file = state.find("bob", "/Notes/bob-secret.md")
        foreign = {"uid": [bob_event["uid"]], "board": [bob_board["board"]], "card": [bob_card["card"]],
                   "fileId": [bob_file.fileid], "id": [bob_msg.id]}
        self.base_board, self.base_event = board["board"], event["uid"]
        return base, foreign

    # -------------------------------------------------------- what the server holds, from the emulator

    def snapshot(self) -> dict[tuple[Any, ...], str]:
        """Every text of alice's objects that a call could change, keyed by object and field."""
        apps = self.emu.state.apps
        out: dict[tuple[Any, ...], str] = {}
        with self.emu.state.lock:
            for cal, coll in apps["caldav"].home("alice").items():
                for name, obj in coll.objects.items():
                    out[("ics", cal, name)] = obj.data
            deck = apps["deck"]
            for bid, b in deck.boards.items():
                out[("line", "board", bid)] = b.title
            for sid, s in deck.stacks.items():
                out[("line", "stack", sid)] = s.title
            for cid, c in deck.cards.items():
                out[("line", "card", cid)] = c.title
                out[("text", "card-description", cid)] = c.description
            for lid, lb in deck.labels.items():
                out[("line", "label", lid)] = lb.title
            for token, room in apps.get("spreed").rooms.items() if apps.get("spreed") else []:
                out[("line", "room", token)] = room.name
                out[("text", "room-description", token)] = room.description
            for mid, m in apps["mail"].messages.items():
                people = [p.get("email", "") + " " + p.get("label", "") for p in [m.sender, *m.to, *m.cc]]
                out[("header", "mail", mid)] = "\x1e".join([m.subject, *people])
        return out

    def rooms(self) -> set[str]:
        talk = self.emu.state.apps.get("spreed")
        return {t for t, r in talk.rooms.items() if "alice" in r.participants} if talk else set()

    def left_behind(self, before: dict[tuple[Any, ...], str], after: dict[tuple[Any, ...], str],
                    out: Outcome) -> None:
        from mcp_nextcloud.server.argument_text import LINE, TEXT, character_problem

        for key, value in after.items():
            if before.get(key) == value:
                continue
            kind = key[0]
            if kind == "ics":
                out.stored_controls += _ics_controls(value)
                out.multi_address += _ics_multi_address(value)
            elif kind == "header":
                fields = value.split("\x1e")
                out.header_crlf += sum(1 for f in fields if "\r" in f or "\n" in f)
                out.stored_controls += sum(1 for f in fields if character_problem(f, LINE))
            else:
                out.stored_controls += 1 if character_problem(value, LINE if kind == "line" else TEXT) else 0

    def saved(self) -> dict[str, Any]:
        """A copy of alice's calendars, Deck and Talk rooms, to put back after a call."""
        apps = self.emu.state.apps
        with self.emu.state.lock:
            deck, talk = apps["deck"], apps.get("spreed")
            return copy.deepcopy({
                "calendars": {name: coll.objects for name, coll in apps["caldav"].home("alice").items()},
                "deck": {k: getattr(deck, k) for k in ("boards", "stacks", "cards", "labels")},
                "rooms": talk.rooms if talk else None})

    def restore(self, saved: dict[str, Any]) -> None:
        """Put back what `saved` holds: what the call created goes, what it changed returns to before."""
        apps = self.emu.state.apps
        with self.emu.state.lock:
            home = apps["caldav"].home("alice")
            for name, objects in saved["calendars"].items():
                if name in home:
                    home[name].objects = objects
            for key, value in saved["deck"].items():
                setattr(apps["deck"], key, value)
            if saved["rooms"] is not None:
                apps["spreed"].rooms = saved["rooms"]

    # -------------------------------------------------------- one call

    def handle(self, tool: str, args: Any, listing: bool) -> Outcome:
        before, rooms_before, saved = self.snapshot(), self.rooms(), self.saved()
        t0 = time.perf_counter()
        result = self.raw(tool, args)
        out = _outcome(self, tool, args, result, (time.perf_counter() - t0) * 1000)
        if out.kind == "ok" and tool == "mail_compose":
            self._send_as_the_app(result, out)
        after = self.snapshot()
        self.left_behind(before, after, out)
        made_rooms = self.rooms() - rooms_before
        answered = set(out.extra.get("tokens") or [])
        out.rooms_left = len([t for t in made_rooms if not (out.kind == "ok" and t in answered)])
        if listing and out.kind == "ok":
            out.listing = self._listing_works(tool, args)
        self.restore(saved)
        return out

    def _send_as_the_app(self, result: Any, out: Outcome) -> None:
        """What the preview app does on the user's click: mail_send with the token from _meta."""
        token = (result.meta or {}).get(TOKEN_META_KEY, "")
        payload = json.loads(result.content[0].text)
        sent = self.raw("mail_send", {"id": payload["id"], "token": token, "recipients": payload["recipients"]})
        out.extra["sent"] = not sent.is_error

    def _listing_works(self, tool: str, args: Any) -> str:
        """After an accepted write: the domain's listing answers, and reads every calendar."""
        if tool.startswith("calendar_") or tool == "meet_schedule":
            res = self.raw("calendar_list_events", {"start": "2027-01-01", "end": "2027-01-31"})
            more = args.get("start") if isinstance(args, dict) and isinstance(args.get("start"), str) else None
            if not res.is_error and more:
                extra = self.raw("calendar_list_events", {"start": more})
                res = extra if extra.is_error and _outcome(self, "", {}, extra, 0).internal else res
        elif tool.startswith("deck_"):
            res = self.raw("deck_list_cards", {"board": self.base_board})
        elif tool == "files_write":
            res = self.raw("files_search", {"path": "/Fuzz"})
        else:
            return "ok"
        if res.is_error:
            return "error: " + res.content[0].text[:200]
        warnings = json.loads(res.content[0].text).get("warnings") or []
        broken = [w for w in warnings if "could not be read" in w]
        return "broken: " + broken[0][:200] if broken else "ok"


def _outcome(world: _World, tool: str, args: Any, result: Any, ms: float) -> Outcome:
    text = result.content[0].text if result.content else ""
    if not result.is_error:
        return Outcome(tool, args, "ok", ms=ms, extra={"tokens": sorted(_tokens(json.loads(text)))})
    row = world.ctx.telemetry.rows()[-1]
    return Outcome(tool, args, str(row["kind"]), str(row["status"]), text[:2000], ms)


def _tokens(payload: Any) -> set[str]:
    """Every room token an answer names (a room the caller was told about is not left behind)."""
    if isinstance(payload, dict):
        found = {str(v) for k, v in payload.items() if k == "token" and isinstance(v, str)}
        return found.union(*(_tokens(v) for v in payload.values()))
    if isinstance(payload, list):
        return set().union(*(_tokens(v) for v in payload))
    return set()


def _unfolded(ics: str) -> list[str]:
    return re.sub(r"\r?\n[ \t]", "", ics).replace("\r\n", "\n").split("\n")


def _ics_controls(ics: str) -> int:
    """Stored characters no client can read back: controls anywhere, format characters in one-line fields."""
    from mcp_nextcloud.server.argument_text import LINE, TEXT, character_problem

    count = 0
    for line in _unfolded(ics):
        name = line.split(":", 1)[0].split(";", 1)[0].upper()
        kind = TEXT if name in ("DESCRIPTION", "X-ALT-DESC", "COMMENT") else LINE
        count += 1 if character_problem(line, kind) else 0
    return count


def _ics_multi_address(ics: str) -> int:
    """ATTENDEE lines whose value is not exactly one address."""
    count = 0
    for line in _unfolded(ics):
        if not line.upper().startswith("ATTENDEE"):
            continue
        value = _property_value(line)
        address = value[7:] if value.lower().startswith("mailto:") else value
        count += 0 if ONE_ADDRESS.fullmatch(address) else 1
    return count


def _property_value(line: str) -> str:
    """The value of a content line: after the first colon outside a quoted parameter."""
    quoted = False
    for i, ch in enumerate(line):
        if ch == '"':
            quoted = not quoted
        elif ch == ":" and not quoted:
            return line[i + 1:]
    return ""


def main() -> None:
    """The child: a hello line with the world's handles, then one outcome line per request line."""
    import dataclasses
    import logging

    logging.disable(logging.CRITICAL)
    with tempfile.TemporaryDirectory() as tmp:
        world = _World(Path(tmp))
        print(json.dumps({"base": world.base, "foreign": world.foreign}), flush=True)
        for line in sys.stdin:
            if not line.strip():
                continue
            req = json.loads(line)
            try:
                out = world.handle(req["tool"], req["args"], req.get("listing", True))
                reply = dataclasses.asdict(out)
            except Exception as exc:   # the harness itself broke: say so, never pass it off as the tool's
                reply = {"harness_error": f"{type(exc).__name__}: {exc}"[:500]}
            print(json.dumps(reply, default=str), flush=True)
    os._exit(0)   # the emulator's and the portal's threads need no orderly shutdown


if __name__ == "__main__":
    main()
