"""The wheel's layout: every package of the repository is listed under the one installed top-level name."""
from __future__ import annotations

import fnmatch
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("reader", "indexer", "nextcloud", "server")


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def test_every_package_is_listed_under_mcp_nextcloud():
    """A new sub-package missing from pyproject.toml would silently be left out of the wheel."""
    on_disk = {".".join(("mcp_nextcloud", *p.parent.relative_to(ROOT).parts))
               for top in SHIPPED for p in (ROOT / top).rglob("__init__.py")}
    listed = set(_setuptools()["packages"])
    assert on_disk <= listed, f"add to [tool.setuptools] packages: {sorted(on_disk - listed)}"
    assert all(name == "mcp_nextcloud" or name.startswith("mcp_nextcloud.") for name in listed)


def test_only_the_emulator_and_the_sample_documents_ship_from_fixtures():
    setup = _setuptools()
    fixtures = {name for name in setup["packages"] if name.startswith("mcp_nextcloud.fixtures")}
    assert fixtures == {"mcp_nextcloud.fixtures.emulator", "mcp_nextcloud.fixtures.docs"}
    assert setup["package-dir"]["mcp_nextcloud.fixtures.docs"] == "fixtures/docs"


def test_every_data_file_of_the_shipped_packages_is_in_the_wheel():
    """A file the code reads at run time (tools.json, the apps' HTML) must be listed as package data:
    missing, the installed command fails where the checkout works (`mcp-nextcloud --help` did)."""
    patterns = _setuptools().get("package-data", {})
    missing = []
    for top in SHIPPED:
        for path in (ROOT / top).rglob("*"):
            if not path.is_file() or path.suffix in (".py", ".pyc") or "__pycache__" in path.parts:
                continue
            package = ".".join(("mcp_nextcloud", *path.parent.relative_to(ROOT).parts))
            if not any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns.get(package, [])):
                missing.append(str(path.relative_to(ROOT)))
    assert missing == [], f"add to [tool.setuptools.package-data]: {missing}"


def test_the_finder_serves_the_project_packages_from_one_root(tmp_path):
    """Importing mcp_nextcloud first (what the console script does) resolves our names to its tree.

    Only `mcp_nextcloud` is on the path (as installed: nothing else of ours is); the others are found
    through it, ahead of any other copy (an editable install of another checkout, a PyPI `reader`).
    """
    (tmp_path / "mcp_nextcloud").symlink_to(ROOT / "mcp_nextcloud")
    code = ("import mcp_nextcloud, server.cli, indexer.models, fixtures.emulator.seeds; "
            "print(mcp_nextcloud.ROOT, server.cli.__file__, indexer.models.__file__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), capture_output=True, text=True,
                         env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}, timeout=60, check=True).stdout
    root, cli, models = out.split()
    assert Path(root) == ROOT and Path(cli).is_relative_to(ROOT) and Path(models).is_relative_to(ROOT)
