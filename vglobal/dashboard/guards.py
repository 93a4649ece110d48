"""What every request passes before a route: the Host allow-list, the header and body limits.

The Host check is what stops DNS rebinding: a hostile page whose name now resolves to this
dashboard sends its own name as Host, which is on no list, so it reads and does nothing (421).
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
MAX_BODY = 1024 * 1024  # bytes: the largest form is a queue manifest, a few KiB
MAX_HEADERS = 32 * 1024  # bytes of header names and values (uvicorn bounds only a partial read)


def host_name(host: str) -> str:
    """``host:port``, ``[::1]:port`` or a bare name, as a lower-case name without the port."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def allowed_hosts(listen_host: str, extra: Iterable[str]) -> frozenset[str]:
    """Loopback names, the host the dashboard listens on (unless a wildcard), and ``extra``."""
    names = set(LOOPBACK_NAMES) | {host_name(h) for h in extra if h.strip()}
    listen = host_name(listen_host)
    if listen and listen not in ("0.0.0.0", "::"):
        names.add(listen)
    return frozenset(names)


async def _answer(send: Send, status: int, text: str) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8")]})  # fmt: skip
    await send({"type": "http.response.body", "body": text.encode()})


class Guards:
    """421 for a Host not on the list; 431 for headers over MAX_HEADERS; 413 for a body over
    MAX_BODY (told or counted)."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str]) -> None:
        self.app, self.hosts = app, hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = scope.get("headers") or []
        if sum(len(k) + len(v) for k, v in raw) > MAX_HEADERS:
            await _answer(send, 431, f"the request headers are over {MAX_HEADERS} bytes\n")
            return
        headers = dict(raw)
        host = host_name(headers.get(b"host", b"").decode("latin-1"))
        if host not in self.hosts and scope["path"] != "/healthz":  # a probe by address reads "ok"
            told = f"host: {host[:100]!r} is not a name of this dashboard (start it with --allowed-host)\n"
            await _answer(send, 421, told)
            return
        told = headers.get(b"content-length", b"0")
        if not told.isdigit() or int(told) > MAX_BODY:
            await _answer(send, 413, f"the request body is over {MAX_BODY} bytes\n")
            return
        seen = 0

        async def bounded() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > MAX_BODY:
                raise ValueError("request body over the limit")
            return message

        await self.app(scope, bounded, send)
