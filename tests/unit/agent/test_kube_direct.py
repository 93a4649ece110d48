"""The kube agent's requests on each thread's own keep-alive connection (agent/kube/direct.py),
against a real HTTPS server on loopback: TLS checked against the CA, one connection for many
requests, chunked and sized bodies, a connection the server closed replaced, errors as ApiError."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from vglobal.agent.kube.api import ApiError, KubeApi
from vglobal.cli.certs import UserSpec, init_certs


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive

    def log_message(self, *_args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        server: Any = self.server
        with server.lock:
            server.connections += 1

    def _answer(
        self,
        status: int,
        doc: dict[str, Any],
        *,
        chunked: bool = False,
        close: bool = False,
        silent: bool = False,
    ) -> None:
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if status == 429:
            self.send_header("Retry-After", "3")
        if close:
            self.send_header("Connection", "close")
        self.close_connection = close or silent  # silent: as an idle timeout, unannounced
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(0, len(body), 7):
                part = body[i : i + 7]
                self.wfile.write(f"{len(part):x};ext=1\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\nX-Trailer: t\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def do_GET(self) -> None:
        auth = self.headers.get("Authorization")
        if self.path.startswith("/chunked"):
            self._answer(200, {"items": list(range(50)), "auth": auth}, chunked=True)
        elif self.path.startswith("/busy"):
            self._answer(429, {"kind": "Status", "reason": "TooManyRequests", "message": "slow down"})
        elif self.path.startswith("/bye"):
            self._answer(200, {"bye": True}, close=True)
        elif self.path.startswith("/silent"):
            self._answer(200, {"bye": True}, silent=True)
        else:
            self._answer(200, {"path": self.path, "auth": auth})

    def do_POST(self) -> None:
        n = int(self.headers["Content-Length"])
        doc = json.loads(self.rfile.read(n))
        self._answer(201, {"created": doc})


class _Server(ThreadingHTTPServer):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.closed = threading.Semaphore(0)  # released as each connection is closed here

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        self.closed.release()


@pytest.fixture
def https(tmp_path: Path) -> Iterator[tuple[Any, Path]]:
    init_certs(tmp_path, "localhost", [], [UserSpec.parse("u:admin")], days=1)
    server: Any = _Server(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.lock = threading.Lock()
    server.connections = 0
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(tmp_path / "hub.crt", tmp_path / "hub.key")
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, tmp_path
    server.shutdown()
    server.server_close()


def _api(server: Any, certs: Path) -> KubeApi:
    from kubernetes import client

    cfg = client.Configuration()
    cfg.host = f"https://localhost:{server.server_address[1]}"
    cfg.ssl_ca_cert = str(certs / "ca.crt")
    cfg.api_key = {"authorization": "sekret"}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    cfg.retries = False
    return KubeApi(client.ApiClient(cfg))


def test_requests_share_one_verified_connection(https: tuple[Any, Path]) -> None:
    server, certs = https
    api = _api(server, certs)
    for i in range(5):
        assert api.request("GET", "/api/v1/pods", query={"limit": str(i)}) == {
            "path": f"/api/v1/pods?limit={i}",
            "auth": "Bearer sekret",
        }
    assert api.request("POST", "/api/v1/namespaces/d/pods", body={"a": "é"}) == {"created": {"a": "é"}}
    chunked = api.request("GET", "/chunked")
    assert chunked["items"] == list(range(50))
    assert server.connections == 1


def test_a_closed_connection_is_replaced(https: tuple[Any, Path]) -> None:
    server, certs = https
    api = _api(server, certs)
    assert api.request("GET", "/bye") == {"bye": True}
    assert api.request("GET", "/after")["path"] == "/after"
    assert server.connections == 2
    assert api.request("GET", "/silent") == {"bye": True}  # closed without saying so
    assert server.closed.acquire(timeout=30) and server.closed.acquire(timeout=30)  # /bye's, /silent's
    assert api.request("GET", "/again")["path"] == "/again"
    assert server.connections == 3


def test_refusals_and_an_untrusted_server_are_api_errors(https: tuple[Any, Path], tmp_path: Path) -> None:
    server, certs = https
    with pytest.raises(ApiError) as busy:
        _api(server, certs).request("GET", "/busy")
    assert (busy.value.status, busy.value.reason, busy.value.retry_after) == (429, "TooManyRequests", 3.0)
    other = tmp_path / "other"
    init_certs(other, "localhost", [], [UserSpec.parse("u:admin")], days=1)
    with pytest.raises(ApiError) as untrusted:
        _api(server, other).request("GET", "/x")
    assert untrusted.value.unreachable and "CERTIFICATE_VERIFY_FAILED" in untrusted.value.message
