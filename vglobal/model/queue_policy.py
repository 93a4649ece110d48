"""Placement a queue sets for its jobs, inherited down the queue tree: a queue's annotations
``vglobal.io/clusters`` (the clusters its jobs may run in), ``vglobal.io/cluster-selector`` (labels
those clusters must have) and ``vglobal.io/cluster-preference`` (the order they prefer them), and
the placement preferences of placement_prefs.py (tolerations, datasets, data locality, preference
wait, binpack/spread): the same annotations a job carries. A job's own annotation wins; a
queue without the setting takes its nearest ancestor's."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from vglobal.model.errors import Problems
from vglobal.model.job import (
    CLUSTER_SELECTOR_ANNOTATION,
    CLUSTERS_ANNOTATION,
    PREFERENCE_ANNOTATION,
    Job,
    _allowed_clusters,
    _cluster_selector,
    _preferred_clusters,
)
from vglobal.model.placement_prefs import ANNOTATIONS as PREFS_ANNOTATIONS
from vglobal.model.placement_prefs import NO_PREFS, PlacementPrefs, read_prefs
from vglobal.model.queue_tuning import check_queue_tuning

ANNOTATIONS = (CLUSTERS_ANNOTATION, CLUSTER_SELECTOR_ANNOTATION, PREFERENCE_ANNOTATION, *PREFS_ANNOTATIONS)


@dataclass(frozen=True)
class QueuePolicy:
    clusters: frozenset[str] | None = None  # None: any cluster
    preferred: tuple[str, ...] = ()
    selector: tuple[tuple[str, str], ...] = ()  # cluster labels, sorted
    prefs: PlacementPrefs = NO_PREFS  # each setting from the nearest queue that has it


def check_queue_policy(p: Problems, annotations: Mapping[str, str]) -> None:
    """Each policy annotation of a queue read as a job's is, its errors naming the annotation."""
    _allowed_clusters(p, annotations)
    _cluster_selector(p, annotations)
    _preferred_clusters(p, annotations)
    read_prefs(p, annotations)
    check_queue_tuning(p, annotations)


def inherited(chain: Iterable[Mapping[str, str]]) -> QueuePolicy:
    """The policy of a queue from the annotations of it and its ancestors, nearest first: each
    setting from the nearest queue that has it."""
    clusters: frozenset[str] | None = None
    preferred: tuple[str, ...] = ()
    selector: dict[str, str] = {}
    prefs = NO_PREFS
    for marks in chain:
        p = Problems()  # stored queues were checked when applied
        if clusters is None:
            clusters = _allowed_clusters(p, marks)
        if not preferred:
            preferred = _preferred_clusters(p, marks)
        if not selector:
            selector = _cluster_selector(p, marks)
        prefs = prefs.or_else(read_prefs(p, marks))
    return QueuePolicy(clusters, preferred, tuple(sorted(selector.items())), prefs)


def sources(chain: Iterable[tuple[str, Mapping[str, str]]]) -> dict[str, tuple[str, str]]:
    """Per policy annotation a queue has in effect: (its value, the queue it comes from), from
    (name, annotations) of the queue and its ancestors, nearest first."""
    out: dict[str, tuple[str, str]] = {}
    for name, marks in chain:
        for key in ANNOTATIONS:
            value = marks.get(key, "").strip()
            if value and key not in out:
                out[key] = (value, name)
    return out


def with_policy(job: Job, policy: QueuePolicy) -> Job:
    """The job with its queue's placement where the job sets none of its own."""
    changes: dict[str, object] = {}
    if job.allowed_clusters is None and policy.clusters is not None:
        changes["allowed_clusters"] = policy.clusters
    if not job.preferred_clusters and policy.preferred:
        changes["preferred_clusters"] = policy.preferred
    if not job.cluster_selector and policy.selector:
        changes["cluster_selector"] = dict(policy.selector)
    if policy.prefs:
        merged = job.placement_prefs.or_else(policy.prefs)
        if merged != job.placement_prefs:
            changes["placement_prefs"] = merged
    return dataclasses.replace(job, **changes) if changes else job  # type: ignore[arg-type]
