"""The one recurrence expander: recurring-ical-events' series, with every rule walked under a budget.

The library asks dateutil for `rule.between(...)`, which builds the whole list
and walks from DTSTART: FREQ=SECONDLY over a week is 604,800 items, a daily
series from year 1 walks 740,000 days before the window. Here each rule is
walked lazily and stops at whichever comes first: the window's end, `per_rule`
occurrences inside it (enough for a listing of `limit`), the call's step
budget or its deadline. A rule that only moves by fixed steps (sub-monthly,
no COUNT, no BYSETPOS) starts walking just before the window, which gives the
same occurrences. What a budget cut is recorded, so the answer says so.

dateutil can also spin without yielding (FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30
walks day by day to year 9999, 8 s; SECONDLY far longer), where no step count
helps: a watchdog thread interrupts the expansion at the deadline
(PyThreadState_SetAsyncExc, delivered only while an expansion runs).
"""
from __future__ import annotations

import contextlib
import contextvars
import ctypes
import datetime as dt
import gc
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generator, Iterator

import recurring_ical_events
from dateutil.rrule import DAILY, HOURLY, MINUTELY, SECONDLY, WEEKLY, rrule
from recurring_ical_events.selection.name import ComponentsWithName
from recurring_ical_events.series import Series
from recurring_ical_events.util import compare_greater, convert_to_datetime

if TYPE_CHECKING:
    from recurring_ical_events.types import Time   # date | datetime

# Per call. Figures next to these: benchmarks/test_calendar_hostile_bench.py.
MAX_STEPS = 200_000          # rule iterations (before and inside the window) over all series of one listing
MAX_SECONDS = 2.0            # wall time spent walking rules in one listing
SERIES_SECONDS = 0.5         # wall time one series may take (a rule that spins cannot starve the others)
_WATCH_EVERY_S = 0.02
_REFIRE_S = 0.1
_CHECK_EVERY = 256           # steps between two looks at the clock
_STEP = {SECONDLY: dt.timedelta(seconds=1), MINUTELY: dt.timedelta(minutes=1), HOURLY: dt.timedelta(hours=1),
         DAILY: dt.timedelta(days=1), WEEKLY: dt.timedelta(weeks=1)}


@dataclass
class Budget:
    """What one listing may spend on recurrences, and what it had to leave out."""

    per_rule: int = 201
    max_steps: int = MAX_STEPS
    seconds: float = MAX_SECONDS
    steps: int = 0
    used_s: float = 0.0                  # time spent inside expansions (fetching and parsing do not count)
    section_started: float | None = None
    cut: set[str] = field(default_factory=set)       # uids whose expansion the budget stopped
    titles: dict[str, str] = field(default_factory=dict)   # uid -> title of the series expanded, for the notes
    capped: set[str] = field(default_factory=set)    # uids with more occurrences in the window than per_rule

    @property
    def spent(self) -> bool:
        running = time.monotonic() - self.section_started if self.section_started is not None else 0.0
        return self.steps >= self.max_steps or self.used_s + running >= self.seconds

    def walk(self, rule: Any, lo: Any, hi: Any, uid: str) -> Iterator[Any]:
        """The rule's starts in [lo, hi], in order, within the budget."""
        if self.spent:
            self.cut.add(uid)
            return
        kept = 0
        steps = iter(_fast_forward(rule, lo))
        while True:
            try:
                start = next(steps)
            except StopIteration:
                return
            except (OverflowError, ValueError):   # the rule ran off the calendar (year 9999)
                return
            self.steps += 1
            if self.steps >= self.max_steps or (self.steps % _CHECK_EVERY == 0 and self.spent):
                self.cut.add(uid)
                return
            if compare_greater(lo, start):
                continue
            if compare_greater(start, hi):
                return
            kept += 1
            if kept > self.per_rule:
                self.capped.add(uid)
                return
            yield start


def _fast_forward(rule: Any, lo: Any) -> Any:
    """The same rule starting a whole number of its steps before `lo`, when that gives the same occurrences.

    dateutil counts in wall-clock time from DTSTART, so moving DTSTART by whole multiples of
    INTERVAL x FREQ keeps every occurrence after it (its implied BY values: time of day, weekday).
    Private attributes: dateutil exposes the parts only to `replace`.
    """
    if not isinstance(rule, rrule) or rule._count is not None or rule._bysetpos or rule._freq not in _STEP:
        return rule
    start = rule._dtstart
    try:
        wall_lo = lo.astimezone(start.tzinfo) if start.tzinfo and lo.tzinfo else lo
        gap = wall_lo.replace(tzinfo=None) - start.replace(tzinfo=None)
    except (OverflowError, ValueError, TypeError):
        return rule
    period = _STEP[rule._freq] * rule._interval
    periods = gap // period - 1
    if periods <= 0:
        return rule
    return rule.replace(dtstart=start + period * periods)


class ExpansionTimeout(Exception):
    """Raised inside an expansion by the watchdog when the call's time is up."""


class Watchdog:
    """Interrupts this thread's expansion sections that run past their slice or the call's time (one per listing).

    A series gets at most `slice_s` so one rule that spins cannot starve the series after it.
    """

    def __init__(self, budget: Budget, slice_s: float = SERIES_SECONDS) -> None:
        self._budget = budget
        self._slice = slice_s
        self._thread_id = threading.get_ident()
        self._lock = threading.Lock()
        self._entered: float | None = None    # when the running section began; None outside sections
        self._last_fire = 0.0
        self._closed = threading.Event()

    def __enter__(self) -> "Watchdog":
        threading.Thread(target=self._watch, name="cal-expand-watchdog", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed.set()

    def _interrupt(self, exc: type[BaseException] | None) -> None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread_id),
                                                   ctypes.py_object(exc) if exc else None)

    def _watch(self) -> None:
        while not self._closed.wait(_WATCH_EVERY_S):
            with self._lock:
                now = time.monotonic()
                if self._entered is None or now - self._last_fire < _REFIRE_S:
                    continue
                if now - self._entered >= self._slice or self._budget.spent:
                    # Fired again while the section runs on: a finalizer that happened to be running
                    # when the exception arrived swallows it (Python reports it as unraisable).
                    self._last_fire = now
                    self._interrupt(ExpansionTimeout)

    @contextlib.contextmanager
    def section(self) -> Iterator[None]:
        """Where the watchdog may interrupt; ExpansionTimeout may escape it (the caller catches it)."""
        collecting = gc.isenabled()
        with self._lock:
            self._entered = self._budget.section_started = time.monotonic()
        try:
            if collecting:
                gc.disable()   # no cyclic-GC finalizers inside the section, where an interruption could land
            yield
        finally:
            with self._lock:
                self._budget.used_s += time.monotonic() - (self._entered or time.monotonic())
                self._entered = self._budget.section_started = None
                self._interrupt(None)   # one set but not yet delivered must not land in unrelated code
            if collecting:
                gc.enable()


class BudgetedSeries(Series):
    """A series whose rules are walked by the current Budget (set by `occurrences`)."""

    class RecurrenceRules(Series.RecurrenceRules):
        def rrule_between(self, span_start: Time, span_stop: Time) -> Generator[Time, None, None]:
            budget = _CURRENT.get()
            lo = convert_to_datetime(span_start, self.tzinfo)
            hi = convert_to_datetime(span_stop, self.tzinfo)
            uid = str(self.core.uid)
            for rule in self.rrules:
                for start in budget.walk(rule, lo, hi, uid):
                    if rule.until is None or not compare_greater(start, rule.until):
                        yield start


_CURRENT: contextvars.ContextVar[Budget] = contextvars.ContextVar("cal_expand_budget")


def occurrences(calendar: Any, component: str, start: dt.datetime, end: dt.datetime, budget: Budget,
                watchdog: Watchdog, uid: str = "") -> list[Any]:
    """The occurrences of `component`s in [start, end) of a parsed calendar, within `budget`.

    An expansion the watchdog interrupts gives nothing and its uid is recorded as cut.
    ValueError when the library finds the calendar unusable (the caller names the object).
    """
    token = _CURRENT.set(budget)
    try:
        with watchdog.section():
            if budget.spent:
                raise ExpansionTimeout
            query = recurring_ical_events.of(calendar,
                                             components=[ComponentsWithName(component, series=BudgetedSeries)])
            return list(query.between(start, end))
    except ExpansionTimeout:
        budget.cut.add(uid)
        return []
    except recurring_ical_events.InvalidCalendar as exc:
        raise ValueError(str(exc)) from None
    finally:
        _CURRENT.reset(token)
