"""The /metrics HTTP server of the hub and the agent: prometheus_client's handler, bounded.

``prometheus_client.start_http_server`` keeps a connection for as long as the client likes and
takes any number of them. Here a connection that sends nothing for READ_TIMEOUT seconds is closed,
at most MAX_CONNECTIONS are served at once (one more is closed at once), every answer closes its
connection, only GET is served (no request body is ever read), and http.server's own bounds hold
for the request line and headers (64 KiB a line, 100 headers).
"""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import MetricsHandler

READ_TIMEOUT = 10.0  # seconds
MAX_CONNECTIONS = 32


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: Any, most: int) -> None:
        self._slots = threading.BoundedSemaphore(most)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)  # over the cap: closed before a thread is spent on it
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def serve(
    listen: str,
    registry: CollectorRegistry,
    *,
    read_timeout: float = READ_TIMEOUT,
    most: int = MAX_CONNECTIONS,
) -> ThreadingHTTPServer:
    """Serve ``registry`` on ``[HOST:]PORT`` (127.0.0.1 when no host is given) in a daemon thread."""
    host, _, port = listen.rpartition(":")

    class Handler(MetricsHandler.factory(registry)):  # type: ignore[misc]
        timeout = read_timeout  # the socket's: a silent client is dropped

        def log_message(self, format: str, *args: Any) -> None:
            """Scrapes are not logged."""

    server = _Server((host.strip("[]") or "127.0.0.1", int(port)), Handler, most)
    threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True).start()
    return server
