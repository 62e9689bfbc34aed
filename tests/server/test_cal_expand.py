"""The recurrence expander (server/tools/calendar/expand.py): same occurrences as dateutil, within its budgets.

Property-based: for random valid rules (frequencies, intervals, BY parts,
zones, starts far before the window), the budgeted, fast-forwarded walk
gives exactly the occurrences dateutil's own `between` gives; hostile rules
end within the time budget and are recorded as cut.
"""
from __future__ import annotations

import datetime as dt
import time
from zoneinfo import ZoneInfo

import icalendar
from dateutil.rrule import rrulestr
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mcp_nextcloud.server.tools.calendar.expand import Budget, Watchdog, occurrences
from mcp_nextcloud.server.tools.calendar.rrule import BadRule, check_rule

UTC = dt.timezone.utc
ZONES = ["UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe"]


def _calendar(rule: str, start: dt.datetime, uid: str = "u@test") -> icalendar.Calendar:
    cal = icalendar.Calendar()
    cal.add("PRODID", "-//test//EN")
    cal.add("VERSION", "2.0")
    ev = icalendar.Event()
    ev.add("UID", uid)
    ev.add("DTSTAMP", dt.datetime(2026, 1, 1, tzinfo=UTC))
    ev.add("DTSTART", start)
    ev.add("DURATION", dt.timedelta(seconds=1))
    ev.add("SUMMARY", "x")
    ev["RRULE"] = icalendar.vRecur.from_ical(rule)
    cal.add_component(ev)
    return cal


@st.composite
def rules(draw):
    # The frequencies the walk fast-forwards and the tools accept; sub-hourly ones are covered by the budget tests.
    freq = draw(st.sampled_from(["HOURLY", "DAILY", "WEEKLY"]))
    parts = [f"FREQ={freq}", f"INTERVAL={draw(st.integers(1, 9))}"]
    if draw(st.booleans()):
        parts.append("BYHOUR=" + ",".join(map(str, sorted(draw(st.sets(st.integers(0, 23), min_size=1, max_size=3))))))
    if draw(st.booleans()):
        parts.append("BYDAY=" + ",".join(sorted(draw(st.sets(st.sampled_from(["MO", "TU", "WE", "TH", "FR", "SA",
                                                                              "SU"]), min_size=1, max_size=3)))))
    return ";".join(parts)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rule=rules(), zone=st.sampled_from(ZONES), days_before=st.integers(0, 4000),
       hour=st.integers(0, 23), minute=st.integers(0, 59))
def test_the_budgeted_walk_gives_the_occurrences_dateutil_gives(rule, zone, days_before, hour, minute):
    lo = dt.datetime(2027, 3, 10, tzinfo=UTC)
    hi = lo + dt.timedelta(minutes=30)
    start = (lo - dt.timedelta(days=days_before)).astimezone(ZoneInfo(zone)).replace(hour=hour, minute=minute,
                                                                                      second=0)
    try:
        check_rule(rule, start, writing=False)
    except BadRule:
        assume(False)   # a rule dateutil itself refuses (BYHOUR no INTERVAL reaches): refused on read, rightly
    # dateutil alone, from DTSTART (bounded here because the window is short and steps are at least 1 s).
    expected = {when.astimezone(UTC) for when in rrulestr(rule, dtstart=start).between(
        lo - dt.timedelta(seconds=1), hi, inc=True) if lo - dt.timedelta(seconds=1) < when + dt.timedelta(seconds=1)
        and when < hi}
    if start >= lo - dt.timedelta(seconds=1) and start < hi:
        expected.add(start.astimezone(UTC))   # DTSTART is an occurrence even when the rule skips it
    budget = Budget(per_rule=100_000, max_steps=10_000_000, seconds=10)
    with Watchdog(budget, slice_s=10) as watchdog:
        found = occurrences(_calendar(rule, start), "VEVENT", lo, hi, budget, watchdog)
    got = {c.decoded("DTSTART").astimezone(UTC) for c in found}
    assert got == expected and not budget.cut


def test_hostile_rules_end_within_the_budget_and_are_recorded():
    lo = dt.datetime(2027, 1, 1, tzinfo=UTC)
    hi = dt.datetime(2028, 1, 1, tzinfo=UTC)
    hostile = {"never": "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30", "secondly-never": "FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=30",
               "every-second": "FREQ=SECONDLY", "count": "FREQ=DAILY;COUNT=1000000"}
    budget = Budget(per_rule=201)
    t0 = time.monotonic()
    with Watchdog(budget) as watchdog:
        counts = {uid: len(occurrences(_calendar(rule, dt.datetime(2020, 1, 1, 9, tzinfo=UTC), uid), "VEVENT",
                                       lo, hi, budget, watchdog, uid))
                  for uid, rule in hostile.items()}
    assert time.monotonic() - t0 < 30   # a hang guard: the budget is 2 s, the machine is shared
    assert budget.cut >= {"never", "secondly-never"} and counts["every-second"] >= 200
    assert {"every-second", "count"} <= budget.capped


def test_interval_zero_and_friends_never_reach_the_expander():
    start = dt.datetime(2027, 1, 1, tzinfo=UTC)
    for rule in ("FREQ=DAILY;INTERVAL=0", "FREQ=DAILY;COUNT=0", "FREQ=DAILY;BYSECOND=61", "FREQ=FORTNIGHTLY"):
        try:
            check_rule(rule, start, writing=False)
        except BadRule:
            continue
        raise AssertionError(f"{rule} was accepted")
