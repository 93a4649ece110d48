"""``vglobal agent``: the agent of one member cluster, simulated (``--sim``) or real
(``--kubeconfig`` / ``--in-cluster``). Its flags are AgentSettings' fields (vglobal.config)."""

from __future__ import annotations

import os
from typing import Any

import click

from vglobal.cli.common import Ctx, define_kinds, fail, setup_logging
from vglobal.cli.hub_cmd import PRINT_SETTINGS
from vglobal.cli.settings_flags import run_or_print, settings_options
from vglobal.config import AgentSettings
from vglobal.dial import DialError, is_loopback


def metrics_address(listen: str, *, public: bool) -> str:
    """``[HOST:]PORT`` as HOST:PORT; a host beyond loopback only with --metrics-public."""
    host, _, port = listen.rpartition(":")
    if not port.isdigit():
        fail(f"--metrics-listen {listen}: expected [HOST:]PORT")
    address = f"{host or '127.0.0.1'}:{port}"
    if not public and not is_loopback(address):
        fail(
            f"--metrics-listen {listen}: the agent's metrics are plain, unauthenticated HTTP and stay on "
            "loopback; give --metrics-public to serve them beyond it"
        )
    return address


@click.command()
@settings_options(AgentSettings)
@PRINT_SETTINGS
@click.option("-v", "--verbose", is_flag=True)
@click.pass_context
def agent(ctx: click.Context, /, print_settings: bool, verbose: bool, **_: Any) -> None:
    """Run the agent of one member cluster."""
    s = run_or_print(ctx, AgentSettings, print_settings)
    if s is None:
        return
    obj: Ctx = ctx.obj
    setup_logging(verbose)
    try:
        obj.dial.check()
    except DialError as exc:
        fail(str(exc))
    metrics_listen = s.metrics_listen and metrics_address(s.metrics_listen, public=s.metrics_public)
    if s.kinds_file is not None:
        define_kinds(s.kinds_file)
    real = s.kubeconfig is not None or s.context is not None or s.in_cluster
    if s.sim is not None and real:
        fail("--sim and --kubeconfig/--context/--in-cluster are exclusive: one cluster, simulated or real")
    if s.sim is not None and s.node_pools is not None:
        fail("--node-pools is for a real cluster: a SimCluster's node groups take autoscale: {max, ...}")
    if s.sim is not None:
        from vglobal.agent.daemon import run_agent

        run_agent(
            hub=obj.dial,
            sim_file=s.sim,
            name=s.name,
            scheduler_conf=s.scheduler_conf,
            bind_timeout=s.bind_timeout,
            heartbeat_interval=s.heartbeat_interval,
            metrics_listen=metrics_listen,
        )
        return
    if not real and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        fail("one of --sim FILE, --kubeconfig PATH or --in-cluster is needed")
    from vglobal.agent.kube.daemon import KubeAgentSettings, LeaseLost, run_kube_agent

    settings = KubeAgentSettings(
        kubeconfig=str(s.kubeconfig) if s.kubeconfig else None,
        context=s.context,
        in_cluster=s.in_cluster or (s.kubeconfig is None and s.context is None),
        name=s.name,
        labels=s.labels,
        scheduler_name=s.scheduler_name,
        kube_qps=s.kube_qps,
        kube_burst=s.kube_burst,
        namespaces=s.namespace_set,
        create_namespaces=s.create_namespaces,
        lease_duration=s.lease_duration,
        lease_namespace=s.lease_namespace,
        hypernode_discovery=s.hypernode_discovery,
        node_pools=s.node_pools,
        scheduler_conf=s.scheduler_conf,
        bind_timeout=s.bind_timeout,
        heartbeat_interval=s.heartbeat_interval,
        metrics_listen=metrics_listen,
    )
    try:
        run_kube_agent(obj.dial, settings)
    except (LeaseLost, ValueError, RuntimeError) as exc:
        fail(str(exc))
