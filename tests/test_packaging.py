"""The wheel's layout: every package of the repository is listed under the one installed top-level name."""
from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mcp_nextcloud"
# Every top-level package but fixtures/ (its own rule below): a new one is shipped whole.
SHIPPED = tuple(sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py") if p.parent.name != "fixtures"))


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def test_every_package_is_listed_under_mcp_nextcloud():
    """A new sub-package missing from pyproject.toml would silently be left out of the wheel."""
    on_disk = {".".join(("mcp_nextcloud", *p.parent.relative_to(PACKAGE).parts))
               for top in SHIPPED for p in (PACKAGE / top).rglob("__init__.py")}
    listed = set(_setuptools()["packages"])
    assert on_disk <= listed, f"add to [tool.setuptools] packages: {sorted(on_disk - listed)}"
    assert all(name == "mcp_nextcloud" or name.startswith("mcp_nextcloud.") for name in listed)


def test_only_the_emulator_and_the_sample_documents_ship_from_fixtures():
    setup = _setuptools()
    fixtures = {name for name in setup["packages"] if name.startswith("mcp_nextcloud.fixtures")}
    assert fixtures == {"mcp_nextcloud.fixtures.emulator", "mcp_nextcloud.fixtures.docs"}
    assert "package-dir" not in setup   # the tree is the installed layout: nothing is mapped


def test_every_data_file_of_the_shipped_packages_is_in_the_wheel():
    """A file the code reads at run time (tools.json, the apps' HTML) must be listed as package data:
    missing, the installed command fails where the checkout works (`mcp-nextcloud --help` did)."""
    patterns = _setuptools().get("package-data", {})
    missing = []
    for top in SHIPPED:
        for path in (PACKAGE / top).rglob("*"):
            if not path.is_file() or path.suffix in (".py", ".pyc") or "__pycache__" in path.parts:
                continue
            package = ".".join(("mcp_nextcloud", *path.parent.relative_to(PACKAGE).parts))
            if not any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns.get(package, [])):
                missing.append(str(path.relative_to(ROOT)))
    assert missing == [], f"add to [tool.setuptools.package-data]: {missing}"


def test_our_code_adds_no_other_top_level_name_and_shadows_nothing(tmp_path):
    """Another distribution's `server` and `reader` stay importable beside us, in the same process.

    Our whole stack is loaded (the CLI's parser and every command module, the MCP tools, the emulator),
    then the stand-ins are imported: they must be theirs, and every module of ours must be under
    `mcp_nextcloud.` (an earlier import finder answered for `server`, `reader`... in any process that
    imported us)."""
    for name in ("server", "reader", "fixtures"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"WHO = 'theirs: {name}'\n")
    code = ("import sys; before = set(sys.modules); "
            "import mcp_nextcloud.cli as cli, mcp_nextcloud.server.app, mcp_nextcloud.fixtures.emulator.server; "
            "cli.build_parser(); "
            "ours = {m.split('.')[0] for m in set(sys.modules) - before if m.split('.')[0] in "
            "('server', 'reader', 'indexer', 'nextcloud', 'fixtures')}; "
            "import server, reader, fixtures; "
            "print(sorted(ours), server.WHO, reader.WHO, fixtures.WHO, sep='|')")
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), capture_output=True, text=True,
                         env=env, timeout=120, check=True).stdout.strip()
    assert out == "[]|theirs: server|theirs: reader|theirs: fixtures", out


def test_the_command_is_a_plain_script_that_imports_only_the_entry_point(tmp_path):
    """pip's generated entry-point wrapper imports `re` (~10 ms of every call); ours imports sys and us.

    Run as the command, it indexes real documents: the extraction pool's forkserver imports the main
    script again, so the script must not run the CLI when imported (it once did: every file failed)."""
    import ast
    import json
    import shutil

    script = ROOT / "scripts" / "mcp-nextcloud"
    assert script.read_text(encoding="utf-8").startswith("#!python\n")   # rewritten to the venv's python on install
    tree = ast.parse(script.read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names} | {node.module for node in ast.walk(tree)
                                            if isinstance(node, ast.ImportFrom) and node.module}
    assert imported == {"sys", "mcp_nextcloud", "main"}
    assert _setuptools()["script-files"] == ["scripts/mcp-nextcloud"]
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("manual.pdf", "budget.xlsx", "notes.txt"):
        shutil.copy(PACKAGE / "fixtures" / "docs" / name, folder / name)
    done = subprocess.run([sys.executable, str(script), "index", "add", str(folder), "--index",
                           str(tmp_path / "i.db"), "--json"], capture_output=True, text=True, timeout=300,
                          cwd=str(tmp_path), env={**os.environ, "MCP_NEXTCLOUD_SERVICE": "0",
                                                  "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)   # one answer: the CLI ran once
    assert (report["extracted"], report["failed"]) == (3, 0), report
