"""mcp_nextcloud.environment: a call's variables hold for its own thread only, and reach what it starts."""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from mcp_nextcloud import environment


def test_a_calls_variables_hold_in_its_thread_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXTCLOUD_USER", "process-user")
    seen: list[str | None] = []
    inside = threading.Event()
    done = threading.Event()

    def other_thread() -> None:
        inside.wait(5)
        seen.append(environment.environ().get("NEXTCLOUD_USER"))
        done.set()

    threading.Thread(target=other_thread).start()
    with environment.using({"NEXTCLOUD_USER": "caller", "HOME": "/home/caller"}):
        assert environment.environ()["NEXTCLOUD_USER"] == "caller"
        inside.set()
        done.wait(5)
    assert seen == ["process-user"]
    assert environment.environ()["NEXTCLOUD_USER"] == "process-user"


def test_folders_follow_the_callers_home_and_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with environment.using({"HOME": str(tmp_path)}):
        assert environment.user_dir("data") == tmp_path / ".local/share/mcp-nextcloud"
        assert environment.user_dir("config") == tmp_path / ".config/mcp-nextcloud"
        assert environment.expand("~/x.db") == tmp_path / "x.db"
    with environment.using({"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "d")}):
        assert environment.user_dir("data") == tmp_path / "d/mcp-nextcloud"


def test_a_child_gets_the_callers_credentials_never_the_processs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXTCLOUD_APP_PASSWORD", "the-service-starters")
    monkeypatch.setenv("NEXTCLOUD_PUBLIC_URL", "https://first.example")
    with environment.using({"NEXTCLOUD_USER": "caller", "NEXTCLOUD_APP_PASSWORD": "callers"}):
        child = environment.for_child()
    assert child["NEXTCLOUD_APP_PASSWORD"] == "callers" and child["NEXTCLOUD_USER"] == "caller"
    assert "NEXTCLOUD_PUBLIC_URL" not in child             # the caller did not set it
    assert child["PATH"] == os.environ["PATH"]             # the process's own variables stay
    assert environment.for_child()["NEXTCLOUD_APP_PASSWORD"] == "the-service-starters"


def test_the_client_computes_the_index_the_indexer_opens(tmp_path: Path) -> None:
    """service/client.py keys the service by the index file without importing the indexer: the same file."""
    from mcp_nextcloud.indexer.store.location import index_path
    from mcp_nextcloud.service.client import index_named

    for env in ({"HOME": str(tmp_path)}, {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "d")}):
        with environment.using(env):
            expected = os.path.realpath(index_path(None))
        assert index_named(["grep", "x"], env, cwd="/") == expected
    env = {"HOME": str(tmp_path), "MCP_NEXTCLOUD_INDEX": "~/i.db"}
    assert index_named(["grep", "x"], env, cwd="/") == str(tmp_path / "i.db")
    assert index_named(["grep", "--index", "rel.db", "x"], env, cwd=str(tmp_path)) == str(tmp_path / "rel.db")


# What reads the process's environment or home directly: only environment.py may (issue 51), so a caller's
# variables (a request's HOME, XDG folders, MCP_NEXTCLOUD_*) hold wherever its work runs.
_PROCESS_READS = {("os", "environ"), ("os", "getenv"), ("os", "putenv"), ("os", "unsetenv"), ("Path", "home"),
                  ("path", "expanduser")}


def _process_reads(tree) -> list[tuple[int, str]]:
    import ast

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            owner = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
            if (owner, node.attr) in _PROCESS_READS or node.attr == "expanduser":
                found.append((node.lineno, f"{owner}.{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and node.module in ("os", "os.path"):
            found += [(node.lineno, f"from {node.module} import {a.name}") for a in node.names
                      if a.name in ("environ", "getenv", "putenv", "expanduser")]
    return found


def test_only_environment_py_reads_the_process_environment_or_home() -> None:
    import ast

    root = Path(environment.__file__).parent
    offenders = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel == "environment.py" or rel.startswith("fixtures/"):
            continue
        offenders += [f"{rel}:{line}: {what}" for line, what in _process_reads(ast.parse(path.read_text()))]
    assert offenders == [], "read these through mcp_nextcloud.environment:\n" + "\n".join(offenders)


def test_the_reads_check_finds_each_kind_of_read() -> None:
    import ast

    code = ("import os\nfrom pathlib import Path\nfrom os import environ\na = os.environ['X']\nb = os.getenv('Y')\n"
            "c = Path.home()\nd = os.path.expanduser('~')\ne = Path('~/x').expanduser()\n")
    assert [line for line, _ in sorted(_process_reads(ast.parse(code)))] == [3, 4, 5, 6, 7, 8]


def test_the_desktop_clients_config_is_looked_for_where_the_caller_says(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    """Issue 51: inside the index service a caller's XDG_CONFIG_HOME and MCP_NEXTCLOUD_DESKTOP_CONFIG were
    ignored (desktop_config read the service process's own variables and home)."""
    from mcp_nextcloud.indexer.local.desktop_config import ENV_VAR, config_paths

    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "process-config"))
    named = tmp_path / "theirs.cfg"
    with environment.using({ENV_VAR: str(named), "HOME": str(tmp_path / "caller")}):
        assert config_paths() == [named]
    with environment.using({"XDG_CONFIG_HOME": str(tmp_path / "caller-config"), "HOME": str(tmp_path / "caller")}):
        paths = config_paths()
    assert paths[0] == tmp_path / "caller-config" / "Nextcloud" / "nextcloud.cfg"
    assert all(str(p).startswith(str(tmp_path / "caller")) for p in paths), paths
