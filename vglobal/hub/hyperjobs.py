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
from vglobal.hub.errors import FailedPrecondition
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
