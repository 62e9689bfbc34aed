"""Peak memory of what the issue-10 hostile test found: lying zips, a 480-member deck, a 3 GiB `inspect`.

Each case runs in a fresh child that prints its own peak resident size
(VmHWM); the reference is the same child reading the honest sample deck.
The issue's figures before the fix are printed next to them. The run fails
only on ratios measured here: a hostile file may cost at most twice the
honest deck's peak.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mcp_nextcloud.fixtures.hostile_zips import DOCS, lying_odf, lying_pptx, many_members_pptx

ROOT = Path(__file__).resolve().parents[1]
MAX_RATIO = 2.0

_EXTRACT = """
import json, sys
from mcp_nextcloud.reader import ReaderError, extract
data = open(sys.argv[1], "rb").read()
try:
    outcome = extract(data, sys.argv[2]).kind
except ReaderError as exc:
    outcome = exc.code
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"outcome": outcome, "peak_kib": peak}))
"""


def _child(code: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=str(ROOT), capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _extract_peak(tmp_path: Path, data: bytes, name: str) -> dict:
    path = tmp_path / f"in-{name}"
    path.write_bytes(data)
    return _child(_EXTRACT, str(path), name)


def _sparse(tmp_path: Path) -> Path:
    big = tmp_path / "huge.pdf"
    with open(big, "wb") as f:
        f.truncate(3 * 1024 ** 3)
    return big


def _inspect_peak(path: Path) -> dict:
    """`inspect` in a child: its own peak (the extraction itself runs in a further, capped child)."""
    code = ("import json, sys, contextlib, io\nfrom mcp_nextcloud.cli import main\n"
            "with contextlib.redirect_stderr(io.StringIO()):\n    rc = main(['inspect', sys.argv[1]])\n"
            "peak = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
            "print(json.dumps({'outcome': rc, 'peak_kib': peak}))")
    return _child(code, str(path))


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_hostile_inputs_cost_no_more_than_an_honest_deck(tmp_path, bench_report):
    honest = _extract_peak(tmp_path, (DOCS / "slides.pptx").read_bytes(), "slides.pptx")
    cases = {
        "lying notes.txt (zip, 40 B declared, 512 MiB real)": _extract_peak(tmp_path, lying_odf(), "notes.txt"),
        "lying notes.odt": _extract_peak(tmp_path, lying_odf(), "notes.odt"),
        "lying slides.pptx": _extract_peak(tmp_path, lying_pptx(), "slides.pptx"),
        "pptx with 480 x 1 MiB members": _extract_peak(tmp_path, many_members_pptx(), "deck.pptx"),
        "inspect of a 3 GiB sparse file": _inspect_peak(_sparse(tmp_path)),
        "inspect of the lying notes.odt": _inspect_peak(_write(tmp_path / "notes.odt", lying_odf())),
    }
    base = honest["peak_kib"] / 1024
    figures = {"honest slides.pptx peak MiB": round(base, 1)}
    budgets = []
    for label, out in cases.items():
        peak = out["peak_kib"] / 1024
        figures[f"{label}: outcome"] = out["outcome"]
        figures[f"{label}: peak MiB"] = round(peak, 1)
        budgets.append((f"{label[:28]} / honest", round(peak / base, 2), MAX_RATIO, "<="))
    figures["before the fix (issue 10)"] = "sync 42 -> 1,068 MB; inspect 2 GB (lying zip), 3 GB (sparse); deck 1 GB"
    bench_report("hostile_inputs_memory", figures, budgets)
    assert all(peak_ratio <= MAX_RATIO for _, peak_ratio, _, _ in budgets), budgets
