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
