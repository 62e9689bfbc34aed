"""The HTTP transports' accepted connections have TCP_NODELAY (issue 49).

Without it a response written in pieces (headers, then the streamed body) waits for the client's delayed ACK on a
kept-alive connection: about 40 ms per call (benchmarks/test_http_overhead_bench.py). Checked on the server's side
of the connections, through the listening socket and the uvicorn server both `serve --http` and the team server
run (server/http_protocol.py), with a small ASGI app in the place of the MCP one.
"""
from __future__ import annotations

import socket
import threading
from typing import Any

import httpx

from tests.helpers import wait_for


async def _hello(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"hello ", "more_body": True})   # in pieces, as SSE is
    await send({"type": "http.response.body", "body": b"world"})


def test_accepted_connections_have_tcp_nodelay() -> None:
    from mcp_nextcloud.server.http_protocol import http_server, listening_socket

    sock = listening_socket(0)
    port = sock.getsockname()[1]
    server = http_server(_hello, connections=8, port=port)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started, what="the server listening")
        with httpx.Client(timeout=10) as client:
            for _ in range(2):      # the second on the kept connection
                assert client.get(f"http://127.0.0.1:{port}/").text == "hello world"
            connections = list(server.server_state.connections)
            assert len(connections) == 1
            accepted = connections[0].transport.get_extra_info("socket")
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
