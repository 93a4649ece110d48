"""What each queue's jobs hold on each cluster after a cycle, its descendants' included: stored
with the queue's figures, it is what a Dispatch tells an agent the queue holds elsewhere. And, for
a queue with a capability, the room it has left for pods beyond gangs split among its clusters
(``admission.share.allowance``): each cluster's allowance, with what the queue holds there."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from vglobal.admission import ROOT, AdmissionResult, Admit, Snapshot
from vglobal.admission.inputs import JobFacts
from vglobal.admission.share.allowance import Elastic, split_room
from vglobal.admission.snapshot import PROVISIONABLE, PendingJob
from vglobal.model.resources import ResourceVector

Units = dict[str, int]
Held = dict[str, dict[str, Units]]  # queue -> cluster -> units
# A job's facts and its binding's reported pods (PodPlacement JSON; None before any report).
Known = tuple[JobFacts, Sequence[Mapping[str, Any]] | None]


def held_by_cluster(snapshot: Snapshot, result: AdmissionResult) -> Held:
    """queue -> cluster -> units: the running jobs as the cycle charged them (less those it
    reclaimed) and the jobs it admitted, at their gang's request."""
    return _rolled_up(snapshot, _own(snapshot, result, live=False))


def queue_rooms(
    snapshot: Snapshot,
    result: AdmissionResult,
    held: Held,
    facts: Callable[[str], Known | None],
) -> dict[str, dict[str, dict[str, Units]]]:
    """queue -> {"allowance": cluster -> units, "here": cluster -> units} for each queue with a
    capability: what each cluster may place for it beyond gangs, and what it holds there, its
    pods evicted this cycle left out (an agent's own count that still has them is then short of
    room until they go, never over)."""
    capability = {name: q.real_capability for name, q in result.queues.items()}
    if not any(c is not None for c in capability.values()):
        return {}
    parents = {q.name: q.parent or ROOT for q in snapshot.queues}
    admitted = _admitted(snapshot, result)
    limited = _limited(parents, {q for q, c in capability.items() if c is not None})
    jobs = list(_elastic(snapshot, result, admitted, facts, limited))
    free = _free(snapshot, admitted, {j.cluster for j in jobs}) if jobs else {}
    allowance = split_room(capability, parents, held, jobs, free)
    here = _rolled_up(snapshot, _own(snapshot, result, live=True)) if result.evictions else held
    out: dict[str, dict[str, dict[str, Units]]] = {}
    for q, given in allowance.items():
        mine = here.get(q, {})
        out[q] = {"allowance": given, "here": {c: mine.get(c, {}) for c in sorted({*given, *mine})}}
    return out


def rooms_moved(statuses: Mapping[str, Mapping[str, Any]], stored: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether a cycle's changed figures move some cluster's room beyond gangs (its agent is then
    told at once, QueueLimits)."""
    for name, st in statuses.items():
        was = stored.get(name) or {}
        if "allowance" in st and (st["allowance"], st.get("here")) != (was.get("allowance"), was.get("here")):
            return True
    return False


def _admitted(snapshot: Snapshot, result: AdmissionResult) -> list[tuple[PendingJob, str]]:
    """The jobs the cycle admitted, with the cluster each went to."""
    decisions = result.decisions
    to = {uid: d.cluster for uid in result.admitted_order if type(d := decisions[uid]) is Admit}
    if not to:
        return []
    return [(p, to[p.uid]) for p in snapshot.pending if p.uid in to]


def _own(snapshot: Snapshot, result: AdmissionResult, *, live: bool) -> dict[tuple[str, str], Units]:
    taken = {r.victim_uid for r in result.reclaims}
    evicted = {p for e in result.evictions for p in e.pods} if live else set()
    own: dict[tuple[str, str], Units] = {}

    def add(queue: str, cluster: str, request: Mapping[str, int]) -> None:
        units = own.setdefault((queue, cluster), {})
        for name, value in request.items():
            units[name] = units.get(name, 0) + value

    for job in snapshot.running:
        if job.uid in taken:
            continue
        request: Mapping[str, int] = job.request
        if evicted and job.pods and any(pod.uid in evicted for pod in job.pods):
            gone = ResourceVector()
            for pod in job.pods:
                if pod.uid in evicted:
                    gone = gone + pod.request
            request = (job.request - gone).pos()
        add(job.queue, job.cluster, request)
    for p, cluster in _admitted(snapshot, result):
        add(p.queue, cluster, p.request)
    return own


def _rolled_up(snapshot: Snapshot, own: Mapping[tuple[str, str], Units]) -> Held:
    parent = {q.name: q.parent or ROOT for q in snapshot.queues}
    out: Held = {}
    for (queue, cluster), units in own.items():
        name: str | None = queue
        for _ in range(len(parent) + 1):  # a cycle in the tree cannot loop for ever
            if name is None or name == ROOT:
                break
            held = out.setdefault(name, {}).setdefault(cluster, {})
            for r, v in units.items():
                held[r] = held.get(r, 0) + v
            name = parent.get(name)
    return out


def _limited(parents: Mapping[str, str], capped: set[str]) -> set[str]:
    """The queues with a capped queue among themselves and their ancestors."""
    out = set()
    for name in parents:
        at: str | None = name
        for _ in range(len(parents) + 1):
            if at is None or at == ROOT:
                break
            if at in capped:
                out.add(name)
                break
            at = parents.get(at)
    return out


def _elastic(
    snapshot: Snapshot,
    result: AdmissionResult,
    admitted: list[tuple[PendingJob, str]],
    facts: Callable[[str], Known | None],
    limited: set[str],
) -> Iterable[Elastic]:
    """The running and just admitted jobs of capped queues with pods beyond what they hold."""
    taken = {r.victim_uid for r in result.reclaims}
    for job in snapshot.running:
        known = facts(job.uid) if job.queue in limited and job.uid not in taken else None
        if known is None:
            continue
        f, placements = known
        beyond = f.beyond(placements, job.request)
        if beyond:
            yield Elastic(job.uid, job.queue, job.cluster, job.priority, job.created, beyond, _shapes(f))
    for p, cluster in admitted:
        known = facts(p.uid) if p.queue in limited else None
        if known is None:
            continue
        beyond = known[0].beyond(None, p.request)
        if beyond:
            yield Elastic(p.uid, p.queue, cluster, p.priority, p.created, beyond, _shapes(known[0]))


def _shapes(f: JobFacts) -> tuple[ResourceVector, ...]:
    return tuple(dict.fromkeys(f.pod_requests.values()))


def _free(snapshot: Snapshot, just: list[tuple[PendingJob, str]], clusters: set[str]) -> dict[str, Units]:
    """Per cluster of ``clusters``, what its nodes have free less the gangs admitted to it and not
    placed yet."""
    admitted: dict[str, list[Mapping[str, int]]] = {}
    for p, at in just:
        if at in clusters:
            admitted.setdefault(at, []).append(p.request)
    out: dict[str, Units] = {}
    for cluster in snapshot.clusters:
        if cluster.name not in clusters:
            continue
        free: Units = {}
        for n in cluster.nodes:
            if PROVISIONABLE in n.labels:
                continue
            for r, v in n.free.items():
                free[r] = free.get(r, 0) + v
        gangs = [vec.scale(k) for gang in cluster.unplaced for vec, k in gang]
        for req in (*gangs, *admitted.get(cluster.name, ())):
            for r, v in req.items():
                free[r] = free.get(r, 0) - v
        out[cluster.name] = free
    return out
