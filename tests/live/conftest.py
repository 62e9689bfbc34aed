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
- `live_dav`: plain WebDAV (put, get, move, delete, props) through `live_http`.
- `live_tools` / `tools_factory`: the MCP server (main or mail) on the live
  account or another one, called as an MCP client does; `root=` syncs a
  folder into its own index first.
- `live_cli` / `cli_as(account)`: `python -m mcp_nextcloud ...` of this tree, every
  data file under the test's tmp_path.
- `throwaway_account`: a new user made with occ (optionally without its first
  login, or with a quota), deleted at the end.
- `member_http`: a plain client as the colleague.
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
    from mcp_nextcloud.nextcloud.config import Account

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
    from mcp_nextcloud.nextcloud.config import Account

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
    url: str = ""

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
        """A position in the access log; requests_since(mark) lists what was asked after it.

        nginx writes a request's line just after its answer, so the line of a request that just ended may
        land after a plain file size. The mark is therefore the end of a marker request's own line: every
        request answered before it was sent is logged before it."""
        import time

        start = self.access_log.stat().st_size
        if not self.url:
            return start
        token = f"live-mark-{uuid.uuid4().hex}"
        httpx.get(f"{self.url}/status.php", params={"mark": token}, timeout=60)
        deadline = time.monotonic() + 30
        while True:
            with self.access_log.open("rb") as fh:
                fh.seek(start)
                data = fh.read()
            at = data.find(token.encode())
            if at >= 0:
                end = data.find(b"\n", at)
                return start + (end + 1 if end >= 0 else len(data))
            assert time.monotonic() < deadline, "the marker request never reached the access log"
            time.sleep(0.05)

    def requests_since(self, mark: int, *, ours: bool = False, containing: str = "", user: str = "") -> list[str]:
        """The request lines ('METHOD /path HTTP/1.1') logged after `mark`. `ours`: only those our code sent
        (its User-Agent is mcp-nextcloud/..., a plain client's is python-httpx); `containing`: only those
        whose request line has this text (a test's unique folder: the server is shared); `user`: only those
        this account sent (a throw-away account's requests are the test's alone)."""
        end = self.log_mark()        # up to a fresh marker: the last request's line is written by then
        with self.access_log.open("rb") as fh:
            fh.seek(mark)
            lines = fh.read(end - mark).decode("utf-8", "replace").splitlines()
        return [line.split('"', 2)[1] for line in lines if line.count('"') >= 2 and "live-mark-" not in line
                and (not ours or '"mcp-nextcloud/' in line) and containing in line.split('"', 2)[1]
                and (not user or line.split(" ")[2] == user)]


@pytest.fixture
def server_admin():
    """occ and the access log of the server start.sh started (NC34_ROOT); skips for any other server."""
    if not live_configured():
        pytest.skip("live suite not configured")
    root = os.environ.get("NC34_ROOT")
    if not root or not Path(root, "logs").is_dir() or not OCC_SH.is_file():
        pytest.skip("needs the server of ../shared/nextcloud-34/server/start.sh (NC34_ROOT)")
    return ServerAdmin(Path(root), os.environ["NEXTCLOUD_URL"].rstrip("/"))


@pytest.fixture
def scratch_folder(live_account) -> Iterator[str]:
    """A folder of its own for the test (a unique name), deleted with its contents at the end."""
    from mcp_nextcloud.nextcloud.client import NextcloudClient

    folder = f"/mcp-nextcloud-live-{uuid.uuid4().hex[:8]}"
    with NextcloudClient(live_account) as client:
        client.webdav.mkcol(folder)
        try:
            yield folder
        finally:
            client.webdav.delete(folder)


# --- the tools and the CLI, on the live account --------------------------------------------------

TREE = Path(__file__).resolve().parents[2]


@dataclass
class LiveTools:
    """The MCP server (main, or mail with `mail=True`) on the live account, called as an MCP client does."""

    server: object
    ctx: object

    def call(self, name: str, args: dict | None = None):
        import anyio
        from mcp import Client

        async def go():
            async with Client(self.server, mode="legacy") as c:
                return await c.call_tool(name, args or {})
        return anyio.run(go)

    def ok(self, name: str, args: dict | None = None) -> dict:
        import json

        result = self.call(name, args)
        assert not result.is_error, result.content[0].text
        return json.loads(result.content[0].text)

    def error(self, name: str, args: dict | None = None) -> str:
        """The error text of a call that must fail (the assertion names the answer when it did not)."""
        from tests.helpers import failure_text

        return failure_text(self.call(name, args))

    def list_tools(self) -> list[str]:
        import anyio
        from mcp import Client

        async def go():
            async with Client(self.server, mode="legacy") as c:
                return [t.name for t in (await c.list_tools()).tools]
        return anyio.run(go)


def build_live_tools(account, tmp_path: Path, *, mail: bool = False, root: str | None = None) -> LiveTools:
    """A server context on `account` with its own index in tmp_path; `root` syncs that folder into it first."""
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext, Settings
    from mcp_nextcloud.server.mail_app import build_mail_server
    from mcp_nextcloud.server.telemetry import CallLog

    client = NextcloudClient(account)
    index = Index.open(tmp_path / "index.db")
    if root is not None:
        sync(client, index, root=root)
    ctx = ServerContext(account=account, index=index, telemetry=CallLog(tmp_path / "calls.sqlite"),
                        settings=Settings(freshness_interval_s=0), client_factory=lambda: client)
    return LiveTools(build_mail_server(ctx) if mail else build_server(ctx), ctx)


@pytest.fixture
def live_tools(live_account, tmp_path) -> Iterator[LiveTools]:
    """The main server's tools on the live account (an empty index: files tools answer from the server)."""
    tools = build_live_tools(live_account, tmp_path)
    try:
        yield tools
    finally:
        tools.ctx.close()  # type: ignore[attr-defined]


def cli_env(tmp_path: Path, account=None) -> dict[str, str]:
    """The environment for `python -m mcp_nextcloud ...`: the live account, every data file under tmp_path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))}
    if account is not None:
        env.update(NEXTCLOUD_URL=account.url, NEXTCLOUD_USER=account.user,
                   NEXTCLOUD_APP_PASSWORD=account.app_password)
        if account.public_url:
            env["NEXTCLOUD_PUBLIC_URL"] = account.public_url
    env.update(MCP_NEXTCLOUD_INDEX=str(tmp_path / "cli-index.db"),
               MCP_NEXTCLOUD_JOURNAL=str(tmp_path / "batches.sqlite"),
               MCP_NEXTCLOUD_ARTIFACTS=str(tmp_path / "artifacts"), MCP_NEXTCLOUD_CONFIG=str(tmp_path / "config.json"),
               MCP_NEXTCLOUD_SERVICE="0", XDG_DATA_HOME=str(tmp_path / "data"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_STATE_HOME=str(tmp_path / "state"))
    return env


def cli_runner(tmp_path: Path, account):
    """run(*args) -> CompletedProcess of `python -m mcp_nextcloud ARGS` of this tree, as `account`."""
    env = cli_env(tmp_path, account)

    def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        import sys

        return subprocess.run([sys.executable, "-m", "mcp_nextcloud", *args], cwd=str(TREE), env=env,
                              capture_output=True, text=True, timeout=timeout)
    return run


@pytest.fixture
def live_cli(live_account, tmp_path):
    """Run the CLI of this tree on the live account: live_cli("files", "read", ...) -> CompletedProcess."""
    return cli_runner(tmp_path, live_account)


@pytest.fixture
def cli_as(tmp_path):
    """cli_as(account) -> a runner like live_cli's, for another account (a throw-away one)."""
    return lambda account: cli_runner(tmp_path, account)


@pytest.fixture
def tools_factory(live_account, tmp_path):
    """build(root=..., mail=..., account=...) -> LiveTools; `root` is synced into the index first. Closed at the end."""
    made: list[LiveTools] = []

    def build(*, root: str | None = None, mail: bool = False, account=None) -> LiveTools:
        where = tmp_path / f"tools-{len(made)}"
        where.mkdir()
        tools = build_live_tools(account or live_account, where, mail=mail, root=root)
        made.append(tools)
        return tools
    yield build
    for tools in made:
        tools.ctx.close()  # type: ignore[attr-defined]


@pytest.fixture
def member_http(live_member):
    """A plain client as the colleague (to see what a share or an invitation gave her)."""
    with plain_client(live_member) as client:
        yield client


class LiveDav:
    """Plain WebDAV on the live account (through `live_http`): what the server holds, our code not in the path."""

    PROPS = ('<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop>'
             '<oc:fileid/><d:getetag/><d:getcontentlength/><d:resourcetype/></d:prop></d:propfind>')

    def __init__(self, http: httpx.Client, user: str) -> None:
        self.http, self.user = http, user

    def url(self, path: str) -> str:
        return f"/remote.php/dav/files/{self.user}{path}"

    def put(self, path: str, data: bytes) -> None:
        resp = self.http.put(self.url(path), content=data)
        assert resp.status_code in (201, 204), resp.status_code

    def get(self, path: str) -> bytes:
        resp = self.http.get(self.url(path))
        assert resp.status_code == 200, resp.status_code
        return resp.content

    def mkcol(self, path: str) -> None:
        assert self.http.request("MKCOL", self.url(path)).status_code == 201

    def move(self, src: str, dst: str) -> None:
        resp = self.http.request("MOVE", self.url(src), headers={"Destination": str(self.http.base_url).rstrip("/")
                                                                  + self.url(dst), "Overwrite": "F"})
        assert resp.status_code == 201, resp.status_code

    def delete(self, path: str) -> None:
        assert self.http.request("DELETE", self.url(path)).status_code == 204

    def props(self, path: str) -> dict[str, str]:
        """fileId, etag, size and type of one path by a PROPFIND Depth 0 ({} when it is not there)."""
        import xml.etree.ElementTree as ET

        resp = self.http.request("PROPFIND", self.url(path), content=self.PROPS, headers={"Depth": "0"})
        if resp.status_code == 404:
            return {}
        assert resp.status_code == 207, resp.status_code
        prop = ET.fromstring(resp.content).find("{DAV:}response/{DAV:}propstat/{DAV:}prop")
        assert prop is not None
        folder = prop.find("{DAV:}resourcetype/{DAV:}collection") is not None
        return {"fileId": prop.findtext("{http://owncloud.org/ns}fileid") or "",
                "etag": (prop.findtext("{DAV:}getetag") or "").strip('"'),
                "size": prop.findtext("{DAV:}getcontentlength") or "", "type": "folder" if folder else "file"}


@pytest.fixture
def live_dav(live_http, live_account) -> LiveDav:
    return LiveDav(live_http, live_account.user)


@pytest.fixture
def throwaway_account(server_admin, live_account):
    """make(first_login=True, quota=None) -> Account: a new user of its own (occ), deleted at the end.

    `first_login=False` leaves it as an app password alone leaves it: Nextcloud makes the calendar and the
    address book at the first (password) login, which an app-password request does not count as.
    `quota` (e.g. "20 KB") is set on this user only, never on the shared accounts.
    `make.password_of(name)` is its login password (for a test of a password login)."""
    import secrets

    from mcp_nextcloud.nextcloud.config import Account

    made: list[str] = []
    passwords: dict[str, str] = {}

    def make(*, first_login: bool = True, quota: str | None = None) -> Account:
        name = f"live-{uuid.uuid4().hex[:8]}"
        password = passwords[name] = secrets.token_urlsafe(18)
        server_admin.occ("user:add", "--password-from-env", name, env={"OC_PASS": password})
        made.append(name)
        if quota:
            server_admin.occ("user:setting", name, "files", "quota", quota)
        if first_login:
            with httpx.Client(base_url=live_account.url, auth=(name, password), timeout=60.0) as first:
                assert first.get("/ocs/v2.php/cloud/user", params={"format": "json"},
                                 headers={"OCS-APIRequest": "true"}).status_code == 200
        out = server_admin.occ("user:auth-tokens:add", "--password-from-env", name, env={"NC_PASS": password})
        token = [line.strip() for line in out.splitlines() if line.strip()][-1]
        return Account(url=live_account.url, user=name, app_password=token, public_url=live_account.public_url)
    make.password_of = passwords.__getitem__   # type: ignore[attr-defined]  # the login password (a login test)
    yield make
    for name in made:
        server_admin.occ("user:delete", name)
