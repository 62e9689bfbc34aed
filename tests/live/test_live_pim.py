"""Calendar, contacts and Talk tools against a real Nextcloud (skipped unless NEXTCLOUD_URL/USER/APP_PASSWORD are set).

Everything a scenario creates (events, a contact, rooms) carries a run id and
is deleted at the end, whatever happened. The Talk scenarios also need
NEXTCLOUD_PUBLIC_URL (the tools refuse without it); the room-member scenario
needs NEXTCLOUD_LIVE_MEMBER, another account id on that server.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import uuid

import anyio
import icalendar
import pytest


@pytest.fixture
def live_pim(live_account):
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    client = NextcloudClient(live_account)
    made: dict[str, list] = {"events": [], "cards": [], "rooms": []}
    ctx = ServerContext(account=live_account, index=None, client_factory=lambda: client)
    try:
        yield build_server(ctx), client, made
    finally:
        for calendar, uid in made["events"]:
            obj = client.caldav.object_by_uid(calendar, uid)
            if obj is not None:
                client.caldav.delete_event(calendar, obj.name)
        for name in made["cards"]:
            client.transport.request("DELETE", f"/remote.php/dav/addressbooks/users/{client.user_id}/contacts/{name}",
                                     source="carddav", dav=True)
        for token in made["rooms"]:
            client.talk.delete_room(token)
        ctx.close()


def _call(server, name, args):
    from mcp import Client

    async def go():
        async with Client(server, mode="legacy") as c:
            return await c.call_tool(name, args)
    result = anyio.run(go)
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def _when(days: int, hour: int) -> str:
    day = dt.date.today() + dt.timedelta(days=days)
    return f"{day.isoformat()}T{hour:02d}:00 Europe/Paris"


def test_live_create_list_update_keeps_rrule_and_alarm_then_delete(live_pim):
    server, client, made = live_pim
    run = uuid.uuid4().hex[:8]
    calendar = next(c.id for c in client.caldav.calendars()
                    if c.writable and "VEVENT" in c.components and not c.id.startswith("app-generated--"))
    uid = f"mcp-live-{run}@test"
    start = dt.datetime.combine(dt.date.today() + dt.timedelta(days=30), dt.time(9, 0))
    cal = icalendar.Calendar()
    cal.add("PRODID", "-//mcp-nextcloud live//EN")
    cal.add("VERSION", "2.0")
    ev = icalendar.Event()
    ev.add("UID", uid)
    ev.add("DTSTAMP", dt.datetime.now(dt.timezone.utc))
    ev.add("DTSTART", start.replace(tzinfo=dt.timezone.utc))
    ev.add("DTEND", (start + dt.timedelta(minutes=30)).replace(tzinfo=dt.timezone.utc))
    ev.add("SUMMARY", f"mcp live series {run}")
    ev.add("RRULE", {"FREQ": "WEEKLY", "COUNT": 4})
    alarm = icalendar.Alarm()
    alarm.add("ACTION", "DISPLAY")
    alarm.add("DESCRIPTION", "soon")
    alarm.add("TRIGGER", dt.timedelta(minutes=-15))
    ev.add_component(alarm)
    cal.add_component(ev)
    client.caldav.put_event(calendar, cal.to_ical().decode())
    made["events"].append((calendar, uid))

    listed = _call(server, "calendar_list_events", {"start": start.date().isoformat(), "end":
                                                    (start.date() + dt.timedelta(days=28)).isoformat()})
    mine = [e for e in listed["events"] if e["uid"] == uid]
    assert len(mine) == 4 and all(e["repeats"] for e in mine)

    _call(server, "calendar_update_event", {"uid": uid, "start": f"{start.date().isoformat()}T16:00Z"})
    stored = icalendar.Calendar.from_ical(client.caldav.object_by_uid(calendar, uid).ics)
    master = next(c for c in stored.walk("VEVENT") if "RECURRENCE-ID" not in c)
    assert master.get("RRULE") is not None and list(master.walk("VALARM"))
    assert int(master["SEQUENCE"]) >= 1

    made_event = _call(server, "calendar_create_event", {"title": f"mcp live single {run}", "start": _when(31, 14)})
    made["events"].append((made_event["calendar"], made_event["uid"]))
    assert made_event["local"].endswith("Europe/Paris")
    for uid_ in (uid, made_event["uid"]):
        assert _call(server, "calendar_delete_event", {"uid": uid_})["deleted"] is True


def test_live_elodie_is_found_by_elodie(live_pim):
    server, client, made = live_pim
    run = uuid.uuid4().hex[:8]
    name = f"mcp-live-{run}.vcf"
    card = (f"BEGIN:VCARD\nVERSION:3.0\nUID:mcp-live-{run}\nFN:Élodie Zz{run}\n"
            f"EMAIL:elodie.{run}@example.invalid\nEND:VCARD\n")
    client.transport.request("PUT", f"/remote.php/dav/addressbooks/users/{client.user_id}/contacts/{name}",
                             source="carddav", dav=True, content=card.encode(),
                             headers={"Content-Type": "text/vcard; charset=utf-8"})
    made["cards"].append(name)
    people = _call(server, "contacts_search", {"query": f"elodie zz{run}"})["people"]
    assert [p["name"] for p in people] == [f"Élodie Zz{run}"]


def _public(account):
    if not account.public_url:
        pytest.skip("NEXTCLOUD_PUBLIC_URL is not set: the Talk tools refuse without it")


def test_live_room_with_a_member(live_pim, live_account):
    _public(live_account)
    member = os.environ.get("NEXTCLOUD_LIVE_MEMBER")
    if not member:
        pytest.skip("set NEXTCLOUD_LIVE_MEMBER to another account id to add to the room")
    server, client, made = live_pim
    room = _call(server, "meet_create_room", {"name": f"mcp live {uuid.uuid4().hex[:6]}", "participants": [member]})
    made["rooms"].append(room["token"])
    assert room["participants"] == [member]
    assert member in {p.id for p in client.talk.participants(room["token"])}


def test_live_scheduled_meeting_points_at_its_room(live_pim, live_account):
    _public(live_account)
    server, client, made = live_pim
    out = _call(server, "meet_schedule", {"title": f"mcp live meeting {uuid.uuid4().hex[:6]}", "start": _when(32, 11)})
    made["rooms"].append(out["room"]["token"])
    made["events"].append((out["event"]["calendar"], out["event"]["uid"]))
    assert out["event"]["location"] == out["room"]["url"]
    assert out["room"]["url"].startswith(live_account.public_url)
    stored = client.caldav.object_by_uid(out["event"]["calendar"], out["event"]["uid"])
    assert out["room"]["url"] in stored.ics.replace("\r\n ", "")


def test_live_deck_due_with_an_offset_or_a_zone_is_stored_as_that_instant(live_pim, live_http):
    server, _, _ = live_pim
    board = _call(server, "deck_create_board", {"title": f"mcp due {uuid.uuid4().hex[:6]}", "stacks": ["To do"]})
    bid = board["board"]["board"]
    try:
        for due in ("2026-12-18T17:00:00+01:00", "2026-12-18T17:00 Europe/Paris", "2026-12-18 16:00Z"):
            card = _call(server, "deck_create_card", {"board": bid, "stack": "To do", "title": "c", "due": due})["card"]
            stack = board["board"]["stacks"][0]["stack"]
            got = live_http.get(f"/index.php/apps/deck/api/v1.0/boards/{bid}/stacks/{stack}/cards/{card['card']}")
            assert got.status_code == 200, got.text
            stored = dt.datetime.fromisoformat(got.json()["duedate"])
            assert stored == dt.datetime(2026, 12, 18, 16, 0, tzinfo=dt.timezone.utc), (due, got.json()["duedate"])
    finally:
        live_http.delete(f"/index.php/apps/deck/api/v1.0/boards/{bid}")
