"""The hub's ports are checked free before it starts anything: a second hub started on a busy port
must stop at once, saying so, not start (or attach to) a database and then fail to listen."""

from __future__ import annotations

import errno
import socket

from vglobal.config import HubSettings

__all__ = ["PortInUse", "check_ports_free"]


class PortInUse(Exception):
    """A port the hub would listen on is taken; the message names it and its flag."""


def _in_use(address: str) -> bool:
    host, _, port = address.rpartition(":")
    if not port.isdigit() or int(port) == 0:
        return False  # gRPC reports an address it cannot parse itself
    try:
        infos = socket.getaddrinfo(
            host.strip("[]") or None, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror:
        return False
    for family, kind, proto, _, sockaddr in infos:
        with socket.socket(family, kind, proto) as s:
            # As a listener would: a port left in TIME_WAIT by a hub that stopped is free.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(sockaddr)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    return True
    return False


def check_ports_free(settings: HubSettings) -> None:
    """Raise PortInUse for the first of the hub's addresses another process listens on."""
    for flag, address in (
        ("--listen", settings.listen),
        ("--agent-listen", settings.agent_listen),
        ("--metrics-listen", settings.metrics_listen),
    ):
        if address and _in_use(address):
            raise PortInUse(
                f"{address} ({flag}) is already in use: is another hub running there? Stop it, or give "
                f"this one another {flag}; nothing was started"
            )
