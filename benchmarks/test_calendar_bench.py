"""Calendar benchmark: calendar_list_events end to end (MCP client -> tool -> emulator) and the answer sizes.

- 5 calendars x 500 events (10 weekly series each, 50 in all, the rest single
  events spread over a year), one-month window: requests made (goal: one
  REPORT per calendar, one PROPFIND in all, nothing per event) and p50 ms.
- A week with 20 events (zoned, recurring, with attendees and Talk links,
  UUID uids as real clients make them): answer bytes (goal <= 4 kB).
- tools/list with every tool of the product counted: bytes per tool
  (goal <= 600 on average).

Wall-clock figures are printed, never asserted; the run fails only on the
request counts, which are deterministic.
"""
from __future__ import annotations

import datetime as dt
import json
import random
import uuid

import anyio

from benchmarks.conftest import report, summary, timed

SEED = 20261201
CALENDARS = 5
EVENTS_PER_CALENDAR = 500
SERIES_PER_CALENDAR = 10
REPEAT = 20
WINDOW = {"start": "2027-03-01", "end": "2027-03-31"}
WEEK = {"start": "2027-03-08", "end": "2027-03-14"}


def _vevent(uid: str, title: str, start: dt.datetime, minutes: int, extra: str = "", tz: str | None = None) -> str:
    if tz:
        stamp = f";TZID={tz}:{start:%Y%m%dT%H%M%S}"
        end = f";TZID={tz}:{start + dt.timedelta(minutes=minutes):%Y%m%dT%H%M%S}"
    else:
        stamp = f":{start:%Y%m%dT%H%M%SZ}"
        end = f":{start + dt.timedelta(minutes=minutes):%Y%m%dT%H%M%SZ}"
    return (f"BEGIN:VEVENT\nUID:{uid}\nDTSTAMP:20261201T000000Z\nDTSTART{stamp}\nDTEND{end}\n"
            f"SUMMARY:{title}\n{extra}END:VEVENT\n")


def _vcal(body: str) -> str:
    from mcp_nextcloud.fixtures.emulator.appseed import CAL_TZ_BERLIN
    return f"BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//bench//EN\n{CAL_TZ_BERLIN}{body}END:VCALENDAR\n"


def _store(emu, user: str, calendar: str, display: str, objects: list[str]) -> None:
    from mcp_nextcloud.fixtures.emulator import caldav

    class _Req:
        state = emu.state

    with emu.state.lock:
        home = caldav._state(_Req()).home(user)
        coll = home.setdefault(calendar, caldav.new_calendar(calendar, display, "#0082c9"))
        for text in objects:
            uid = next(line[4:] for line in text.splitlines() if line.startswith("UID:"))
            coll.store(f"{uid}.ics", text, uid)


def _big_calendars(emu, *, seed: int = SEED, events: int = EVENTS_PER_CALENDAR,
                   series: int = SERIES_PER_CALENDAR) -> None:
    """CALENDARS calendars of `events` each over 2027: the first `series` of each repeat weekly, the rest once."""
    rnd = random.Random(seed)
    year = dt.datetime(2027, 1, 1)
    for c in range(CALENDARS):
        objects = []
        for i in range(events):
            uid = str(uuid.UUID(int=rnd.getrandbits(128)))
            if i < series:
                start = year + dt.timedelta(days=rnd.randrange(60), hours=rnd.randrange(8, 17))
                objects.append(_vcal(_vevent(uid, f"Weekly {c}-{i}", start, 30,
                                             "RRULE:FREQ=WEEKLY;COUNT=40\n", tz="Europe/Berlin")))
            else:
                start = year + dt.timedelta(days=rnd.randrange(365), hours=rnd.randrange(7, 19))
                objects.append(_vcal(_vevent(uid, f"Event {c}-{i}", start, 60)))
        _store(emu, "alice", f"cal-{c}", f"Calendar {c}", objects)


def _busy_week(emu) -> None:
    rnd = random.Random(SEED + 1)
    titles = ["Standup", "Budget review", "1:1 with Bob", "Design critique", "Customer call", "Lunch",
              "Planning", "Retro", "Interview", "Dentist"]
    objects = []
    for i in range(20):
        uid = str(uuid.UUID(int=rnd.getrandbits(128)))
        start = dt.datetime(2027, 3, 8 + i % 5, 8 + (i * 3) % 9, 0)
        extra = ""
        if i % 3 == 0:
            extra += f"LOCATION:https://cloud.example.com/index.php/call/{uuid.UUID(int=i).hex[:8]}\n"
        if i % 4 == 0:
            extra += ("ORGANIZER:mailto:alice@example.invalid\nATTENDEE:mailto:bob@example.invalid\n"
                      "ATTENDEE:mailto:alice@example.invalid\n")
        objects.append(_vcal(_vevent(uid, titles[i % len(titles)], start, 45, extra,
                                     tz="Europe/Berlin" if i % 2 else None)))
    _store(emu, "alice", "week", "Week", objects)


def _client_calls(server, calls):
    from mcp import Client

    async def go():
        async with Client(server, mode="legacy") as c:
            return [await c.call_tool(n, a) for n, a in calls]
    return anyio.run(go)


def _server(emu):
    from mcp_nextcloud.nextcloud.config import Account
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    creds = emu.account("alice")
    account = Account(url=creds["url"], user="alice", app_password=creds["app_password"], public_url=emu.url)
    return build_server(ServerContext(account=account, index=None))


def _tools_list_bytes() -> dict[str, int]:
    from mcp import Client

    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    server = build_server(ServerContext(account=None, index=None))

    async def go():
        async with Client(server, mode="legacy") as c:
            return (await c.list_tools()).tools
    return {t.name: len(json.dumps(t.model_dump(by_alias=True, mode="json", exclude_none=True), separators=(",", ":")))
            for t in anyio.run(go)}


def test_calendar_list_events_bench():
    from mcp_nextcloud.fixtures.emulator.server import Emulator

    with Emulator(seed="empty") as emu:
        _big_calendars(emu)
        server = _server(emu)
        emu.reset_requests()
        first = _client_calls(server, [("calendar_list_events", {**WINDOW, "limit": 200})])[0]
        data = json.loads(first.content[0].text)
        cal_requests = [(m, p) for m, p, _ in emu.requests if p.startswith("/remote.php/dav/calendars/")]
        reports = sum(1 for m, _ in cal_requests if m == "REPORT")
        propfinds = sum(1 for m, _ in cal_requests if m == "PROPFIND")
        calendars_read = len(data["calendars"])
        ms = timed(lambda: _client_calls(server, [("calendar_list_events", {**WINDOW, "limit": 200})]), REPEAT)

    with Emulator(seed="empty") as emu:
        _busy_week(emu)
        week = _client_calls(_server(emu), [("calendar_list_events", {**WEEK, "calendar": "week"})])[0]
        week_data = json.loads(week.content[0].text)
        week_bytes = len(week.content[0].text.encode("utf-8"))

    sizes = _tools_list_bytes()
    per_tool = sum(sizes.values()) / len(sizes)
    stats = summary(ms)
    report("calendar_bench", {
        "calendars_read": calendars_read,
        "events_in_month_window": data.get("total", len(data["events"])),
        "requests_REPORT": reports,
        "requests_PROPFIND": propfinds,
        "requests_total_calendar": len(cal_requests),
        "list_month_p50_ms": stats["p50_ms"],
        "list_month_p95_ms": stats["p95_ms"],
        "week_events": len(week_data["events"]),
        "week_answer_bytes": week_bytes,
        "tools": len(sizes),
        "tools_list_bytes_per_tool": round(per_tool, 1),
        "tools_list_bytes": sizes,
    }, [
        ("REPORTs per calendar", reports / calendars_read, 1, "<="),
        ("PROPFIND per call", propfinds, 1, "<="),
        ("week of 20 events, answer bytes", week_bytes, 4096, "<="),
        ("tools/list bytes per tool", per_tool, 600, "<="),
    ])
    assert len(week_data["events"]) == 20 and not week_data["truncated"]
    assert reports == calendars_read and propfinds == 1   # deterministic: no request per event
