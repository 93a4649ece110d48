"""One keep-alive HTTP/1.1 connection per writer thread to the API server, read without urllib3's
or ``http.client``'s response objects.

Each thread's connection is made by the client's own urllib3 pool (``_new_conn``: its TLS
settings, client certificate and host check), so only the exchange itself is ours: the request
written in one send, the status line and headers split by hand (``http.client`` parses them with
the ``email`` package), the body read by Content-Length or chunks. A connection the server has
closed since its last use is noticed before the next request and replaced.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import urllib3
from urllib3.util.wait import wait_for_read

_MAX_LINE = 65536
_MAX_HEADERS = 200


class Broken(Exception):
    """The connection failed or the answer was not HTTP: the request's fate is unknown."""


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict[str, str]  # names in lower case
    body: bytes


class _Conn:
    def __init__(self, conn: Any) -> None:
        self.conn = conn  # urllib3's HTTP(S)Connection, connected: its socket is ours to use
        self.sock = conn.sock
        self.rfile = self.sock.makefile("rb")

    def close(self) -> None:
        self.rfile.close()
        self.conn.close()


class DirectConnections:
    """``exchange`` on the calling thread's own connection to the pool's host."""

    def __init__(self, pool: Any, host_header: str) -> None:
        self._pool = pool
        self._host = host_header
        self._local = threading.local()

    def exchange(
        self,
        method: str,
        path: str,
        body: bytes | None,
        headers: dict[str, str],
        timeout: tuple[float, float],
    ) -> Answer:
        c = self._connection(timeout[0])
        c.sock.settimeout(timeout[1])
        head = [f"{method} {path} HTTP/1.1", f"Host: {self._host}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        if body is not None or method in ("POST", "PUT", "PATCH"):
            head.append(f"Content-Length: {len(body or b'')}")
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (body or b"")
        try:
            c.sock.sendall(data)
            answer, reusable = _read(c.rfile, method)
        except (OSError, ValueError) as exc:
            self._drop()
            raise Broken(str(exc) or type(exc).__name__) from exc
        if not reusable:
            self._drop()
        return answer

    def close(self) -> None:
        self._drop()

    def _connection(self, connect_timeout: float) -> _Conn:
        c: _Conn | None = getattr(self._local, "conn", None)
        # Readable while idle: the server closed it (or says something unasked): not reusable.
        if c is not None and wait_for_read(c.sock, timeout=0.0):
            self._drop()
            c = None
        if c is None:
            conn = self._pool._new_conn()
            conn.timeout = connect_timeout
            try:
                conn.connect()
            except (OSError, urllib3.exceptions.HTTPError) as exc:  # refused: urllib3's, not an OSError
                conn.close()
                raise Broken(str(exc) or type(exc).__name__) from exc
            c = self._local.conn = _Conn(conn)
        return c

    def _drop(self) -> None:
        c: _Conn | None = getattr(self._local, "conn", None)
        self._local.conn = None
        if c is not None:
            c.close()


def _line(rfile: Any) -> bytes:
    line: bytes = rfile.readline(_MAX_LINE + 1)
    if not line:
        raise ValueError("the server closed the connection")
    if len(line) > _MAX_LINE:
        raise ValueError("a line of the answer is too long")
    return line


def _read(rfile: Any, method: str) -> tuple[Answer, bool]:
    """The answer, and whether the connection can carry another request."""
    status_line = _line(rfile).split(None, 2)
    if len(status_line) < 2 or not status_line[0].startswith(b"HTTP/1."):
        raise ValueError(f"not an HTTP answer: {b' '.join(status_line)[:80]!r}")
    status = int(status_line[1])
    headers: dict[str, str] = {}
    for _ in range(_MAX_HEADERS):
        line = _line(rfile)
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    else:
        raise ValueError("too many headers")
    reusable = headers.get("connection", "").lower() != "close" and status_line[0] != b"HTTP/1.0"
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return Answer(status, headers, b""), reusable
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return Answer(status, headers, _chunks(rfile)), reusable
    if "content-length" in headers:
        n = int(headers["content-length"])
        body = rfile.read(n)
        if len(body) != n:
            raise ValueError("the answer ended early")
        return Answer(status, headers, body), reusable
    return Answer(status, headers, rfile.read()), False  # delimited by the close


def _chunks(rfile: Any) -> bytes:
    parts: list[bytes] = []
    while True:
        size = int(_line(rfile).split(b";", 1)[0].strip(), 16)
        if size == 0:
            while _line(rfile) not in (b"\r\n", b"\n"):  # trailers
                pass
            return b"".join(parts)
        chunk = rfile.read(size + 2)
        if len(chunk) != size + 2:
            raise ValueError("the answer ended early")
        parts.append(chunk[:size])
