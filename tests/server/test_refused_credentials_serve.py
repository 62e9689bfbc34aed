"""A wrong app password through every layer: serve's tools, its background sync, then the CLI (issue 22, item 3).

The emulator counts failed logins like a real Nextcloud (fixtures/emulator/bruteforce.py), so a retry
storm anywhere - http.py's retries, a tool, the background sync, the first sync, the CLI - shows as more
than two 401s. The record of refused credentials is shared through the config folder, so the CLI, another
process, does not send them again either.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import serve_and_call

ROOT = Path(__file__).resolve().parents[2]
CALLS = [("files_grep", {"query": "budget"}), ("files_read", {"path": "/Documents/notes.odt"}),
         ("files_search", {"name": "notes"}), ("nextcloud_whoami", {}), ("files_grep", {"query": "quota"})]


def _env(emulator: Any, tmp: Path, password: str) -> dict[str, str]:
    acct = emulator.account("alice")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))}
    env.update({"NEXTCLOUD_URL": acct["url"], "NEXTCLOUD_USER": acct["user"], "NEXTCLOUD_APP_PASSWORD": password,
                "MCP_NEXTCLOUD_INDEX": str(tmp / "index.db"), "MCP_NEXTCLOUD_TELEMETRY": str(tmp / "calls.sqlite"),
                "XDG_CONFIG_HOME": str(tmp / "config"), "XDG_DATA_HOME": str(tmp / "data"),
                "PYTHONPATH": str(ROOT)})
    return env


def _serve(env: dict[str, str], stay_s: float) -> list[Any]:
    return serve_and_call(env, CALLS, cwd=str(ROOT), interval=1, stay_s=stay_s)


def _cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_nextcloud", *argv], env=env, cwd=str(ROOT), capture_output=True,
                          text=True, timeout=120)


def test_five_calls_serve_and_the_cli_cost_at_most_two_failed_logins(emulator, tmp_path):
    wrong = _env(emulator, tmp_path, "wrong-app-password-1234")
    results = _serve(wrong, stay_s=5.0)
    whoami = _cli(wrong, "whoami", "--json")
    sync = _cli(wrong, "index", "sync", "--wait", "60")
    failed = [s for _, _, s in emulator.requests].count(401)
    assert failed <= 2, emulator.requests
    assert emulator.bruteforce.attempts("127.0.0.1") == failed
    texts = [r.content[0].text for r in results]
    assert results[1].is_error and "refused the credentials" in texts[1] and "rate-limiting" not in texts[1]
    assert "refused the credentials" in texts[4] and "first sync" not in texts[4]
    assert whoami.returncode != 0 and "refused the credentials" in whoami.stdout + whoami.stderr
    assert sync.returncode != 0 and "refused the credentials" in sync.stdout + sync.stderr
    assert "wrong-app-password" not in "".join(texts) + whoami.stderr + sync.stderr
    record = (tmp_path / "config" / "mcp-nextcloud").glob("refused-credentials")
    assert all("wrong-app-password" not in p.read_text() for p in record)

    right = _env(emulator, tmp_path, emulator.account("alice")["app_password"])
    done = _cli(right, "whoami", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)
    assert [s for _, _, s in emulator.requests].count(429) == 0
