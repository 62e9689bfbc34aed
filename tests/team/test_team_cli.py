"""The team server's start-up guards (issue 39): wrong flag combinations and addresses end with the cause, and a
key file others can read is refused."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.team.serving import ROOT


@pytest.mark.parametrize(("argv", "needle"), [
    (["--public-url", "https://mcp.example.org", "--nextcloud-url", "https://cloud.example.org"], "needs --http"),
    (["--http", "--public-url", "https://mcp.example.org"], "needs --nextcloud-url"),
    (["--http", "--nextcloud-url", "https://cloud.example.org"], "give --public-url too"),
    (["--http", "--public-url", "http://mcp.example.org", "--nextcloud-url", "https://c.example.org"], "https://"),
    (["--http", "--public-url", "https://mcp.example.org/mcp", "--nextcloud-url", "https://c.example.org"],
     "without a path"),
])
def test_a_wrong_team_server_start_says_why(tmp_path: Path, argv: list[str], needle: str) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))},
           "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "serve", "--state", str(tmp_path / "s"), *argv],
                          env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and needle in done.stderr, done.stderr
    assert not (tmp_path / "s").exists()


def test_a_key_file_others_can_read_is_refused(tmp_path: Path) -> None:
    from mcp_nextcloud.team.vault import KEY_FILE, Vault

    vault = Vault(tmp_path)
    sealed = vault.seal("app-password")
    assert b"app-password" not in sealed and Vault(tmp_path).open(sealed) == "app-password"
    assert (tmp_path / KEY_FILE).stat().st_mode & 0o777 == 0o600
    os.chmod(tmp_path / KEY_FILE, 0o644)
    with pytest.raises(PermissionError, match="chmod 600"):
        Vault(tmp_path)
