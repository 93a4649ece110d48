"""``vglobal agent``: one member cluster's agent process (real clock; the sim backend here, the
kube backend in ``vglobal.agent.kube.daemon``).

A single main loop owns all state: it takes what the hub link received, runs one cluster cycle
every ``cycle_interval`` and sends what the core produced. Only the link runs in its own thread.
"""

from __future__ import annotations

import gc
import logging
import queue
import signal
import threading
import time
from pathlib import Path
from typing import Any

from vglobal.agent.backends.sim import SimBackend
from vglobal.agent.backends.sim_cluster import SimCluster, parse_sim_manifests
from vglobal.agent.backends.sim_logs import SimLogReader
from vglobal.agent.core import AgentCore
from vglobal.agent.hub_link import HubLink, Inbox
from vglobal.agent.logs import LogReader, LogServer
from vglobal.agent.metrics import Observer, serve_metrics
from vglobal.agent.runtime import ClusterRuntime
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.clock import RealClock
from vglobal.dial import Dial
from vglobal.scheduler import DEFAULT_AGENT_CONF, SchedulerConf, parse_conf

log = logging.getLogger(__name__)
# Seconds from a dispatch to the cycle that starts it, at least (a burst's dispatches share one).
DISPATCH_GAP = 0.02


def load_sim_cluster(path: Path) -> SimCluster:
    found = [m for m in parse_sim_manifests(path.read_text()) if isinstance(m, SimCluster)]
    if len(found) != 1:
        raise ValueError(f"{path}: expected one SimCluster document, found {len(found)}")
    return found[0]


def install_signals(stop: threading.Event) -> None:
    if threading.current_thread() is not threading.main_thread():
        return  # signals can only be handled on the main thread; the caller owns ``stop``

    def handler(signum: int, _frame: Any) -> None:
        log.info("signal %d: stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def load_conf(scheduler_conf: Path | None) -> SchedulerConf:
    return parse_conf(scheduler_conf.read_text()) if scheduler_conf is not None else DEFAULT_AGENT_CONF


def run_agent(
    *,
    hub: Dial | str,
    sim_file: Path,
    name: str | None = None,
    scheduler_conf: Path | None = None,
    bind_timeout: float = 60.0,
    heartbeat_interval: float = 5.0,
    cycle_interval: float = 0.2,
    stop: threading.Event | None = None,
    metrics_listen: str | None = None,
) -> None:
    """Run until ``stop`` is set or SIGTERM/SIGINT arrives; jobs keep running while the hub is away."""
    stop = stop or threading.Event()
    install_signals(stop)
    cluster = load_sim_cluster(sim_file)
    backend = SimBackend(cluster, name=name)
    runtime = ClusterRuntime(backend, RealClock(), load_conf(scheduler_conf), bind_timeout=bind_timeout)
    core = AgentCore(runtime, heartbeat_interval=heartbeat_interval)
    serve(
        core,
        hub,
        stop=stop,
        cycle_interval=cycle_interval,
        metrics_listen=metrics_listen,
        logs=SimLogReader(backend, RealClock()),
    )


def serve(
    core: AgentCore,
    hub: Dial | str,
    *,
    stop: threading.Event,
    cycle_interval: float = 0.2,
    lost: threading.Event | None = None,
    metrics_listen: str | None = None,
    logs: LogReader | None = None,
) -> None:
    """The agent's main loop over any backend: hub messages in, one cluster cycle every
    ``cycle_interval``, messages out; until ``stop`` (or ``lost``: another replica took over).
    With ``metrics_listen`` it serves Prometheus metrics there (the caller checked the host)."""
    clock = core.runtime.clock
    backend = core.runtime.backend
    dial = hub if isinstance(hub, Dial) else Dial(hub)
    inbox: Inbox = queue.Queue()
    log_server = LogServer(logs) if logs is not None else None
    link = HubLink(dial, inbox, cluster=backend.cluster_name, logs=log_server)
    log.info(
        "agent for cluster %s (%d nodes) connecting to %s%s",
        backend.cluster_name,
        len(backend.nodes()),
        dial.target,
        " over TLS" if dial.tls else "",
    )
    observer: Observer | None = None
    if metrics_listen:
        serve_metrics(metrics_listen)
        observer = Observer()
        log.info("metrics on http://%s/metrics", metrics_listen)
    link.start()
    session = 0
    took = 0.0  # the last cycle's duration
    try:
        while not stop.is_set() and not (lost is not None and lost.is_set()):
            deadline = clock.now() + cycle_interval
            while True:
                try:
                    kind, sid, msg = inbox.get(timeout=max(0.0, deadline - clock.now()))
                except queue.Empty:
                    break
                out: list[pb.AgentMessage] = []
                if kind == "connected":
                    session = sid
                    out = core.on_connected()
                elif kind == "disconnected" and sid == session:
                    core.on_disconnected()
                elif kind == "message" and sid == session:
                    out = core.on_message(msg)
                    if msg.WhichOneof("body") == "dispatch":
                        # New work starts on a cycle soon, not up to a whole interval later; the
                        # gap grows with what a cycle costs, so a busy agent still batches.
                        deadline = min(deadline, clock.now() + max(DISPATCH_GAP, 4 * took))
                link.send_all(session, out)
                if stop.is_set() or clock.now() >= deadline:
                    break  # a flood of hub messages must not starve the cluster cycle
            started = time.perf_counter()
            # A cycle's scheduling session makes many objects, some in reference cycles, that die
            # with it: collected while it runs they would be promoted and rescanned in full passes
            # over the agent's whole heap (its kept runs), so the collector waits until it ends.
            gc.disable()
            try:
                messages = core.tick()
            finally:
                gc.enable()
            link.send_all(session, messages)
            took = time.perf_counter() - started
            if observer is not None:
                observer.observe(backend, core.runtime.live_grants())
    finally:
        if log_server is not None:
            log_server.stop_all()
        link.close()
        log.info("agent for cluster %s stopped", backend.cluster_name)
