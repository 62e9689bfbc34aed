"""The nginx snippet of docs/team-server.md, as written, in front of the team server (issue 39): TLS ends at nginx
(a certificate made for 127.0.0.1), the SDK's OAuth client signs in and calls files_grep through it."""
from __future__ import annotations

import re
import shutil
import ssl
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from mcp_nextcloud.fixtures.emulator.server import Emulator
from tests.team.serving import ROOT, _free_port, diagnosis, running_team
from tests.team.test_team_oauth import _grep_until, _paths, connected


def _snippet() -> str:
    text = (ROOT / "docs" / "team-server.md").read_text(encoding="utf-8")
    found = re.search(r"```nginx\n(.*?)```", text, re.S)
    assert found, "docs/team-server.md has no nginx block"
    return found.group(1)


def test_behind_the_documented_nginx(tmp_path: Path) -> None:
    if not shutil.which("nginx") or not shutil.which("openssl"):
        pytest.skip("needs nginx and openssl")
    folder = Path(tempfile.mkdtemp(prefix="ngx", dir="/tmp"))
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    tls_port, app_port = _free_port(), _free_port()
    server = (_snippet().replace("listen 443", f"listen 127.0.0.1:{tls_port}")
              .replace("server_name mcp.example.org", "server_name 127.0.0.1")
              .replace("/etc/letsencrypt/live/mcp.example.org/fullchain.pem", str(cert))
              .replace("/etc/letsencrypt/live/mcp.example.org/privkey.pem", str(key))
              .replace("127.0.0.1:8765", f"127.0.0.1:{app_port}"))
    temp = "".join(f"{kind}_temp_path {folder}/{kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi",
                                                                       "scgi"))
    (folder / "nginx.conf").write_text(f"pid {folder}/nginx.pid;\nerror_log {folder}/error.log;\nevents {{}}\n"
                                       f"http {{\naccess_log {folder}/access.log;\n{temp}{server}}}\n")
    public = f"https://127.0.0.1:{tls_port}"
    with Emulator() as emulator, running_team(emulator.url, public_url=public, port=app_port) as team:
        started = subprocess.run(["nginx", "-p", str(folder), "-c", str(folder / "nginx.conf")], capture_output=True,
                                 text=True)
        assert started.returncode == 0, started.stderr
        try:
            context = ssl.create_default_context(cafile=str(cert))
            deadline = time.monotonic() + 10
            while True:
                try:
                    meta = httpx.get(public + "/.well-known/oauth-protected-resource/mcp", verify=context, timeout=2)
                    break
                except httpx.HTTPError:
                    assert time.monotonic() < deadline
                    time.sleep(0.1)
            assert meta.json()["resource"] == public + "/mcp"
            people = {**team, "verify": context,
                      "approve": lambda login_url, user: emulator.approve_login(user, login_url)}

            async def run() -> dict[str, Any]:
                async with connected(people, "alice") as client:
                    return await _grep_until(client, "supplier")

            out = anyio.run(run)
            assert "/Projects/Alpha/notes.md" in _paths(out), diagnosis(team, out)
            assert " 200 " in (folder / "access.log").read_text()     # the calls went through nginx
        finally:
            subprocess.run(["nginx", "-p", str(folder), "-c", str(folder / "nginx.conf"), "-s", "stop"],
                           capture_output=True)
            shutil.rmtree(folder, ignore_errors=True)
