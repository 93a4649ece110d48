"""When pending jobs will start: admit() replayed forward on a virtual clock from a snapshot.

Running jobs end at their expected end (given per uid; one without an end runs past the horizon),
and each job the replay admits runs for its expected duration; at every end the freed room goes to
the next cycle's admissions as the hub's own cycles would hand it out (same admit(), same fair
share, gang fit and priorities). Victims a cycle takes stop at once and are not followed further:
this is a forecast for waiting jobs. Pure: the caller bounds the work (``max_cycles``) and reads
the clock.

Ends closer together than ``coalesce`` of the time looked ahead so far, and than ``max_step``,
are released in one cycle (at the later end): thousands of running jobs ending seconds apart take a
few cycles instead of one each, and each step is short beside a job's run, so the waves of jobs
that start one after another are not held back a step each.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from vglobal.admission.admit import admit
from vglobal.admission.snapshot import (
    AdmissionResult,
    Admit,
    ClusterSnap,
    Gang,
    PendingJob,
    RunningJob,
    Snapshot,
)
from vglobal.model.resources import ResourceVector

FOREVER = math.inf


@dataclass(frozen=True)
class Estimate:
    start: float | None  # seconds on the snapshot's clock; None = not within the replay's reach
    cluster: str = ""
    ahead: int = 0  # jobs of its queue, waiting now, that the replay starts before it


@dataclass(frozen=True)
class Forecast:
    estimates: Mapping[str, Estimate]  # one per pending job of the snapshot
    cycles: int  # admit() calls made
    reached: float  # the virtual time the replay got to


@dataclass
class _Run:
    job: RunningJob
    end: float
    gang: Gang = ()  # a replayed admission's gang, held as unplaced on its cluster until it ends


def forecast(
    snapshot: Snapshot,
    ends: Mapping[str, float],
    durations: Mapping[str, float],
    *,
    max_cycles: int = 50,
    horizon: float = 7 * 86400.0,
    coalesce: float = 0.1,
    max_step: float = 300.0,
) -> Forecast:
    """``ends``: per running job uid, when it is expected to end; ``durations``: per pending job
    uid, how long it is expected to run once started (missing = past the horizon)."""
    policy = replace(snapshot.policy, max_admissions=0)  # one cycle hands out all the room there is
    free = {c.name: {n.name: n.free for n in c.nodes} for c in snapshot.clusters}
    clusters = {c.name: c for c in snapshot.clusters}
    held: dict[str, list[Gang]] = {c.name: list(c.unplaced) for c in snapshot.clusters}
    runs = {j.uid: _Run(j, ends.get(j.uid, FOREVER)) for j in snapshot.running}
    pending = list(snapshot.pending)
    allocated = {q.name: q.allocated for q in snapshot.queues}  # moved as runs start and end
    starts: dict[str, tuple[float, str]] = {}
    now, limit, cycles = snapshot.now, snapshot.now + horizon, 0
    while pending and cycles < max_cycles and now <= limit:
        snap = Snapshot(
            now=now,
            queues=tuple(replace(q, allocated=allocated[q.name]) for q in snapshot.queues),
            clusters=tuple(_cluster(clusters[name], free[name], held[name]) for name in clusters),
            pending=tuple(pending),
            running=tuple(r.job for r in runs.values()),
            policy=policy,
        )
        result = admit(snap)
        cycles += 1
        _take_victims(result, runs, free, held, allocated)
        admitted = _admit(result, pending, runs, held, durations, now)
        for uid, _ in admitted:
            job = runs[uid].job
            allocated[job.queue] = allocated.get(job.queue, ResourceVector()) + job.request
        for uid, cluster in admitted:
            starts[uid] = (now, cluster)
        if admitted:
            pending = [p for p in pending if p.uid not in starts]
        nxt = min((r.end for r in runs.values() if r.end > now), default=FOREVER)
        if nxt == FOREVER:
            break
        now = max(nxt, now + min(coalesce * (now - snapshot.now), max_step))
        for uid in [u for u, r in runs.items() if r.end <= now]:
            _release(runs.pop(uid), free, held, allocated)
    return Forecast(_estimates(snapshot.pending, starts), cycles, now)


def _cluster(c: ClusterSnap, free: Mapping[str, ResourceVector], held: list[Gang]) -> ClusterSnap:
    nodes = tuple(n if n.free == free[n.name] else replace(n, free=free[n.name]) for n in c.nodes)
    return replace(c, nodes=nodes, unplaced=tuple(held))


def _admit(
    result: AdmissionResult,
    pending: list[PendingJob],
    runs: dict[str, _Run],
    held: dict[str, list[Gang]],
    durations: Mapping[str, float],
    now: float,
) -> list[tuple[str, str]]:
    by_uid = {p.uid: p for p in pending}
    out = []
    for uid in result.admitted_order:
        decision = result.decisions[uid]
        if not isinstance(decision, Admit):
            continue
        job = by_uid[uid]
        held[decision.cluster].append(job.gang)
        runs[uid] = _Run(
            RunningJob(
                uid=uid,
                queue=job.queue,
                cluster=decision.cluster,
                priority=job.priority,
                created=job.created,
                request=job.request,
                running_since=now,
                pinned=True,  # the replay follows waiting jobs, not the runs it starts
                group=None if job.group is None else job.group.key,
                namespace=job.namespace,
                name=job.name,
            ),
            now + durations.get(uid, FOREVER),
            job.gang,
        )
        out.append((uid, decision.cluster))
    return out


def _take_victims(
    result: AdmissionResult,
    runs: dict[str, _Run],
    free: dict[str, dict[str, ResourceVector]],
    held: dict[str, list[Gang]],
    allocated: dict[str, ResourceVector],
) -> None:
    for r in result.reclaims:
        run = runs.pop(r.victim_uid, None)
        if run is not None:
            _release(run, free, held, allocated)
    for e in result.evictions:
        run = runs.get(e.job_uid)
        if run is None:
            continue
        gone = set(e.pods)
        nodes = free[run.job.cluster]
        for pod in run.job.pods:
            if pod.uid in gone and pod.node in nodes:
                nodes[pod.node] = nodes[pod.node] + pod.request
            if pod.uid in gone and run.job.queue in allocated:
                allocated[run.job.queue] = (allocated[run.job.queue] - pod.request).pos()
        left = tuple(p for p in run.job.pods if p.uid not in gone)
        placements: dict[str, ResourceVector] = {}
        for p in left:
            placements[p.node] = placements.get(p.node, ResourceVector()) + p.request
        run.job = replace(run.job, pods=left, placements=placements)


def _release(
    run: _Run,
    free: dict[str, dict[str, ResourceVector]],
    held: dict[str, list[Gang]],
    allocated: dict[str, ResourceVector],
) -> None:
    queue = run.job.queue
    if queue in allocated:
        allocated[queue] = (allocated[queue] - run.job.request).pos()
    cluster = run.job.cluster
    if run.gang:
        held[cluster].remove(run.gang)
        return
    nodes = free.get(cluster)
    if nodes is None:
        return
    for node, used in run.job.placements.items():
        if node in nodes:
            nodes[node] = nodes[node] + used


def _estimates(
    pending: tuple[PendingJob, ...], starts: Mapping[str, tuple[float, str]]
) -> dict[str, Estimate]:
    by_queue: dict[str, list[float]] = {}
    for job in pending:
        if job.uid in starts:
            by_queue.setdefault(job.queue, []).append(starts[job.uid][0])
    out = {}
    for job in pending:
        earlier = by_queue.get(job.queue, [])
        if job.uid in starts:
            at, cluster = starts[job.uid]
            out[job.uid] = Estimate(at, cluster, sum(1 for s in earlier if s < at))
        else:
            out[job.uid] = Estimate(None, "", len(earlier))
    return out
