"""A hanging WebDAV SEARCH does not stall files_grep from the command line either (issue 22, item 7).

The CLI's tool commands build their context with a client factory (the one client of the command, with
its --timeout deadline and retries). The best-effort calls on grep's path used that client as is, so a
SEARCH that never answered held the grep for the whole 60 s deadline. They now use its bounded twin
(one attempt, `best_effort_s` per timeout, a pool of its own).
"""
from __future__ import annotations

import json
import time

from mcp_nextcloud.cli import main

HANG_S = 300.0


def test_cli_grep_answers_within_the_best_effort_budget_when_search_hangs(world, tmp_path, monkeypatch, capsys):
    acct = world.emulator.account("alice")
    for key, value in {"NEXTCLOUD_URL": acct["url"], "NEXTCLOUD_USER": acct["user"],
                       "NEXTCLOUD_APP_PASSWORD": acct["app_password"], "MCP_NEXTCLOUD_INDEX": str(world.index_path),
                       "MCP_NEXTCLOUD_BEST_EFFORT_S": "1", "MCP_NEXTCLOUD_FRESHNESS_S": "0",
                       "MCP_NEXTCLOUD_ARTIFACTS": str(tmp_path / "artifacts"),
                       "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")}.items():
        monkeypatch.setenv(key, value)
    world.emulator.faults.clear()
    hang = world.emulator.faults.add(method="SEARCH", delay=HANG_S, times=5)
    try:
        capsys.readouterr()
        started = time.monotonic()
        code = main(["files", "grep", "quota", "--json"])
        took = time.monotonic() - started
        out = json.loads(capsys.readouterr().out)
    finally:
        world.emulator.faults.clear()
    assert code == 0 and out["items"], out
    assert any("did not answer within 1 s" in w for w in out["warnings"]), out["warnings"]
    assert hang.times == 4, "one attempt, no retry on the hot path"
    # An outcome, not a benchmark: the budget is 1 s, the fault 300 s, the command's deadline 60 s (which the
    # grep used to wait out whole); the bound leaves room for a loaded CI machine.
    assert took < 20.0, f"the grep waited on the hung SEARCH ({took:.1f} s)"
