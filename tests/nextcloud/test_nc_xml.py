"""Unsafe and malformed XML is refused with a clear error, also when it arrives over HTTP."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mcp_nextcloud.nextcloud.client import NextcloudClient
from mcp_nextcloud.nextcloud.config import Account
from mcp_nextcloud.nextcloud.davxml import parse_multistatus, sabre_error
from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError

BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]>
<d:multistatus xmlns:d="DAV:"><d:response><d:href>/remote.php/dav/files/alice/&lol4;</d:href></d:response>
</d:multistatus>"""
EXTERNAL = b"""<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<d:multistatus xmlns:d="DAV:"><d:response><d:href>&xxe;</d:href></d:response></d:multistatus>"""


@pytest.mark.parametrize("body", [BOMB, EXTERNAL])
def test_entity_declarations_are_refused(body):
    with pytest.raises(NextcloudError) as exc:
        parse_multistatus(body, path="/Docs")
    assert exc.value.code is ErrorCode.INVALID_RESPONSE and "entities" in str(exc.value)
    assert "/Docs" in str(exc.value) and "do not retry" in str(exc.value).lower()


def test_malformed_and_wrong_root():
    with pytest.raises(NextcloudError) as bad:
        parse_multistatus(b"<d:multistatus xmlns:d='DAV:'><d:response>")
    assert bad.value.code is ErrorCode.INVALID_RESPONSE
    with pytest.raises(NextcloudError):
        parse_multistatus(b"<html><body>proxy login</body></html>")
    assert sabre_error(BOMB) == (None, None)     # an error body with entities is ignored, not expanded


class _BombServer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_PROPFIND(self):  # noqa: N802 - http.server naming
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(207)
        self.send_header("Content-Type", "application/xml; charset=utf-8")
        self.send_header("Content-Length", str(len(BOMB)))
        self.end_headers()
        self.wfile.write(BOMB)


def test_bomb_over_http_is_a_clear_error():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _BombServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        with NextcloudClient(Account(f"http://{host}:{port}", "alice", "pw-xyz-123"), backoff=0.01) as nc:
            with pytest.raises(NextcloudError) as exc:
                nc.webdav.list("/Projects")
            assert exc.value.code is ErrorCode.INVALID_RESPONSE and "entities" in str(exc.value)
            assert nc.request_count == 1          # not retried: the answer will not change
            assert str(port) not in str(exc.value)
    finally:
        server.shutdown()
        server.server_close()
