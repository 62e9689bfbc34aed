"""A small https server on 127.0.0.1 publishing client_id metadata documents for the team server's tests: its
own certificate (made here, for IP 127.0.0.1; trusted by the team server through SSL_CERT_FILE), answers set per
path, and a count of the requests each path got."""
from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """(certificate, key) of a self-signed certificate for 127.0.0.1, valid for a day."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class DocServer:
    """`put(path, body, status=200, headers=None, delay=0)` then GET https://127.0.0.1:PORT/path; `hits[path]`."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="cimd", dir="/tmp"))
        self.cert, key = make_certificate(self.folder)
        self.answers: dict[str, tuple[int, dict[str, str], bytes, float]] = {}
        self.hits: dict[str, int] = {}
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                owner.hits[self.path] = owner.hits.get(self.path, 0) + 1
                status, headers, body, delay = owner.answers.get(self.path, (404, {}, b"not here", 0.0))
                time.sleep(delay)
                self.send_response(status)
                for key_, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(key_, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass            # a client that gave up (the slow case) is expected here

        self.httpd = Server(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(self.cert), str(key))
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def put(self, path: str, body: Any, status: int = 200, headers: dict[str, str] | None = None,
            delay: float = 0.0) -> str:
        """Answer GET `path` with `body` (bytes as given, anything else as JSON); its full URL."""
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.answers[path] = (status, headers or {}, raw, delay)
        return self.url + path

    def __enter__(self) -> DocServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        import shutil

        self.httpd.shutdown()
        self.httpd.server_close()
        shutil.rmtree(self.folder, ignore_errors=True)
