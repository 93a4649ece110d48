"""An emulated NVIDIA UFM server: the one call topology discovery makes, as UFM documents it.

``GET /ufmRest/resources/ports`` with HTTP basic authentication answers a JSON list of port
objects (``description``, ``system_name``, ``node_description``, ``peer_node_name``, ``tier``…);
a host's HCA port has a description with "Computer" in it and names its leaf switch as peer.
Wrong credentials answer 401; ``fail_with`` makes the next answers an error status.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PORTS_PATH = "/ufmRest/resources/ports"


def host_ports(links: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    """Port objects for (host, leaf) links, plus each leaf's uplink port (not a host's)."""
    out: list[dict[str, Any]] = []
    leaves: set[str] = set()
    for i, (host, leaf) in enumerate(links):
        leaves.add(leaf)
        out.append(
            {
                "name": f"{host}_{i}",
                "description": "Computer IB Port",
                "system_name": host,
                "node_description": f"{host} HCA-{i}",
                "peer_node_name": leaf,
                "tier": 1,
                "physical_state": "Link Up",
            }
        )
    for leaf in sorted(leaves):
        out.append(
            {
                "name": f"{leaf}_uplink",
                "description": "Switch IB Port",
                "system_name": leaf,
                "node_description": f"{leaf}:1",
                "peer_node_name": "spine-0",
                "tier": 2,
                "physical_state": "Link Up",
            }
        )
    return out


class UfmServer:
    def __init__(self, ports: list[dict[str, Any]], username: str = "admin", password: str = "s3cret") -> None:
        self.ports = ports
        self.fail_with: int | None = None
        self.requests = 0
        self._auth = "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests += 1
                if self.path != PORTS_PATH:
                    self._send(404, {"error": "not found"})
                elif self.headers.get("Authorization") != server._auth:
                    self._send(401, {"error": "Unauthorized"})
                elif server.fail_with is not None:
                    self._send(server.fail_with, {"error": "Server Error"})
                else:
                    self._send(200, server.ports)

            def _send(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> UfmServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
