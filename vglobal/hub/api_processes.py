"""More processes serving the public API on the hub's port (``--api-processes N``).

One process (the one started) runs everything a hub runs: the API, the leader loops, the agent
port, metrics. It starts N-1 more that serve only the API on the same port, each with its own
GIL: the kernel (SO_REUSEPORT) hands each new connection to one of them. They share the database
as replicas do, so what holds across replicas holds across them: one job per request_id (the
insert's ON CONFLICT), a submit's DISPATCH notification reaching the leader through Postgres, a
Watch served from the change log. Agents with client certificates connect to the agent port,
which only the first process opens, so their streams, the dispatcher and the deliveries share one
process; on a plaintext hub they share the API port and a stream may land in any process, which
serves it as any replica would.

A child dies with its parent (PR_SET_PDEATHSIG), so a hub killed with -9 leaves none behind.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
from collections.abc import Callable
from multiprocessing.process import BaseProcess

from vglobal.config import HubSettings

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
STOP_GRACE = 5.0  # seconds a child has to finish its calls after SIGTERM before it is killed


def start_api_processes(
    settings: HubSettings,
    url: str,
    port: int,
    log_setup: Callable[[], None] | None,
    serve: Callable[[HubSettings, int, Callable[[], None] | None], None],
) -> list[BaseProcess]:
    """Start ``settings.api_processes - 1`` processes running ``serve`` (the API only) on ``port``
    over the database at ``url`` (the embedded one's, if the first process started it)."""
    spawn = multiprocessing.get_context("spawn")  # no fork of a process with gRPC threads
    host = settings.listen.rsplit(":", 1)[0]
    children: list[BaseProcess] = []
    for i in range(1, settings.api_processes):
        child = settings.model_copy(
            update={
                "listen": f"{host}:{port}",
                "database_url": url,
                "hub_id": f"{settings.hub_id}/api-{i}",
                "metrics_listen": None,
            }
        )
        proc = spawn.Process(
            target=serve, args=(child, os.getpid(), log_setup), name=f"hub-api-{i}", daemon=True
        )
        proc.start()
        children.append(proc)
    log.info("started %d more API processes on port %d", len(children), port)
    return children


def stop_api_processes(children: list[BaseProcess]) -> None:
    for proc in children:
        proc.terminate()
    for proc in children:
        proc.join(STOP_GRACE)
        if proc.is_alive():
            proc.kill()
            proc.join(1.0)


def die_with_parent(parent: int) -> None:
    """In a child: be killed when ``parent`` dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the parent's stop still ends it
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)
