"""`serve` and `report` facing a damaged index, a damaged call log, bad or busy ports, and the HTTP transport's
limits and auth scheme (issue 10, items 5, 7, 9, 11). One clear line each, never a traceback."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.server.test_server_transports import ROOT, _env, _free_port
from tests.helpers import stop


def _serve(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcp_nextcloud", "serve", "--interval", "0", *args], env=env,
                          cwd=str(ROOT), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _damage(kind: str, path: Path) -> None:
    if kind == "directory":
        path.mkdir()
    elif kind == "text":
        path.write_text("these are my notes, not a database\n")
    elif kind == "garbage":
        path.write_bytes(b"SQLite format 3\x00" + os.urandom(3000))
    else:  # truncated: a real index cut to a third
        from mcp_nextcloud.indexer.index import Index

        Index.open(path).close()
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 3])


@pytest.mark.parametrize("kind", ["truncated", "garbage", "text", "directory"])
def test_serve_with_a_damaged_index_says_so_in_one_line(world, tmp_path, kind):
    """serve still completes the handshake (a host shows more than "Connection closed"): its instructions and
    its stderr say what is wrong with the index and how to rebuild it, in one line, and the file tools answer it."""
    index = tmp_path / "damaged.db"
    _damage(kind, index)
    env = {**_env(world, tmp_path), "MCP_NEXTCLOUD_INDEX": str(index)}
    proc = subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", "serve", "--interval", "0"], env=env, cwd=str(ROOT),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    grep = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "files_grep", "arguments": {"query": "x"}}}
    messages = [init, {"jsonrpc": "2.0", "method": "notifications/initialized"}, grep]
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    proc.stdin.flush()
    answers = {}
    for _ in range(2):   # stdin stays open until both answers are in: its end ends the session
        answer = json.loads(proc.stdout.readline())
        answers[answer["id"]] = answer
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and str(index) in lines[0] and "index sync" in lines[0], err
    assert str(index) in answers[1]["result"]["instructions"] and "index sync" in answers[1]["result"]["instructions"]
    assert answers[2]["result"]["isError"] and "index sync" in answers[2]["result"]["content"][0]["text"]


@pytest.mark.parametrize("kind", ["garbage", "text"])
def test_damaged_call_log_is_set_aside_not_fatal(world, tmp_path, kind):
    log = tmp_path / "calls.sqlite"
    _damage(kind, log)
    env = _env(world, tmp_path)
    report = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "report"], env=env, cwd=str(ROOT),
                            capture_output=True, text=True, timeout=60)
    assert "Traceback" not in report.stderr and "set aside" in report.stderr, report.stderr
    _damage(kind, log)
    proc = subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", "serve", "--interval", "0"], env=env, cwd=str(ROOT),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    out, err = proc.communicate(json.dumps(init) + "\n", timeout=60)
    assert "Traceback" not in err and "set aside" in err, err
    assert json.loads(out.splitlines()[0])["result"]["serverInfo"]["name"] == "mcp-nextcloud"
    assert any(p.name.startswith("calls.sqlite.damaged-") for p in tmp_path.iterdir())


@pytest.mark.parametrize("port", ["99999", "0", "-1", "http"])
def test_impossible_port_is_a_one_line_error(world, tmp_path, port):
    proc = _serve(_env(world, tmp_path), "--http", "--port", port)
    assert proc.returncode == 2 and "--port" in proc.stderr and "Traceback" not in proc.stderr
    assert "serving" not in proc.stderr


def test_busy_port_is_reported_before_serving_is_announced(world, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        proc = _serve(_env(world, tmp_path), "--http", "--port", str(port))
    assert proc.returncode == 2, proc.stderr
    assert "in use" in proc.stderr and f"--port {port}" in proc.stderr
    assert "serving" not in proc.stderr and "Traceback" not in proc.stderr
    assert len([line for line in proc.stderr.splitlines() if line.strip()]) == 1, proc.stderr


@pytest.fixture
def http(world, tmp_path):
    port = _free_port()
    config = tmp_path / "config"
    config.mkdir()
    token_file = config / "http-token"
    token_file.write_text("t" * 40 + "\n")
    token_file.chmod(0o644)
    proc = subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", "serve", "--http", "--port", str(port),
                             "--interval", "0"], env=_env(world, tmp_path), cwd=str(ROOT), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        try:  # the port is bound before start-up completes: wait for an answer, not a connection
            httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp", token_file, proc
    stop(proc)


HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _rpc(method: str, params: dict, rid: int = 1) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def test_http_token_mode_repaired_and_lowercase_scheme_accepted(http):
    url, token_file, proc = http
    assert token_file.stat().st_mode & 0o777 == 0o600
    token = token_file.read_text().strip()
    init = _rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "t", "version": "1"}})
    lower = httpx.post(url, json=init, headers={**HEADERS, "Authorization": f"bearer {token}"}, timeout=10)
    assert lower.status_code == 200, lower.text
    assert httpx.post(url, json=init, headers={**HEADERS, "Authorization": f"bearer {token}x"},
                      timeout=10).status_code == 401
    proc.terminate()
    _, stderr = proc.communicate(timeout=10)
    assert "mode is now 600" in stderr and token not in stderr


def _session(url: str, token: str) -> dict[str, str]:
    headers = {**HEADERS, "Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2025-06-18"}
    init = _rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "t", "version": "1"}})
    resp = httpx.post(url, json=init, headers=headers, timeout=10)
    sid = resp.headers.get("mcp-session-id")
    if sid:
        headers["mcp-session-id"] = sid
    httpx.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers, timeout=10)
    return headers


def _result(resp: httpx.Response) -> dict:
    text = resp.text
    if text.startswith("{"):
        return json.loads(text)
    data = [line[5:] for line in text.splitlines() if line.startswith("data:")]
    return json.loads(data[-1])


def test_http_body_limit_agrees_with_the_write_cap(world, http):
    from mcp_nextcloud.server.context import MAX_WRITE_BYTES

    url, token_file, _ = http
    headers = _session(url, token_file.read_text().strip())
    content = "x" * (MAX_WRITE_BYTES - 1024)   # under the write cap, over the SDK's 4 MiB default
    call = _rpc("tools/call", {"name": "files_write", "arguments": {"path": "/Documents/big-http.txt",
                                                                    "content": content}}, 2)
    resp = httpx.post(url, json=call, headers=headers, timeout=60)
    assert resp.status_code == 200, resp.text[:300]
    assert not _result(resp)["result"].get("isError"), resp.text[:300]
    over = _rpc("tools/call", {"name": "files_write", "arguments": {"path": "/Documents/big-http2.txt",
                                                                    "content": "y" * (MAX_WRITE_BYTES + 1)}}, 3)
    answer = _result(httpx.post(url, json=over, headers=headers, timeout=60))["result"]
    assert answer["isError"] and f"{MAX_WRITE_BYTES}-byte write cap" in answer["content"][0]["text"]
    from mcp_nextcloud.server.http_limits import MAX_BODY_BYTES

    huge = httpx.post(url, content=b"{" + b" " * (MAX_BODY_BYTES + 1) + b"}", headers=headers, timeout=60)
    assert huge.status_code == 413
    message = huge.json()["error"]["message"]
    assert "files_write accepts at most 5 MiB" in message


def _raw_request(url: str, head: bytes, body: bytes, wait_s: float) -> tuple[bytes, float]:
    """Send the head and the start of a body on a raw socket; what the server answers within wait_s, and when."""
    import socket
    from urllib.parse import urlparse

    where = urlparse(url)
    with socket.create_connection((where.hostname, where.port), timeout=wait_s) as sock:
        t0 = time.monotonic()
        sock.sendall(head + body)
        answer = b""
        try:
            while b"\r\n\r\n" not in answer:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                answer += chunk
        except TimeoutError:
            pass
        return answer, time.monotonic() - t0


def test_http_refuses_a_caller_without_the_token_before_reading_its_body(http):
    """A request without the token that announces 30 MiB and sends 1 KiB: 401 at once, the body never awaited."""
    url, _, _ = http
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 31457280\r\n\r\n")
    answer, took = _raw_request(url, head, b"{" + b" " * 1024, wait_s=10)
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
    assert took < 5


def test_http_ends_a_body_that_never_completes(http):
    """With the token, a body that stops half-way is answered 408 after the body deadline, naming it."""
    from mcp_nextcloud.server.http_limits import BODY_SECONDS

    url, token_file, _ = http
    token = token_file.read_text().strip()
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n"
            b"Authorization: Bearer " + token.encode() + b"\r\nContent-Length: 4096\r\n\r\n")
    answer, took = _raw_request(url, head, b"{" + b" " * 100, wait_s=BODY_SECONDS + 20)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert BODY_SECONDS - 1 <= took < BODY_SECONDS + 15


def test_http_slow_heads_cannot_lock_a_host_out(http):
    """More connections than the server takes at once, each sending half a request head and then nothing: each
    is answered 408 and closed after the head deadline, and a real request made while they hang is served once
    they are gone (uvicorn alone keeps such connections, and the slots they hold, forever)."""
    from urllib.parse import urlparse

    from mcp_nextcloud.cli.serve import HTTP_CONNECTIONS
    from mcp_nextcloud.server.http_protocol import HEAD_SECONDS

    url, token_file, _ = http
    where = urlparse(url)
    slow = []
    for _ in range(HTTP_CONNECTIONS + 8):
        sock = socket.create_connection((where.hostname, where.port), timeout=HEAD_SECONDS + 30)
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        slow.append(sock)
    t0 = time.monotonic()
    try:
        answers = []
        for sock in slow:
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
            answers.append(answer)
        took = time.monotonic() - t0
    finally:
        for sock in slow:
            sock.close()
    assert all(a.startswith(b"HTTP/1.1 408") and b"request head" in a for a in answers), answers[:2]
    assert took < HEAD_SECONDS + 20
    headers = {**HEADERS, "Authorization": f"Bearer {token_file.read_text().strip()}"}
    init = _rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "t", "version": "1"}})
    assert httpx.post(url, json=init, headers=headers, timeout=30).status_code == 200
