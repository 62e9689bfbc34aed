"""The CLI's write paths on a real Nextcloud: every --dry-run writes nothing, and --confirm is required.

The commands run as a throw-away account (made with occ, deleted at the end),
so every line the server's access log holds for that account is this test's
own: "writes nothing" is checked there, by method, not taken from the CLI's
answer. What the commands act on (a file, a board with a card, an event) is
made first with a plain client as that account.
"""
from __future__ import annotations

import json
import uuid

import httpx
import pytest

WRITES = {"PUT", "POST", "DELETE", "MKCOL", "PROPPATCH", "MOVE", "COPY", "LOCK", "UNLOCK", "PATCH", "MKCALENDAR"}
DECK = "/index.php/apps/deck/api/v1.0"
EVENT = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//live test//EN\r\nBEGIN:VEVENT\r\nUID:{uid}\r\n"
         "DTSTAMP:20300101T000000Z\r\nDTSTART:20300303T090000Z\r\nDTEND:20300303T100000Z\r\nSUMMARY:Live\r\n"
         "END:VEVENT\r\nEND:VCALENDAR\r\n")


@pytest.fixture
def writer(throwaway_account, cli_as, live_member):
    """(run, account, objects): the CLI as a fresh account, and a file, a board/stack/card and an event of its own."""
    account = throwaway_account(first_login=True)
    with httpx.Client(base_url=account.url, auth=(account.user, account.app_password), timeout=60,
                      headers={"OCS-APIRequest": "true", "Accept": "application/json"}) as http:
        assert http.put(f"/remote.php/dav/files/{account.user}/note.md", content=b"first\n").status_code == 201
        board = http.post(f"{DECK}/boards", json={"title": f"live {uuid.uuid4().hex[:6]}", "color": "0082c9"}).json()
        todo = http.post(f"{DECK}/boards/{board['id']}/stacks", json={"title": "To do", "order": 0}).json()
        http.post(f"{DECK}/boards/{board['id']}/stacks", json={"title": "Done", "order": 1})
        card = http.post(f"{DECK}/boards/{board['id']}/stacks/{todo['id']}/cards",
                         json={"title": "Card", "type": "plain", "order": 0}).json()
        uid = f"live-{uuid.uuid4().hex}"
        put = http.put(f"/remote.php/dav/calendars/{account.user}/personal/{uid}.ics", content=EVENT.format(uid=uid),
                       headers={"Content-Type": "text/calendar"})
        assert put.status_code == 201
    objects = {"board": str(board["id"]), "card": str(card["id"]), "uid": uid, "member": live_member.user}
    return cli_as(account), account, objects


def _commands(o: dict[str, str], tmp_path) -> list[list[str]]:
    cards = tmp_path / "cards.json"
    cards.write_text(json.dumps({"board": int(o["board"]), "cards": [{"id": "a", "stack": "To do", "title": "A"}]}))
    return [
        ["files", "write", "--path", "/note.md", "--content", "second"],
        ["files", "write", "--path", "/new/deep.md", "--content", "x", "--create-folders"],
        ["files", "share", "--path", "/note.md", "--share-with", o["member"]],
        ["deck", "create-board", "--title", "Dry board", "--stacks", "To do"],
        ["deck", "create-card", "--board", o["board"], "--stack", "To do", "--title", "Dry card"],
        ["deck", "update-card", "--board", o["board"], "--card", o["card"], "--title", "Renamed"],
        ["deck", "move-card", "--board", o["board"], "--card", o["card"], "--stack", "Done"],
        ["deck", "create-cards", "--input-file", str(cards)],
        ["calendar", "create", "--title", "Dry event", "--start", "2030-03-04T10:00 Europe/Paris"],
        ["calendar", "update", "--uid", o["uid"], "--location", "Room 9"],
        ["calendar", "delete", "--uid", o["uid"]],
        ["meet", "create-room", "--name", "Dry room", "--participants", o["member"]],
        ["meet", "schedule", "--title", "Dry meeting", "--start", "2030-03-05T10:00 Europe/Paris"],
    ]


def test_live_every_dry_run_writes_nothing(writer, server_admin, tmp_path):
    run, account, objects = writer
    resolved = []
    for command in _commands(objects, tmp_path):
        mark = server_admin.log_mark()
        done = run(*command, "--dry-run", "--json")
        assert done.returncode == 0, (command, done.stdout[-500:], done.stderr[-1500:])
        assert json.loads(done.stdout)["dryRun"] is True
        asked = server_admin.requests_since(mark, user=account.user, ours=True)
        resolved += asked
        written = [line for line in asked if line.split(" ", 1)[0] in WRITES]
        assert written == [], (command, written)
    # The log does see this account: the Deck and calendar dry runs resolved their board, card and event.
    assert any("/apps/deck/" in line for line in resolved) and any("/calendars/" in line for line in resolved)


def test_live_writes_without_confirm_are_refused_and_write_nothing(writer, server_admin, tmp_path):
    run, account, objects = writer
    needs = [c for c in _commands(objects, tmp_path) if c[:2] != ["deck", "move-card"]]   # a move asks nobody
    for command in needs:
        mark = server_admin.log_mark()
        done = run(*command, "--json")
        assert done.returncode != 0, command
        assert "--confirm" in done.stdout + done.stderr, command
        written = [line for line in server_admin.requests_since(mark, user=account.user, ours=True)
                   if line.split(" ", 1)[0] in WRITES]
        assert written == [], (command, written)


def test_live_confirm_writes_and_the_server_has_it(writer, tmp_path):
    run, account, objects = writer
    with httpx.Client(base_url=account.url, auth=(account.user, account.app_password), timeout=60) as http:
        etag = http.request("PROPFIND", f"/remote.php/dav/files/{account.user}/note.md", headers={"Depth": "0"})
        tag = etag.text.split("<d:getetag>")[1].split("</d:getetag>")[0].strip('"&quot;')
        # A replacement needs an etag a read through us returned (what it read is compared before the PUT).
        assert run("files", "read", "--path", "/note.md", "--json").returncode == 0
        done = run("files", "write", "--path", "/note.md", "--content", "second\n", "--etag", tag, "--confirm",
                   "--json")
        assert done.returncode == 0, done.stderr[-1500:]
        assert http.get(f"/remote.php/dav/files/{account.user}/note.md").text == "second\n"


def test_live_a_dry_run_prints_no_traceback(writer, tmp_path):
    run, _, objects = writer
    done = run("files", "write", "--path", "/note.md", "--content", "second", "--dry-run", "--json")
    assert done.returncode == 0 and "Traceback" not in done.stderr and "internal fault" not in done.stderr
