"""This tree installed the way a user installs it, for whole-process figures.

A benchmark of whole CLI calls must not time this machine instead of the
program: the development interpreter's site-packages runs start-up hooks a
user's install does not have (the editable-install finder of this checkout,
other tools' .pth files), and holds packages the product does not depend on
that its dependencies pick up when present (httpx loads its own command line
when rich is there, httpcore loads trio when trio is there: ~250 ms on a first
tool command). So the wheel of this tree is installed into a fresh virtual
environment with its dependencies resolved by pip, as pipx or `pip install` in
a venv would, and its own `mcp-nextcloud` console script is timed (~35 s with
pip's cache). Where pip cannot fetch the dependencies (offline), the venv
borrows this interpreter's site-packages through a plain .pth path line
instead, and `install_form()` says so: its figures include those extras.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What the wheel does not need: copying them would only slow the build down.
NOT_SHIPPED = shutil.ignore_patterns(".git", ".ci", "tests", "benchmarks", "build", "dist", "*.egg-info",
                                     "__pycache__", "*.db", "*.db-*", "node_modules", "test-artifacts",
                                     ".pytest_cache", ".hypothesis", ".mypy_cache", ".ruff_cache")


_FORM: dict[str, str] = {}


def install_form() -> dict[str, str]:
    """How the last install() got its dependencies (for the benchmark's figures)."""
    return dict(_FORM)


class InstallFailed(RuntimeError):
    """The tree could not be installed into a fresh venv (the reason is the message)."""


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise InstallFailed(f"{what} failed: {(done.stderr or done.stdout)[-1500:]}")


def install(into: Path) -> Path:
    """Build this tree's wheel and install it into a new venv under `into`; the path of its console script."""
    src, wheels, venv = into / "src", into / "wheels", into / "venv"
    # Built from a copy: an in-tree build would leave build/ and egg-info behind in the checkout.
    shutil.copytree(ROOT, src, ignore=NOT_SHIPPED)
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
          "--wheel-dir", str(wheels), str(src)], "building the wheel")
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], "creating the venv")
    python = venv / "bin" / "python"
    wheel = next(wheels.glob("*.whl"))
    try:
        _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", str(wheel)],
             "installing the wheel with its dependencies")
        _FORM["dependencies"] = "resolved by pip into the venv"
    except InstallFailed:
        _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
              "--no-index", str(wheel)], "installing the wheel")
        purelib = Path(subprocess.run([str(python), "-c", "import sysconfig;print(sysconfig.get_paths()['purelib'])"],
                                      capture_output=True, text=True, check=True).stdout.strip())
        base = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
        (purelib / "_benchmark_dependencies.pth").write_text("".join(f"{p}\n" for p in sorted(base)))
        _FORM["dependencies"] = "borrowed from the development interpreter (pip could not fetch them)"
    script = venv / "bin" / "mcp-nextcloud"
    if not script.exists():
        raise InstallFailed(f"the wheel installed no console script at {script}")
    return script
