"""Overload on the HTTP transports is answered as such (issue 53): past the limit of requests at once, a 503 whose
body is a JSON-RPC error with the cause, and Retry-After, where uvicorn answered a plain "Service Unavailable";
refusals and accept() failures for want of descriptors are logged once a minute with a count, never per event.

Through the uvicorn server both `serve --http` and the team server run (server/http_protocol.py), with a small
ASGI app that holds each request until the test lets it go.
"""
from __future__ import annotations

import asyncio
import errno
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.helpers import wait_for

LIMIT = 8
released = threading.Event()
entered: list[int] = []


async def _held(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    entered.append(1)
    while not released.is_set():
        await asyncio.sleep(0.01)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"done"})


@pytest.fixture
def held_server() -> Any:
    from mcp_nextcloud.server.http_protocol import http_server, listening_socket

    released.clear()
    entered.clear()
    sock = listening_socket(0)
    server = http_server(_held, connections=LIMIT, port=sock.getsockname()[1])
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_for(lambda: server.started, what="the server listening")
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    released.set()
    server.should_exit = True
    thread.join(10)
    sock.close()


def test_a_request_over_the_limit_gets_a_json_rpc_error_with_retry_after(held_server: str,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "nextcloud_whoami"}}
    with ThreadPoolExecutor(LIMIT) as pool, caplog.at_level(logging.WARNING, logger="mcp_nextcloud.http"):
        held = [pool.submit(httpx.post, held_server, json=body, timeout=30) for _ in range(LIMIT)]
        wait_for(lambda: len(entered) == LIMIT, what="the held requests in the app")
        refused = [httpx.post(held_server, json=body, timeout=10) for _ in range(20)]
        released.set()
        assert [f.result().status_code for f in held] == [200] * LIMIT
    assert [a.status_code for a in refused] == [503] * 20
    answer = refused[-1]
    assert answer.headers["retry-after"] == "1" and answer.headers["content-type"] == "application/json"
    error = answer.json()["error"]
    assert answer.json()["jsonrpc"] == "2.0" and error["code"] == -32000
    assert f"{LIMIT} requests at once" in error["message"] and error["data"]["retry"] is True
    lines = [r for r in caplog.records if "refused over the limit" in r.getMessage()]
    assert len(lines) == 1, [r.getMessage() for r in lines]     # once a minute, not per refusal


def test_accept_failures_for_want_of_descriptors_are_logged_once_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    from mcp_nextcloud.server.http_overload import quiet_exhaustion

    loop = asyncio.new_event_loop()
    others: list[str] = []
    loop.set_exception_handler(lambda _, context: others.append(context["message"]))
    try:
        quiet_exhaustion(loop)
        with caplog.at_level(logging.WARNING, logger="mcp_nextcloud.http"):
            for _ in range(500):   # what asyncio's accept loop reports each time accept() fails with EMFILE
                loop.call_exception_handler({"message": "socket.accept() out of system resource",
                                             "exception": OSError(errno.EMFILE, "Too many open files")})
            loop.call_exception_handler({"message": "something else"})
    finally:
        loop.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "mcp_nextcloud.http"]
    assert len(lines) == 1 and "out of system resources" in lines[0] and "Too many open files" in lines[0], lines
    assert others == ["something else"]       # the rest still goes to the handler the loop had
