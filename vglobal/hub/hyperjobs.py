"""A submitted HyperJob turned into the child Jobs the hub stores (each with its own binding).

The HyperJob itself is not a row: its children carry its name (label ``volcano.sh/hyperjob-name``)
and what admission needs of the group (``vglobal.model.hyperjob``), and its status is read from
them. An auto split is decided here, when the HyperJob is accepted, from the free capacity the
clusters last reported (read from the store): each share becomes one child pinned to its cluster.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from vglobal.admission.fit.hyperjob import SplitError, split_over
from vglobal.admission.inputs import hypernode_snaps, node_snap
from vglobal.admission.snapshot import ClusterSnap
from vglobal.hub.errors import FailedPrecondition, InvalidArgument
from vglobal.model.hyperjob import HyperJob
from vglobal.model.job import Job
from vglobal.model.phases import ClusterState
from vglobal.model.records import ClusterRow
from vglobal.store.repo import clusters as clusters_repo


def _capacity(row: ClusterRow) -> ClusterSnap:
    """What a split weighs of a cluster: its nodes' free and allocatable, and its HyperNodes."""
    nodes = sorted((node_snap(n, row.free.get(n["name"])) for n in row.nodes), key=lambda n: n.name)
    return ClusterSnap(
        name=row.name, labels=row.labels, nodes=tuple(nodes), hypernodes=hypernode_snaps(row.hypernodes)
    )


def check_cluster_names(hj: HyperJob, *, session: Session) -> None:
    """Every cluster a replicated job is pinned to must exist (registered, in any state): a child
    pinned to none that does could never run. INVALID_ARGUMENT names the field and the cluster."""
    pinned = {name for rj in hj.replicated for name in rj.cluster_names}
    if not pinned:
        return
    known = {row.name for row in clusters_repo.list_clusters(session=session, with_nodes=False)}
    for i, rj in enumerate(hj.replicated):
        for k, name in enumerate(rj.cluster_names):
            if name not in known:
                there = ", ".join(sorted(known)) or "none registered yet"
                raise InvalidArgument(
                    f'spec.replicatedJobs[{i}].clusterNames[{k}]: cluster "{name}" does not exist '
                    f"(clusters: {there})"
                )


def children(hj: HyperJob, *, session: Session) -> tuple[Job, ...]:
    """The HyperJob's children; an auto split divides its accelerators over the Ready clusters'
    free capacity now (over their whole capacity when what is free cannot hold it: it then waits),
    clusters that take equal shares ranked by the network tier that holds a share's pods."""
    if not hj.needs_split:
        return hj.children()
    ready = {
        row.name: _capacity(row)
        for row in clusters_repo.list_clusters(session=session)
        if row.effective_state == ClusterState.Ready
    }
    try:
        shares = split_over(hj, ready)
    except SplitError as exc:
        raise FailedPrecondition(str(exc)) from None
    return hj.children(shares)
