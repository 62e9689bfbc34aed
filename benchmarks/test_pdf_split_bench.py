"""The first read of a big PDF from the CLI: one child or the pages shared by two (issue 17, indexer.jobs.oneshot).

Whole processes, interleaved rounds (each round runs every variant once; ratios are taken within a
round), median of the rounds:
- `inspect manual.pdf` (51 pages, 137k characters) as shipped, next to `pdftotext manual.pdf -`: the
  CLI installed in a fresh venv (benchmarks/installed.py: the goal's figure) and this checkout's;
- the same read with the pages in one child and split between two (a driver forces the number; as
  shipped, `inspect` splits only when the load average leaves a CPU idle),
  on PDFs of 8 to 204 manual pages, to place the page threshold: wall time and CPU time (all the
  processes of the run, from RUSAGE_CHILDREN; CPU time is what a split costs a busy machine);
- the interpreter's own start (`-S` and with site: this machine's .pth hooks, absent from a user's venv);
- `inspect` answered by the index service (it forks the child itself).
"""
from __future__ import annotations

import io
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.conftest import report
from benchmarks.installed import InstallFailed, install
from mcp_nextcloud.indexer.jobs import oneshot
from mcp_nextcloud.service.client import SWITCH

ROOT = Path(__file__).resolve().parents[1]
MANUAL = ROOT / "mcp_nextcloud" / "fixtures" / "docs" / "manual.pdf"
ROUNDS = int(os.environ.get("MCP_NEXTCLOUD_SPLIT_ROUNDS", "9"))
SIZES = (8, 16, 32, 51, 102, 204)
# `inspect` with the number of children forced (whatever the load) and every child given pages.
DRIVER = ("import sys, mcp_nextcloud.indexer.jobs.oneshot as o; o._parts_for = lambda data, parts: int(sys.argv[1]); "
          "o.MIN_PAGES_PER_PART = 1; from mcp_nextcloud.cli import main; "
          "sys.exit(main(['inspect', sys.argv[2], '--json']))")


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(ROOT), PYTHONPYCACHEPREFIX=str(cache))
    env[SWITCH] = "0"
    return env


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms of the whole process tree) of one run; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def _pages(count: int) -> bytes:
    """A PDF of `count` pages of the manual (repeated in order)."""
    import pypdfium2 as pdfium

    src = pdfium.PdfDocument(MANUAL.read_bytes())
    dst = pdfium.PdfDocument.new()
    while len(dst) < count:
        take = min(len(src), count - len(dst))
        dst.import_pages(src, list(range(take)), index=len(dst))
    buf = io.BytesIO()
    dst.save(buf)
    return buf.getvalue()


def _rounds(cmds: dict[str, list[str]], env: dict[str, str]) -> dict[str, list[tuple[float, float]]]:
    for cmd in cmds.values():       # the page cache and the bytecode cache
        _run(cmd, env)
    out: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
    for _ in range(ROUNDS):
        for key, cmd in cmds.items():
            out[key].append(_run(cmd, env))
    return out


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def _ratio(a: list[tuple[float, float]], b: list[tuple[float, float]], i: int = 0) -> float:
    return _median([x[i] / y[i] for x, y in zip(a, b, strict=True)])


def _side_by_side(env: dict[str, str], figures: dict[str, Any], budgets: list[Any], label: str,
                  installed: Path | None) -> None:
    py = sys.executable
    cmds = {"inspect": [py, "-m", "mcp_nextcloud", "inspect", str(MANUAL), "--json"]}
    if installed is not None:
        cmds["inspect, installed"] = [str(installed), "inspect", str(MANUAL), "--json"]
    pdftotext = shutil.which("pdftotext")
    if pdftotext:
        cmds["pdftotext"] = [pdftotext, str(MANUAL), "-"]
    if not label:
        cmds |= {"python -c pass": [py, "-c", "pass"], "python -S -c pass": [py, "-S", "-c", "pass"],
                 "inspect, one child": [py, "-c", DRIVER, "1", str(MANUAL)],
                 "inspect, two children": [py, "-c", DRIVER, "2", str(MANUAL)]}
    got = _rounds(cmds, env)
    for key, runs in got.items():
        figures[f"{key}{label} (ms, median wall / CPU)"] = (_median([w for w, _ in runs]),
                                                            _median([c for _, c in runs]))
    if pdftotext:
        ours = "inspect, installed" if installed is not None else "inspect"
        budgets.append((f"{ours} manual.pdf / pdftotext{label}", _ratio(got[ours], got["pdftotext"]), 1.0, "<="))
        figures[f"checkout's inspect / pdftotext{label} (ratio, this machine's site hooks)"] = _ratio(
            got["inspect"], got["pdftotext"])
    if installed is not None and not label:
        venv_python = str(installed.parent / "python")
        venv = _rounds({"site": [venv_python, "-c", "pass"], "no site": [venv_python, "-S", "-c", "pass"]}, env)
        figures["site cost in a user's venv: -c pass minus -S (ms)"] = round(
            _median([w for w, _ in venv["site"]]) - _median([w for w, _ in venv["no site"]]), 1)
    if not label:
        figures["site cost here: python -c pass minus -S (ms)"] = round(
            _median([w for w, _ in got["python -c pass"]]) - _median([w for w, _ in got["python -S -c pass"]]), 1)
        figures["manual.pdf two children / one child (wall, CPU)"] = (
            _ratio(got["inspect, two children"], got["inspect, one child"]),
            _ratio(got["inspect, two children"], got["inspect, one child"], 1))


def _threshold(env: dict[str, str], tmp: Path, figures: dict[str, Any]) -> None:
    cmds = {}
    for n in SIZES:
        path = tmp / f"p{n}.pdf"
        path.write_bytes(_pages(n))
        for parts in (1, 2):
            cmds[f"{n}:{parts}"] = [sys.executable, "-c", DRIVER, str(parts), str(path)]
    got = _rounds(cmds, env)
    for n in SIZES:
        one, two = got[f"{n}:1"], got[f"{n}:2"]
        figures[f"{n} pages: one child ms, two / one (wall, CPU)"] = (
            _median([w for w, _ in one]), _ratio(two, one), _ratio(two, one, 1))


def _warm(env: dict[str, str], tmp: Path, figures: dict[str, Any], budgets: list[Any],
          installed: Path | None) -> None:
    index = tmp / "warm.db"
    warm_env = {k: v for k, v in env.items() if k != SWITCH} | {"MCP_NEXTCLOUD_INDEX": str(index)}
    cli = [sys.executable, "-m", "mcp_nextcloud", "service"]
    started = subprocess.run([*cli, "start"], cwd=ROOT, env=warm_env, capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    try:
        _side_by_side(warm_env, figures, budgets, ", warm", installed)
    finally:
        subprocess.run([*cli, "stop"], cwd=ROOT, env=warm_env, capture_output=True, timeout=60)


def test_pdf_split(tmp_path: Path) -> None:
    env = _env(tmp_path / "pyc")
    figures: dict[str, Any] = {"CPUs usable": oneshot._usable_cpus(), "rounds": ROUNDS,
                               "split from (bytes, pages per child)": (oneshot.MIN_SPLIT_BYTES,
                                                                       oneshot.MIN_PAGES_PER_PART)}
    budgets: list[Any] = []
    try:   # the goal's figure: the CLI as a user installs it (no editable-install hook, no foreign .pth)
        installed: Path | None = install(tmp_path / "installed")
    except InstallFailed as exc:
        print(f"\nnot timed as installed ({exc}); the checkout's CLI stands in")
        installed = None
    _side_by_side(env, figures, budgets, "", installed)
    _threshold(env, tmp_path, figures)
    _warm(env, tmp_path, figures, budgets, installed)
    figures["load average (1 min, shared machine)"] = round(os.getloadavg()[0], 2)
    report("pdf_split", figures, budgets)
