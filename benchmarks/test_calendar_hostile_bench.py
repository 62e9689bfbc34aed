"""Hostile calendar benchmark: the worst calendar the tools accept, listed within the call budget (issue 23).

The account holds 5,000 ordinary events (5 calendars x 1,000, a year of
them) and, in a sixth calendar, the RRULEs another client can store and
Nextcloud 34 returns for a window: every second and every minute from the
window's start, every minute of every hour, a rule that never occurs (dateutil
walks it to year 9999 without yielding), a million-count daily series from
2020, a BYSETPOS rule just under the cap, every hour of every day of the
week. Listed over a month and over the longest window (366 days):

- end to end (MCP client -> tool -> emulator): wall ms of the call;
- the listing's work alone over the same objects (fetched, and parsed once,
  first): ms in all (single events included: their entries are cached, up to
  20,000; series keep their parsed calendar, up to 2,000), ms inside the
  recurrence expansions, steps, series cut or capped, Python peak
  (tracemalloc) and process RSS growth (psutil).

Budgets: time inside expansions within cal_expand.MAX_SECONDS plus one series
slice and one watch period of slack; memory within 64 MB. Figures are printed and
saved under benchmarks/results/; the run fails only on the answer's shape
(truncated, the hostile series named), which is deterministic.
"""
from __future__ import annotations

import datetime as dt
import json
import time
import tracemalloc

import psutil

from benchmarks.conftest import report, summary, timed
from benchmarks.test_calendar_bench import CALENDARS, _big_calendars, _client_calls, _server, _store, _vcal

SEED = 20261202
EVENTS_PER_CALENDAR = 1000
MONTH = {"start": "2027-03-01", "end": "2027-03-31", "limit": 200}
YEAR = {"start": "2027-01-01", "end": "2027-12-31", "limit": 200}
REPEAT = 3
HOSTILE = [   # (uid, RRULE, DTSTART): each accepted by Nextcloud 34 and returned by its REPORT for these windows
    ("every-second", "FREQ=SECONDLY", "20270101T000000Z"),
    ("every-minute", "FREQ=MINUTELY", "20270101T000000Z"),
    ("minutes-of-hours", "FREQ=HOURLY;BYMINUTE=" + ",".join(map(str, range(60))), "20270101T000000Z"),
    ("never", "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30", "20270101T090000Z"),
    ("million-days", "FREQ=DAILY;COUNT=1000000", "20200101T090000Z"),
    ("setpos", "FREQ=YEARLY;BYSETPOS=1,-1;BYHOUR=" + ",".join(map(str, range(24))) + ";BYMINUTE=0,30",
     "20270101T000000Z"),
    ("hours-of-week", "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR,SA,SU;BYHOUR=" + ",".join(map(str, range(24))),
     "20270101T000000Z"),
]


def _hostile_account(emu) -> None:
    _big_calendars(emu, seed=SEED, events=EVENTS_PER_CALENDAR, series=0)
    hostile = []
    for uid, rule, start in HOSTILE:
        hostile.append(_vcal(f"BEGIN:VEVENT\nUID:{uid}\nDTSTAMP:20261201T000000Z\nDTSTART:{start}\n"
                             f"DURATION:PT1S\nSUMMARY:{uid}\nRRULE:{rule}\nEND:VEVENT\n"))
    _store(emu, "alice", "hostile", "Hostile", hostile)


def _expand_all(fetched, lo, hi, limit: int):
    from mcp_nextcloud.server.tools.calendar.expand import Budget, Watchdog
    from mcp_nextcloud.server.tools.calendar.read import expand_object

    budget = Budget(per_rule=limit + 1)
    count = 0
    with Watchdog(budget) as watchdog:
        for cal, objects in fetched:
            for obj in objects:
                key = (cal.id, obj.name, obj.etag)
                count += len(expand_object(obj.ics, cal, lo, hi, "VEVENT", key, budget, watchdog))
    return budget, count


def _expansion_alone(emu, window: dict) -> dict:
    """The listing's expansion over the same objects, fetched and parsed first (as the listing's cache has
    them after one call): ms and steps in one pass, memory (tracemalloc slows it) in another."""
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.config import Account
    from mcp_nextcloud.server.tools.calendar.common import CalendarRef, bound

    creds = emu.account("alice")
    client = NextcloudClient(Account(url=creds["url"], user="alice", app_password=creds["app_password"]))
    lo = bound(window["start"], "start")
    hi = bound(window["end"], "end") + dt.timedelta(days=1)
    fetched = [(CalendarRef(c, c, True, ("VEVENT",)), client.caldav.objects_between(c, lo, hi))
               for c in [f"cal-{i}" for i in range(CALENDARS)] + ["hostile"]]
    _expand_all(fetched, lo, hi, window["limit"])   # the first listing fills the caches
    t0 = time.perf_counter()
    budget, count = _expand_all(fetched, lo, hi, window["limit"])
    ms = (time.perf_counter() - t0) * 1000
    process = psutil.Process()
    rss0 = process.memory_info().rss
    tracemalloc.start()
    _expand_all(fetched, lo, hi, window["limit"])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"objects": sum(len(o) for _, o in fetched), "occurrences": count, "ms": round(ms, 1),
            "in_expansions_ms": round(budget.used_s * 1000, 1),
            "steps": budget.steps, "cut": sorted(budget.cut), "capped": sorted(budget.capped),
            "python_peak_mb": round(peak / 2**20, 1),
            "rss_growth_mb": round((process.memory_info().rss - rss0) / 2**20, 1)}


def test_calendar_hostile_bench():
    from mcp_nextcloud.fixtures.emulator.server import Emulator
    from mcp_nextcloud.server.tools.calendar.expand import _WATCH_EVERY_S, MAX_SECONDS, MAX_STEPS, SERIES_SECONDS

    figures: dict = {"events": CALENDARS * EVENTS_PER_CALENDAR, "hostile_series": len(HOSTILE),
                     "budget_steps": MAX_STEPS, "budget_seconds": MAX_SECONDS, "series_slice_seconds": SERIES_SECONDS}
    budgets = []
    with Emulator(seed="empty") as emu:
        _hostile_account(emu)
        server = _server(emu)
        for name, window in (("month", MONTH), ("year", YEAR)):
            answer = json.loads(_client_calls(server, [("calendar_list_events", window)])[0].content[0].text)
            assert answer["truncated"] is True and "shorter window" in answer["hint"]
            assert any("never" in w for w in answer["warnings"]), answer["warnings"]
            ms = summary(timed(lambda w=window: _client_calls(server, [("calendar_list_events", w)]), REPEAT))
            alone = _expansion_alone(emu, window)
            figures[f"{name}_call_p50_ms"] = ms["p50_ms"]
            figures[f"{name}_call_p95_ms"] = ms["p95_ms"]
            figures[f"{name}_events_returned"] = len(answer["events"])
            figures[f"{name}_series_named_in_warnings"] = sorted(
                uid for uid, _, _ in HOSTILE if any(f"(uid {uid})" in w for w in answer["warnings"]))
            figures[f"{name}_expansion"] = alone
            budgets += [
                (f"{name}: time in expansions s", alone["in_expansions_ms"] / 1000,
                 MAX_SECONDS + SERIES_SECONDS + _WATCH_EVERY_S, "<="),
                (f"{name}: expansion python peak MB", alone["python_peak_mb"], 64, "<="),
                (f"{name}: expansion RSS growth MB", alone["rss_growth_mb"], 64, "<="),
            ]
    report("calendar_hostile_bench", figures, budgets)
