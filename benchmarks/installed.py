"""This tree installed the way a user installs it, for whole-process figures.

A benchmark of whole CLI calls must not time this machine instead of the
program: the development interpreter's site-packages runs start-up hooks a
user's install does not have (the editable-install finder of this checkout,
other tools' .pth files), ~25 ms on the shared benchmark machine against
~3 ms for site itself. So the wheel of this tree is installed into a fresh
virtual environment, as pipx or `pip install` in a venv would, and its own
`mcp-nextcloud` console script is timed. The dependencies are not downloaded
again: a plain path line in a .pth file lets the venv import them from this
interpreter's site-packages (a listed folder is added to sys.path; its own
.pth hooks are not run, as they would not be in a user's venv).
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
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", "--no-index",
          str(wheel)], "installing the wheel")
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig;print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    base = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (purelib / "_benchmark_dependencies.pth").write_text("".join(f"{p}\n" for p in sorted(base)))
    script = venv / "bin" / "mcp-nextcloud"
    if not script.exists():
        raise InstallFailed(f"the wheel installed no console script at {script}")
    return script
