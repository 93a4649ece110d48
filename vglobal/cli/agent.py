"""``vglobal agent``: the agent of one member cluster, simulated (``--sim``) or real
(``--kubeconfig`` / ``--in-cluster``)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from vglobal.cli.common import FILE, Ctx, fail, setup_logging
from vglobal.dial import DialError, is_loopback


def _labels(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"--label: expected KEY=VALUE, not {item!r}")
        out[key] = value
    return out


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
@click.option("--sim", "sim_file", type=FILE, default=None, help="Simulated cluster file (kind SimCluster).")
@click.option(
    "--kubeconfig", type=FILE, default=None, help="A real cluster, reached through this kubeconfig."
)
@click.option("--context", default=None, help="The kubeconfig context (default: its current context).")
@click.option(
    "--in-cluster",
    is_flag=True,
    help="The cluster the agent runs in, through its service account "
    "(the default where KUBERNETES_SERVICE_HOST is set).",
)
@click.option(
    "--name", default=None, help="Cluster name at the hub (default: the sim file's name or the context's)."
)
@click.option(
    "--label", "labels", multiple=True, help="KEY=VALUE label of the cluster at the hub (kube; repeatable)."
)
@click.option("--scheduler-conf", type=FILE, default=None)
@click.option("--bind-timeout", default="60s", show_default=True)
@click.option("--heartbeat-interval", default="5s", show_default=True)
@click.option(
    "--scheduler-name",
    default="vglobal",
    show_default=True,
    help="schedulerName of the pods the agent creates.",
)
@click.option(
    "--kube-qps", type=float, default=50.0, show_default=True, help="API requests per second (0 = no limit)."
)
@click.option("--kube-burst", type=int, default=100, show_default=True, help="API requests in a burst.")
@click.option("--namespaces", default="", help="Run jobs only in these namespaces (a,b; default all).")
@click.option("--create-namespaces", is_flag=True, help="Create a job's namespace when the cluster lacks it.")
@click.option(
    "--lease-duration", default="15s", show_default=True, help="Leader election Lease (0 = no election)."
)
@click.option("--lease-namespace", default=None, help="Namespace of the Lease (default: the agent's own).")
@click.option(
    "--hypernode-discovery",
    type=FILE,
    default=None,
    help="HyperNodes from node labels (Volcano's discovery config).",
)
@click.option(
    "--metrics-listen",
    default=None,
    help="Serve Prometheus metrics on [HOST:]PORT (127.0.0.1 unless a host is given).",
)
@click.option(
    "--metrics-public",
    is_flag=True,
    help="Allow --metrics-listen beyond loopback (plain HTTP, no authentication).",
)
@click.option("-v", "--verbose", is_flag=True)
@click.pass_obj
def agent(
    obj: Ctx,
    sim_file: Path | None,
    kubeconfig: Path | None,
    context: str | None,
    in_cluster: bool,
    name: str | None,
    labels: tuple[str, ...],
    scheduler_conf: Path | None,
    bind_timeout: str,
    heartbeat_interval: str,
    scheduler_name: str,
    kube_qps: float,
    kube_burst: int,
    namespaces: str,
    create_namespaces: bool,
    lease_duration: str,
    lease_namespace: str | None,
    hypernode_discovery: Path | None,
    metrics_listen: str | None,
    metrics_public: bool,
    verbose: bool,
) -> None:
    """Run the agent of one member cluster."""
    from vglobal.model.duration import parse_duration

    setup_logging(verbose)
    try:
        obj.dial.check()
    except DialError as exc:
        fail(str(exc))
    if metrics_listen:
        metrics_listen = metrics_address(metrics_listen, public=metrics_public)
    real = kubeconfig is not None or context is not None or in_cluster
    if sim_file is not None and real:
        fail("--sim and --kubeconfig/--context/--in-cluster are exclusive: one cluster, simulated or real")
    try:
        bind, heartbeat = parse_duration(bind_timeout), parse_duration(heartbeat_interval)
        lease = parse_duration(lease_duration)
    except ValueError as exc:
        fail(str(exc))
    if sim_file is not None:
        from vglobal.agent.daemon import run_agent

        run_agent(
            hub=obj.dial,
            sim_file=sim_file,
            name=name,
            scheduler_conf=scheduler_conf,
            bind_timeout=bind,
            heartbeat_interval=heartbeat,
            metrics_listen=metrics_listen,
        )
        return
    if not real and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        fail("one of --sim FILE, --kubeconfig PATH or --in-cluster is needed")
    from vglobal.agent.kube.daemon import KubeAgentSettings, LeaseLost, run_kube_agent

    settings = KubeAgentSettings(
        kubeconfig=str(kubeconfig) if kubeconfig else None,
        context=context,
        in_cluster=in_cluster or (kubeconfig is None and context is None),
        name=name,
        labels=_labels(labels),
        scheduler_name=scheduler_name,
        kube_qps=kube_qps,
        kube_burst=kube_burst,
        namespaces=frozenset(n.strip() for n in namespaces.split(",") if n.strip()) or None,
        create_namespaces=create_namespaces,
        lease_duration=lease,
        lease_namespace=lease_namespace,
        hypernode_discovery=hypernode_discovery,
        scheduler_conf=scheduler_conf,
        bind_timeout=bind,
        heartbeat_interval=heartbeat,
        metrics_listen=metrics_listen,
    )
    try:
        run_kube_agent(obj.dial, settings)
    except (LeaseLost, ValueError, RuntimeError) as exc:
        fail(str(exc))
