"""A submitted HyperJob turned into the child Jobs the hub stores (each with its own binding).

The HyperJob itself is not a row: its children carry its name (label ``volcano.sh/hyperjob-name``)
and what admission needs of the group (``vglobal.model.hyperjob``), and its status is read from
them. An auto split is decided here, when the HyperJob is accepted, from the free capacity the
clusters last reported: each share becomes one child pinned to its cluster.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from vglobal.admission.fit.hyperjob import SplitError, split_over
from vglobal.admission.snapshot import ClusterSnap
from vglobal.config import HubSettings
from vglobal.hub.auth.policy import Action
from vglobal.hub.dispatch.clusters import ClusterCache
from vglobal.hub.errors import FailedPrecondition, InvalidArgument
from vglobal.hub.servicers.access import require
from vglobal.hub.submit import Submission, check_limits, field_validation
from vglobal.model.hyperjob import HyperJob
from vglobal.model.job import Job
from vglobal.model.manifests import parse_manifests
from vglobal.model.phases import ClusterState


def accept_any(manifest: str, settings: HubSettings, validation: str = "") -> Job | HyperJob:
    """Exactly one Job or HyperJob manifest, within this hub's limits, to a queue the caller may
    submit to (a HyperJob's children all go to one queue)."""
    docs = parse_manifests(
        manifest, max_bytes=settings.max_manifest_bytes, validation=field_validation(validation)
    )
    if len(docs) != 1:
        raise InvalidArgument(f"manifest: expected exactly one Job or HyperJob, got {len(docs)} documents")
    doc = docs[0]
    if not isinstance(doc, Job | HyperJob):
        raise InvalidArgument(f"kind: expected Job or HyperJob, got {type(doc).__name__}")
    if isinstance(doc, Job):
        check_limits(doc, settings)
    else:
        for rj in doc.replicated:
            if rj.template is not None:
                check_limits(rj.template, settings)
    require(Action.submit_jobs, queue=doc.queue)
    return doc


def _ready_clusters(*, session: Session) -> dict[str, ClusterSnap]:
    """Every Ready cluster as admission sees it (its nodes' free and allocatable, its HyperNodes)."""
    cache = ClusterCache()
    return {
        row.name: cache.snap(row, ())
        for row in cache.read(session=session)
        if row.effective_state == ClusterState.Ready
    }


def children(hj: HyperJob, *, session: Session) -> tuple[Job, ...]:
    """The HyperJob's children; an auto split divides its accelerators over the clusters' free
    capacity now (over their whole capacity when what is free cannot hold it: it then waits),
    clusters that take equal shares ranked by the network tier that holds a share's pods."""
    if not hj.needs_split:
        return hj.children()
    try:
        shares = split_over(hj, _ready_clusters(session=session))
    except SplitError as exc:
        raise FailedPrecondition(str(exc)) from None
    return hj.children(shares)


def submissions(
    hj: HyperJob, request_id: str | None, principal: str | None, *, session: Session
) -> list[Submission]:
    """The children as submissions; each child's request_id is the HyperJob's with its index."""
    kids = children(hj, session=session)
    return [Submission(k, f"{request_id}#{i}" if request_id else None, principal) for i, k in enumerate(kids)]


def first_of(spans: Sequence[tuple[int, int]], index: int) -> int:
    """Which submitted item the stored job at ``index`` came from."""
    for item, (start, end) in enumerate(spans):
        if start <= index < end:
            return item
    return index
