"""``vglobal agent --kubeconfig PATH | --in-cluster``: the agent of a real cluster.

Connects with the kubeconfig (or the pod's service account), waits as a standby until it holds
the cluster's Lease, lists and watches the cluster, takes over the runs it finds there, then
serves the hub like any agent. It exits if another replica took the Lease (Kubernetes restarts
it as the standby).
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vglobal.agent.cards import mig_config
from vglobal.agent.core import AgentCore
from vglobal.agent.daemon import install_signals, load_conf, serve
from vglobal.agent.kube.api import KubeApi, connect
from vglobal.agent.kube.backend import KubeBackend, KubeOptions
from vglobal.agent.kube.lease import LeaderElector
from vglobal.agent.kube.logs import KubeLogReader
from vglobal.agent.kube.pools import load_pools
from vglobal.agent.kube.recovery import recover
from vglobal.agent.kube.topology import load_discovery
from vglobal.agent.runtime import ClusterRuntime
from vglobal.clock import RealClock
from vglobal.dial import Dial

log = logging.getLogger(__name__)


class LeaseLost(Exception):
    """Another replica holds the Lease now: this one must stop acting."""


@dataclass(frozen=True)
class KubeAgentSettings:
    kubeconfig: str | None = None
    context: str | None = None
    in_cluster: bool = False
    name: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    scheduler_name: str = "vglobal"
    kube_qps: float = 50.0
    kube_burst: int = 100
    namespaces: frozenset[str] | None = None
    create_namespaces: bool = False
    lease_duration: float = 15.0
    lease_namespace: str | None = None
    hypernode_discovery: Path | None = None
    node_pools: Path | None = None
    scheduler_conf: Path | None = None
    bind_timeout: float = 60.0
    heartbeat_interval: float = 5.0
    cycle_interval: float = 0.2
    writers: int = 8
    metrics_listen: str | None = None  # [HOST:]PORT of /metrics; the CLI checks the host


def lease_name(cluster: str) -> str:
    return re.sub(r"[^a-z0-9.-]+", "-", f"vglobal-agent-{cluster}".lower()).strip("-.")[:253]


def identity() -> str:
    """This replica: the pod's name (its hostname) and a suffix unique to this process."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{secrets.token_hex(4)}"


def run_kube_agent(hub: Dial | str, settings: KubeAgentSettings, stop: threading.Event | None = None) -> None:
    """Run until ``stop``, SIGTERM or SIGINT; LeaseLost if another replica took over."""
    stop = stop or threading.Event()
    install_signals(stop)
    s = settings
    discovery = load_discovery(s.hypernode_discovery) if s.hypernode_discovery is not None else None
    pools = load_pools(s.node_pools) if s.node_pools is not None else ()
    conf = load_conf(s.scheduler_conf)
    conn = connect(kubeconfig=s.kubeconfig, context=s.context, in_cluster=s.in_cluster, pool=s.writers + 8)
    name = s.name or conn.context
    if not name:
        raise ValueError("--name: required with --in-cluster (the cluster's name at the hub)")
    api = KubeApi(conn.client, qps=s.kube_qps, burst=s.kube_burst)
    me = identity()
    elector = None
    if s.lease_duration > 0:
        namespace = s.lease_namespace or conn.namespace
        elector = LeaderElector(
            api, namespace=namespace, name=lease_name(name), identity=me, duration=s.lease_duration
        )
        if not elector.acquire(stop):
            return
        elector.start_renewing()
    options = KubeOptions(
        cluster=name,
        labels=dict(s.labels),
        scheduler_name=s.scheduler_name,
        namespaces=s.namespaces,
        create_namespaces=s.create_namespaces,
        discovery=discovery,
        pools=pools,
        writers=s.writers,
        instance=me,
    )
    backend = KubeBackend(api, options)
    try:
        backend.start()
        runtime = ClusterRuntime(backend, RealClock(), conf, bind_timeout=s.bind_timeout)
        for found in recover(backend, mig_config(conf)):
            runtime.adopt(found)
        core = AgentCore(runtime, heartbeat_interval=s.heartbeat_interval, purge_stopped=True)
        core.adopted()
        serve(
            core,
            hub,
            stop=stop,
            cycle_interval=s.cycle_interval,
            lost=elector.lost if elector else None,
            metrics_listen=s.metrics_listen,
            logs=KubeLogReader(api),
        )
    finally:
        backend.stop()
        if elector is not None and not elector.lost.is_set():
            elector.release()
        api.close()
    if elector is not None and elector.lost.is_set():
        raise LeaseLost(f"Lease {elector.namespace}/{elector.name} lost: another replica is active")
