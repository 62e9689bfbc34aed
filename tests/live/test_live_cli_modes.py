"""The CLI against a real Nextcloud 34: dry runs write nothing and print nothing on stderr; files are private.

Issue 22, item 9. The server's own access log is the witness that nothing was written (no PUT, POST,
DELETE, MKCOL, MOVE, COPY, PROPPATCH or LOCK after the mark, under a user made for the test so the
lines are its own); the state is read back with a plain client.
"""
from __future__ import annotations

import json
import os
import secrets
import stat
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
WRITES = ("PUT", "POST", "DELETE", "MKCOL", "MOVE", "COPY", "PROPPATCH", "LOCK", "PATCH")


def _env(account: Any, tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))}
    env.update({"NEXTCLOUD_URL": account.url, "NEXTCLOUD_USER": account.user,
                "NEXTCLOUD_APP_PASSWORD": account.app_password, "XDG_DATA_HOME": str(tmp / "data"),
                "XDG_CACHE_HOME": str(tmp / "cache"), "XDG_CONFIG_HOME": str(tmp / "config"),
                "XDG_STATE_HOME": str(tmp / "state"), "PYTHONPATH": str(ROOT)})
    if account.public_url:
        env["NEXTCLOUD_PUBLIC_URL"] = account.public_url
    return env


def _cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_nextcloud", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, preexec_fn=lambda: os.umask(0o022))


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def own_user(live_account, server_admin) -> Iterator[Any]:
    """A user of this test alone (occ user:add), so every access-log line under its name is this test's own.

    The server is shared and everyone else is alice: only a name nobody else uses attributes requests.
    """
    from mcp_nextcloud.nextcloud.config import Account

    name = f"dryrun-{uuid.uuid4().hex[:10]}"
    password = secrets.token_urlsafe(24)
    server_admin.occ("user:add", "--password-from-env", name, env={"OC_PASS": password})
    try:
        yield Account(url=live_account.url, user=name, app_password=password, public_url=live_account.public_url)
    finally:
        server_admin.occ("user:delete", name)


def _lines_of(server_admin: Any, mark: int, user: str) -> list[str]:
    """The request lines ('METHOD /path HTTP/1.1') logged after `mark` for `user` (the log's third field)."""
    with server_admin.access_log.open("rb") as fh:
        fh.seek(mark)
        lines = fh.read().decode("utf-8", "replace").splitlines()
    return [line.split('"', 2)[1] for line in lines
            if line.count('"') >= 2 and line.split(" ", 3)[2:3] == [user]]


def test_live_dry_runs_write_nothing_and_print_nothing_on_stderr(own_user, live_account, server_admin, tmp_path):
    from tests.live.conftest import plain_client

    env = _env(own_user, tmp_path)
    runs = [
        ("files", "write", "--path", "/dry-run.md", "--content", "never written", "--dry-run", "--json"),
        ("files", "share", "--path", "/", "--share-with", live_account.user, "--dry-run", "--json"),
        ("meet", "create-room", "--name", f"dry-{own_user.user}", "--dry-run", "--json"),
    ]
    mark = server_admin.log_mark()
    for argv in runs:
        done = _cli(env, *argv)
        assert done.returncode == 0, (argv, done.stdout, done.stderr[-2000:])
        plan = json.loads(done.stdout)
        assert plan["dryRun"] is True and plan["writes"] == 0
        assert done.stderr == "", (argv, done.stderr[-2000:])
    asked = _lines_of(server_admin, mark, own_user.user)
    assert asked, "the dry runs resolved nothing against the server"
    assert [line for line in asked if line.split(" ", 1)[0] in WRITES] == []
    with plain_client(own_user) as http:
        dav = f"/remote.php/dav/files/{own_user.user}/dry-run.md"
        assert http.request("PROPFIND", dav, headers={"Depth": "0"}).status_code == 404
        # A new user's first room list may answer 500 while Talk makes its own rooms (changelog, note to
        # self): then the access log above is the witness.
        rooms = http.get("/ocs/v2.php/apps/spreed/api/v4/room", params={"format": "json"})
        if rooms.status_code == 200:
            assert f"dry-{own_user.user}" not in [r.get("displayName") for r in rooms.json()["ocs"]["data"]]
        shares = http.get("/ocs/v2.php/apps/files_sharing/api/v1/shares", params={"format": "json"})
        assert shares.status_code == 200 and shares.json()["ocs"]["data"] == []


def test_live_cli_files_are_private(live_account, live_http, scratch_folder, tmp_path):
    env = _env(live_account, tmp_path)
    text = "Une ligne de texte pour l'artefact.\n" * 800          # > 16 kB: the CLI writes it to an artifact
    path = f"{scratch_folder}/long.txt"
    put = live_http.put(f"/remote.php/dav/files/{live_account.user}{path}", content=text.encode("utf-8"))
    assert put.status_code in (201, 204)
    done = _cli(env, "files", "read", "--path", path, "--limit", "40000", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    (artifact,) = json.loads(done.stdout)["artifacts"]
    art = Path(artifact["path"])
    assert art.read_text(encoding="utf-8").startswith("Une ligne de texte")
    assert _mode(art) == 0o600 and _mode(art.parent) == 0o700
    data = tmp_path / "data" / "mcp-nextcloud"
    if not data.exists():
        pytest.skip("this command made no data folder")
    assert _mode(data) == 0o700
    for f in data.iterdir():
        if f.is_file():
            assert _mode(f) == 0o600, f
