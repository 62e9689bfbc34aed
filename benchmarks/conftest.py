"""Shared benchmark helpers: print figures next to budgets and save them as JSON.

Benchmarks never fail on wall-clock times (machines are shared and noisy);
where one fails the run it does so on ratios measured in the same run.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path

import pytest

RESULTS_DIR = Path(__file__).parent / "results"


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1)))))
    return ordered[k]


def timed(fn, repeat: int) -> list[float]:
    """Run fn() `repeat` times; return the durations in milliseconds."""
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def summary(ms: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(ms), 4),
        "p95_ms": round(percentile(ms, 95), 4),
        "min_ms": round(min(ms), 4),
        "n": len(ms),
    }


def report(name: str, figures: dict, budgets: list[tuple[str, float, float, str]] | None = None) -> dict:
    """Print `figures` and each budget as met / missed, and save both as JSON.

    budgets: (label, measured, limit, "<=" or ">=").
    """
    rows = []
    for label, measured, limit, op in budgets or []:
        met = measured <= limit if op == "<=" else measured >= limit
        rows.append({"budget": label, "measured": measured, "limit": limit, "op": op, "met": met})
    print(f"\n=== {name} ===")
    for key, value in figures.items():
        print(f"  {key:<48} {value}")
    for r in rows:
        status = "met" if r["met"] else "MISSED"
        print(f"  budget {r['budget']:<41} {r['measured']:.4g} {r['op']} {r['limit']:.4g}  [{status}]")
    RESULTS_DIR.mkdir(exist_ok=True)
    payload = {
        "name": name,
        "figures": figures,
        "budgets": rows,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (RESULTS_DIR / f"{name}.json").write_text(json.dumps(payload, separators=(",", ":")))
    return payload


@pytest.fixture
def bench_report():
    return report
