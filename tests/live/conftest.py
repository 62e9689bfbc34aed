"""The live suite: the same scenarios against a real Nextcloud.

Runs only when NEXTCLOUD_URL, NEXTCLOUD_USER and NEXTCLOUD_APP_PASSWORD are
set; every test here is skipped otherwise (a user's fresh clone has no
server). `.ci/run` starts the real Nextcloud 34 of ../shared/nextcloud-34/server
and sets them, so CI runs this suite on it.

What a test here may rely on, beyond the account:
- `live_http`: a plain httpx client with the account's Basic auth. Every
  effect a tool claims is read back through it, never from the tool's answer.
- `live_member`: the colleague account (NEXTCLOUD_LIVE_MEMBER), to share with,
  assign to and invite.
- `server_admin`: the server's occ and access log, where start.sh's NC34_ROOT
  says where they are (tests that need them skip elsewhere).
- `scratch_folder`: a uniquely named folder, deleted at the end.
"""
from __future__ import annotations

import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import httpx
import pytest

LIVE_VARS = ("NEXTCLOUD_URL", "NEXTCLOUD_USER", "NEXTCLOUD_APP_PASSWORD")


def _find_occ_sh() -> Path:
    """../shared/nextcloud-34/server/occ.sh beside the clone, or beside a folder above it (a git worktree
    under the clone's parent has the shared folder higher up)."""
    here = Path(__file__).resolve().parents[2]
    for folder in here.parents:
        candidate = folder / "shared" / "nextcloud-34" / "server" / "occ.sh"
        if candidate.is_file():
            return candidate
    return here.parent / "shared" / "nextcloud-34" / "server" / "occ.sh"


OCC_SH = _find_occ_sh()


def live_configured() -> bool:
    return all(os.environ.get(v) for v in LIVE_VARS)


def pytest_collection_modifyitems(config, items):
    if live_configured():
        return
    skip = pytest.mark.skip(reason="live suite: set NEXTCLOUD_URL, NEXTCLOUD_USER and NEXTCLOUD_APP_PASSWORD to run it")
    for item in items:
        if "tests/live/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(skip)


@pytest.fixture
def live_account():
    """The real server's account from the environment (never printed)."""
    if not live_configured():
        pytest.skip("live suite not configured")
    from nextcloud.config import Account

    return Account(
        url=os.environ["NEXTCLOUD_URL"],
        user=os.environ["NEXTCLOUD_USER"],
        app_password=os.environ["NEXTCLOUD_APP_PASSWORD"],
        public_url=os.environ.get("NEXTCLOUD_PUBLIC_URL"),
    )


@pytest.fixture
def live_member():
    """The colleague's account (NEXTCLOUD_LIVE_MEMBER and its app password); skips where it is not set."""
    if not live_configured():
        pytest.skip("live suite not configured")
    user = os.environ.get("NEXTCLOUD_LIVE_MEMBER")
    password = os.environ.get("NEXTCLOUD_LIVE_MEMBER_APP_PASSWORD")
    if not (user and password):
        pytest.skip("set NEXTCLOUD_LIVE_MEMBER and NEXTCLOUD_LIVE_MEMBER_APP_PASSWORD (start.sh's env.sh does)")
    from nextcloud.config import Account

    return Account(url=os.environ["NEXTCLOUD_URL"], user=user, app_password=password,
                   public_url=os.environ.get("NEXTCLOUD_PUBLIC_URL"))


def plain_client(account) -> httpx.Client:
    """A plain httpx client for reading effects back: our code is not in its path."""
    return httpx.Client(base_url=account.url, auth=(account.user, account.app_password), timeout=60.0,
                        headers={"OCS-APIRequest": "true", "Accept": "application/json"})


@pytest.fixture
def live_http(live_account):
    with plain_client(live_account) as client:
        yield client


@dataclass(frozen=True)
class ServerAdmin:
    """The live server's own tools: occ and the nginx access log (start.sh's layout under NC34_ROOT)."""

    root: Path

    def occ(self, *args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(["bash", str(OCC_SH), str(self.root), *args], capture_output=True, text=True,
                              timeout=300, env={**os.environ, **(env or {})})
        assert done.returncode == 0, f"occ {args[0]} failed: {done.stderr[-500:]}"
        return done.stdout

    def reset_bruteforce(self) -> None:
        """Forget the failed logins from 127.0.0.1 (a test that sends a wrong password calls it after)."""
        self.occ("security:bruteforce:reset", "127.0.0.1")

    @property
    def access_log(self) -> Path:
        return self.root / "logs" / "nginx-access.log"

    def log_mark(self) -> int:
        """A position in the access log; requests_since(mark) lists what was asked after it."""
        return self.access_log.stat().st_size

    def requests_since(self, mark: int) -> list[str]:
        """The request lines ('METHOD /path HTTP/1.1') logged after `mark`."""
        with self.access_log.open("rb") as fh:
            fh.seek(mark)
            lines = fh.read().decode("utf-8", "replace").splitlines()
        return [line.split('"', 2)[1] for line in lines if line.count('"') >= 2]


@pytest.fixture
def server_admin():
    """occ and the access log of the server start.sh started (NC34_ROOT); skips for any other server."""
    if not live_configured():
        pytest.skip("live suite not configured")
    root = os.environ.get("NC34_ROOT")
    if not root or not Path(root, "logs").is_dir() or not OCC_SH.is_file():
        pytest.skip("needs the server of ../shared/nextcloud-34/server/start.sh (NC34_ROOT)")
    return ServerAdmin(Path(root))


@pytest.fixture
def scratch_folder(live_account) -> Iterator[str]:
    """A folder of its own for the test (a unique name), deleted with its contents at the end."""
    from nextcloud.client import NextcloudClient

    folder = f"/mcp-nextcloud-live-{uuid.uuid4().hex[:8]}"
    with NextcloudClient(live_account) as client:
        client.webdav.mkcol(folder)
        try:
            yield folder
        finally:
            client.webdav.delete(folder)
