"""Member clusters as an operator inspects and removes them: `describe cluster`, `get nodes`,
`cluster delete`."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from vglobal.api.v1 import clusters_pb2
from vglobal.cli.common import Ctx, console, fail
from vglobal.model.served import kinds_served
from vglobal.sdk import Client, VGlobalError
from vglobal.sdk.rows import quantities, short, stamp


def node_row(cluster: clusters_pb2.Cluster, n: clusters_pb2.Node) -> dict[str, Any]:
    """A node as `get nodes` shows it: its cluster's state, and SchedulingDisabled when cordoned
    in its own cluster, as kubectl's STATUS says."""
    return {
        "name": n.name,
        "cluster": cluster.name,
        "status": cluster.state + (",SchedulingDisabled" if n.unschedulable else ""),
        "allocatable": quantities(n.allocatable),
        "free": quantities(n.free),
        "taints": list(n.taints),
        "labels": dict(sorted(n.labels.items())),
    }


def node_rows(client: Client, cluster: str = "") -> list[dict[str, Any]]:
    """The nodes of ``cluster``, or of every cluster."""
    names = [cluster] if cluster else [c.name for c in client.list_clusters()]
    rows = []
    for name in names:
        msg = client.get_cluster(name)
        rows += [node_row(msg, n) for n in msg.node_list]
    return rows


def describe_cluster(client: Client, name: str, out: Console) -> None:
    c = client.get_cluster(name)
    served, missing = kinds_served(c.labels)
    lines = [
        ("Name", c.name),
        ("State", c.state),
        ("Labels", short(dict(sorted(c.labels.items())))),
        ("Nodes", str(c.nodes)),
        ("Capacity", short(quantities(c.capacity))),
        ("Free", short(quantities(c.free))),
        ("Running jobs", str(c.running_jobs)),
        ("Last heartbeat", stamp(c, "last_heartbeat") or "-"),
        ("NotReady since", stamp(c, "not_ready_since") or "-"),
        ("HyperNodes", str(len(c.hypernodes))),
        ("Kinds served", ", ".join(served)),
        ("Kinds missing", ", ".join(missing) or "<none>"),
    ]
    width = max(len(k) for k, _ in lines) + 1
    for k, v in lines:
        out.print(f"{k + ':':<{width}} {v}", highlight=False, soft_wrap=True)
    out.print("Node list:", highlight=False)
    if not c.node_list:
        out.print("  <none>", highlight=False)
    for n in c.node_list:
        row = node_row(c, n)
        out.print(f"  {n.name}  {row['status']}", highlight=False)
        out.print(f"    allocatable: {short(row['allocatable'])}", highlight=False, soft_wrap=True)
        out.print(f"    free:        {short(row['free'])}", highlight=False, soft_wrap=True)
        out.print(f"    taints:      {', '.join(row['taints']) or '<none>'}", highlight=False, soft_wrap=True)
        out.print(f"    labels:      {short(row['labels'])}", highlight=False, soft_wrap=True)
    out.print("Node pools:", highlight=False)
    if not c.pools:
        out.print("  <none>", highlight=False)
    for p in c.pools:
        up = f"new nodes up in about {p.provision_seconds:g}s"
        out.print(f"  {p.name}: {p.current} of at most {p.max} nodes, {up}", highlight=False, soft_wrap=True)
        out.print(f"    allocatable: {short(quantities(p.allocatable))}", highlight=False, soft_wrap=True)
    out.print("Jobs by node:", highlight=False)
    if not c.work:
        out.print("  <none>", highlight=False)
    for w in c.work:
        jobs = ", ".join(f"{j.namespace}/{j.name} ({len(j.pods)} pods, {j.phase})" for j in w.jobs)
        out.print(f"  {w.node}: {jobs}", highlight=False, soft_wrap=True)


@click.command("delete")
@click.argument("name")
@click.option("--drain", is_flag=True, help="Re-queue its jobs first, as `cluster drain` does.")
@click.option("--force", is_flag=True, help="Delete even with jobs there: they are re-queued as failed over.")
@click.pass_obj
def delete_cluster(obj: Ctx, name: str, drain: bool, force: bool) -> None:
    """Remove a cluster (admin only); refused while jobs are admitted there unless --drain or
    --force. An agent still running registers its cluster again when it reconnects."""
    if drain and force:
        fail("--drain and --force: give one")
    try:
        got = obj.client.delete_cluster(name, drain=drain, force=force)
    except VGlobalError as exc:
        fail(str(exc))
    moved = f" ({got.requeued} jobs re-queued)" if got.requeued else ""
    console.print(f"cluster.vglobal.io/{got.name} deleted{moved}", highlight=False)
