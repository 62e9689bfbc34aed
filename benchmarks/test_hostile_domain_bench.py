"""Issue 23's figures: hostile inputs against every domain tool on the emulator, and what they did.

Every tool, every argument: each catalog value of the argument's kind (fixtures/hostile_domain.py: times
at the edges, RRULEs, addresses, texts with control and format characters), control characters in every
other string, every wrong JSON type, and another account's ids. Each call runs in a child world
(tests/hostile_world.py, driven by tests/hostile_client.py) with a time limit; what it left on the
server is read from the emulator's state.

Counted: internal errors, hangs (no answer within HOSTILE_TIMEOUT_S, call plus the listing after it),
stored control characters, multi-address attendees, Talk rooms left behind, mail headers with CR/LF,
misuse refusals that name no argument, listings broken after an accepted write, and another account's
objects reached. HOSTILE_EVERY=N replays every Nth input (a quick look); the figures are the full run.

    python3 -m pytest -q -s benchmarks/test_hostile_domain_bench.py
"""
from __future__ import annotations

import collections
import json
import os
import time
from typing import Any

import pytest

from mcp_nextcloud.fixtures.hostile_domain import hostile_rrule, replay_inputs
from tests.hostile_client import HostileClient, Outcome

TIMEOUT_S = float(os.environ.get("HOSTILE_TIMEOUT_S", "15"))
EVERY = int(os.environ.get("HOSTILE_EVERY", "1"))
WRITES = ("calendar_create_event", "calendar_update_event", "calendar_delete_event", "deck_create_board",
          "deck_create_card", "deck_update_card", "deck_move_card", "files_write", "files_share_internal",
          "meet_create_room", "meet_schedule")


def _schemas() -> dict[str, dict[str, Any]]:
    from mcp_nextcloud.cli import toolspec

    return {name: spec["input"] for name, spec in toolspec.load().items()}


def _count(outcomes: list[tuple[Outcome, str]]) -> dict[str, Any]:
    counts: dict[str, Any] = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    breakdown: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)

    def hit(name: str, out: Outcome, why: str, n: int = 1) -> None:
        counts[name] += n
        breakdown[name][f"{out.tool} {out.status or out.kind}"] += n
        if len(examples[name]) < 8:
            said = out.listing if name.startswith("listings") else out.text[:120]
            examples[name].append(f"{out.tool} {why} {json.dumps(out.args, ensure_ascii=True)[:160]}"
                                  f" -> {out.status or out.kind}: {said}")

    for out, why in outcomes:
        counts["calls"] += 1
        counts[out.kind] += 1
        if out.internal:
            hit("internal_errors", out, why)
        if out.kind == "hung":
            hit("hangs", out, why)
        if out.stored_controls:
            hit("stored_control_characters", out, why, out.stored_controls)
        if out.multi_address:
            hit("multi_address_attendees", out, why, out.multi_address)
        if out.rooms_left:
            hit("rooms_left_behind", out, why, out.rooms_left)
        if out.header_crlf:
            hit("headers_with_crlf", out, why, out.header_crlf)
        if out.kind == "misuse" and not out.names_an_argument():
            hit("refusals_naming_no_argument", out, why)
        if out.listing and out.listing != "ok":
            hit("listings_broken_after_a_write", out, why)
        if why.endswith(":foreign") and out.kind == "ok" and out.tool in WRITES:
            hit("foreign_objects_written", out, why)
        if why.endswith(":rrule") and out.kind == "ok" and hostile_rrule(str(out.args.get("repeat", ""))):
            hit("hostile_rrules_accepted", out, why)
    return {"counts": dict(counts), "examples": dict(examples),
            "breakdown": {name: dict(c.most_common()) for name, c in breakdown.items()}}


@pytest.mark.timeout(3600)   # ~7,000 calls, each hang costs its time limit: far past the suite's 300 s
def test_hostile_domain_replay(tmp_path):
    t0 = time.perf_counter()
    outcomes: list[tuple[Outcome, str]] = []
    with HostileClient(timeout_s=TIMEOUT_S) as client:
        inputs = replay_inputs(_schemas(), client.base, client.foreign)[::EVERY]
        for tool, args, why in inputs:
            outcomes.append((client.call(tool, args), why))
        restarts = client.restarts
    report = _count(outcomes)
    report.update(inputs=len(inputs), restarts=restarts, seconds=round(time.perf_counter() - t0, 1),
                  timeout_s=TIMEOUT_S, every=EVERY)
    print("\nhostile domain replay: " + json.dumps(report["counts"], sort_keys=True))
    for name, lines in sorted(report["examples"].items()):
        print(f"  {name}: {json.dumps(report['breakdown'][name])}")
        for line in lines:
            print("    " + line)
    print(f"  {len(inputs)} inputs in {report['seconds']} s, {restarts} restarts after hangs")
    out = os.environ.get("HOSTILE_REPORT") or str(tmp_path / "hostile-domain.json")
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1, ensure_ascii=True)
    assert report["counts"]["calls"] == len(inputs)
