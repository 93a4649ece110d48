"""The benchmarks' federation: a seeded admission Snapshot, and the snapshot one cycle later.

`make_snapshot()` with its defaults is the dispatch benchmarks' workload: 100k pending jobs, 1,110
queues in a 3-level tree, 20 clusters x 500 nodes, 20k running jobs drawn (some do not fit and are
dropped). The same arguments always give the same snapshot. `next_cycle` and
`next_cycle_dispatched` play the agents between two cycles; `first_fit` is admission's own packing
over a set of clusters, which they use to place gangs as an agent would.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

import numpy as np

from vglobal.admission import (
    AdmissionPolicy,
    AdmissionResult,
    Admit,
    ClusterSnap,
    Gang,
    NodeSnap,
    PendingByQueue,
    PendingJob,
    QueueSnap,
    RunningJob,
    Snapshot,
)
from vglobal.admission.fit.gang import PreparedGang, prepare_gang
from vglobal.admission.fit.index import ResourceIndex
from vglobal.admission.fit.placement import Clusters
from vglobal.hub.dispatch.facts import Shared
from vglobal.model.resources import EMPTY, ResourceVector

GPU = "nvidia.com/gpu"
GI = 2**30
NOW = 1_800_000_000.0


def vec(cpu: int, mem_gi: int, gpu: int = 0) -> ResourceVector:
    return ResourceVector({"cpu": cpu * 1000, "memory": mem_gi * GI, GPU: gpu * 1000})


def make_snapshot(
    jobs: int = 100_000,
    clusters: int = 20,
    nodes: int = 500,
    fanout: int = 10,
    running: int = 20_000,
    seed: int = 7,
) -> Snapshot:
    """A deterministic snapshot; the same arguments always give the same snapshot."""
    rng = np.random.default_rng(seed)
    queues, leaves = _queues(rng, fanout, 8 * nodes * clusters // 4)
    # Node inventory: three of every four clusters are GPU clusters.
    node_alloc = [
        [vec(64, 256) if ci % 4 == 3 else vec(96, 1024, 8) for _ in range(nodes)] for ci in range(clusters)
    ]
    used = [[EMPTY for _ in range(nodes)] for _ in range(clusters)]
    running_jobs = _running(rng, running, node_alloc, used, leaves)
    usage: dict[str, ResourceVector] = {}
    for r in running_jobs:
        usage[r.queue] = usage.get(r.queue, EMPTY) + r.request
    cluster_snaps = tuple(
        ClusterSnap(
            f"c{ci:02d}",
            {"region": f"r{ci % 3}", "gpu": "yes" if ci % 4 != 3 else "no"},
            tuple(
                NodeSnap(f"n{ni:04d}", node_alloc[ci][ni] - used[ci][ni], node_alloc[ci][ni])
                for ni in range(nodes)
            ),
        )
        for ci in range(clusters)
    )
    return Snapshot(
        NOW,
        tuple(replace(q, allocated=usage.get(q.name, EMPTY)) for q in queues),
        cluster_snaps,
        _pending(rng, jobs, leaves),
        tuple(running_jobs),
        policy=AdmissionPolicy(max_admissions=0),  # one whole cycle; the benches set a budget apart
    )


def _queues(rng: np.random.Generator, fanout: int, gpu_cap: int) -> tuple[list[QueueSnap], list[str]]:
    """fanout organisations x fanout teams x fanout leaf queues; every third organisation has a
    capability, a few leaves a guarantee."""
    queues: list[QueueSnap] = []
    leaves: list[str] = []
    for a in range(fanout):
        top = f"org{a}"
        cap = vec(200_000, 2_000_000, gpu_cap) if a % 3 == 0 else None
        queues.append(QueueSnap(top, "root", weight=int(rng.integers(1, 10)), capability=cap, created=a))
        for b in range(fanout):
            mid = f"{top}-team{b}"
            queues.append(QueueSnap(mid, top, weight=int(rng.integers(1, 10)), created=b))
            for c in range(fanout):
                leaf = f"{mid}-q{c}"
                guarantee = vec(0, 0, 8) if (a + b + c) % 37 == 0 else EMPTY
                queues.append(
                    QueueSnap(leaf, mid, weight=int(rng.integers(1, 10)), guarantee=guarantee, created=c)
                )
                leaves.append(leaf)
    return queues, leaves


def _running(
    rng: np.random.Generator,
    count: int,
    node_alloc: list[list[ResourceVector]],
    used: list[list[ResourceVector]],
    leaves: list[str],
) -> list[RunningJob]:
    """Single-pod jobs at random nodes, kept where they fit; `used` takes what they use."""
    clusters, nodes = len(node_alloc), len(node_alloc[0]) if node_alloc else 0
    out: list[RunningJob] = []
    for k in range(count):
        ci = int(rng.integers(0, clusters))
        ni = int(rng.integers(0, nodes))
        gpu = ci % 4 != 3
        req = vec(8, 64, int(rng.choice([1, 2, 4, 8]))) if gpu else vec(int(rng.choice([2, 8, 16])), 32)
        if not (used[ci][ni] + req).fits_in(node_alloc[ci][ni]):
            continue
        used[ci][ni] = used[ci][ni] + req
        leaf = leaves[int(rng.integers(0, len(leaves)))]
        priority = int(rng.choice([0, 100]))
        out.append(
            RunningJob(
                f"run-{k:06d}", leaf, f"c{ci:02d}", priority, NOW - 10_000 + k, req, {f"n{ni:04d}": req}
            )
        )
    return out


def _pending(rng: np.random.Generator, count: int, leaves: list[str]) -> tuple[PendingJob, ...]:
    """A skewed queue popularity and a mix of GPU gangs and CPU jobs. Jobs share one object per
    distinct request and gang, as the hub's snapshot cache builds them."""
    shared = Shared()
    popularity = rng.zipf(1.3, size=count) % len(leaves)
    kinds = rng.choice(5, size=count, p=[0.35, 0.2, 0.1, 0.05, 0.3])
    out: list[PendingJob] = []
    for k in range(count):
        kind = int(kinds[k])
        if kind == 0:
            pod, pods = vec(8, 64, 1), 1
        elif kind == 1:
            pod, pods = vec(32, 256, 8), 1
        elif kind == 2:
            pod, pods = vec(32, 256, 8), int(rng.choice([2, 4]))
        elif kind == 3:
            pod, pods = vec(48, 512, 8), int(rng.choice([8, 16, 32]))
        else:
            pod, pods = vec(int(rng.choice([1, 4, 16])), 16), int(rng.choice([1, 2, 10]))
        created = NOW - float(rng.integers(0, 3_600))
        out.append(
            PendingJob(
                uid=f"job-{k:06d}",
                name=f"job-{k}",
                namespace="bench",
                queue=leaves[int(popularity[k])],
                priority=int(rng.choice([0, 0, 0, 100])),
                created=created,
                waiting_since=created,
                request=shared.vector(pod.scale(pods)),
                gang=shared.gang(((shared.vector(pod), pods),)),
                cluster_selector={"gpu": "yes"} if kind in (1, 2, 3) and k % 2 else {},
            )
        )
    return tuple(out)


def first_fit(
    snaps: Sequence[ClusterSnap], names: Iterable[str] = (), policy: str = "binpack"
) -> tuple[ResourceIndex, Clusters, Callable[[Gang], PreparedGang]]:
    """Admission's packing over these clusters' free nodes (first-fit decreasing, nodes in name
    order), as an agent places gangs: the index (their resources and `names`), the clusters, and
    how to put a gang in its form."""
    index = ResourceIndex({r for c in snaps for n in c.nodes for r in n.allocatable} | set(names))
    clusters = Clusters(snaps, index, policy)
    scale = np.maximum(clusters.max_alloc.max(axis=0), 1)
    return index, clusters, lambda spec: prepare_gang(spec, index, scale)


def _without_victims(
    snapshot: Snapshot, result: AdmissionResult, later: frozenset[str] = frozenset()
) -> tuple[Snapshot, dict[str, RunningJob]]:
    """The snapshot with this cycle's reclaimed jobs gone from their nodes and queues' usage, and
    the running jobs left (victims out). Victims taken for a job in `later` leave the queues and the
    running jobs but keep their nodes: they make room just before that job is placed."""
    running = {r.uid: r for r in snapshot.running}
    usage = {q.name: q.allocated for q in snapshot.queues}
    freed: dict[tuple[str, str], ResourceVector] = {}
    for rc in result.reclaims:
        victim = running.pop(rc.victim_uid)
        usage[victim.queue] = usage[victim.queue] - victim.request
        if rc.for_uid in later:
            continue
        for node, v in victim.placements.items():
            freed[(victim.cluster, node)] = freed.get((victim.cluster, node), EMPTY) + v
    queues = tuple(replace(q, allocated=usage[q.name]) for q in snapshot.queues)
    if not freed:
        return replace(snapshot, queues=queues), running
    clusters = tuple(
        replace(c, nodes=tuple(replace(n, free=n.free + freed.get((c.name, n.name), EMPTY)) for n in c.nodes))
        for c in snapshot.clusters
    )
    return replace(snapshot, queues=queues, clusters=clusters), running


def _admitted(snapshot: Snapshot, result: AdmissionResult) -> Iterable[tuple[PendingJob, str]]:
    by_uid = {j.uid: j for j in snapshot.pending}
    for uid in result.admitted_order:
        decision = result.decisions[uid]
        assert isinstance(decision, Admit)
        yield by_uid[uid], decision.cluster


def _with_usage(queues: Iterable[QueueSnap], jobs: Iterable[PendingJob]) -> tuple[QueueSnap, ...]:
    usage = {q.name: q.allocated for q in queues}
    for job in jobs:
        usage[job.queue] = usage[job.queue] + job.request
    return tuple(replace(q, allocated=usage[q.name]) for q in queues)


def next_cycle(snapshot: Snapshot, result: AdmissionResult) -> Snapshot:
    """The snapshot one cycle later: this cycle's admissions run (placed first-fit on their cluster),
    reclaimed jobs are gone from the nodes, everything else still waits.

    Admission placed each job without the room of jobs it reclaimed (they stop later), and a
    preemptor in the room of its victims: the agents' first-fit is replayed the same way."""
    victims = {r.uid: r for r in snapshot.running}
    freed_for: dict[str, list[RunningJob]] = {}
    for rc in result.reclaims:
        freed_for.setdefault(rc.for_uid if rc.preempted else "", []).append(victims[rc.victim_uid])
    snapshot, running = _without_victims(snapshot, result, frozenset(rc.for_uid for rc in result.reclaims))
    index, clusters, prepare = first_fit(
        snapshot.clusters, (r for j in snapshot.pending for r in j.request), snapshot.policy.placement
    )

    def release(gone: Iterable[RunningJob]) -> None:
        for victim in gone:
            c = clusters.col[victim.cluster]
            col = clusters.node_col[c]
            clusters.release(c, {col[n]: index.row(v) for n, v in victim.placements.items() if n in col})

    before = [list(rows) for rows in clusters.rows]  # rows are replaced where a placement goes
    admitted = list(_admitted(snapshot, result))
    for job, cluster in admitted:
        c = clusters.col[cluster]
        release(freed_for.get(job.uid, ()))  # pipelined: its victims make room just before it
        gang = prepare(job.gang)
        placement = clusters.fit(c, gang)
        assert placement is not None, f"{job.uid} does not fit {cluster}"
        node_names = sorted(clusters.node_col[c], key=clusters.node_col[c].__getitem__)
        placements = {
            node_names[i]: index.vector([a - b for a, b in zip(clusters.rows[c][i], row, strict=True)])
            for i, row in placement.rows.items()
        }
        clusters.commit(c, placement, gang)
        running[job.uid] = RunningJob(
            job.uid, job.queue, cluster, job.priority, job.created, job.request, placements
        )
    release(freed_for.get("", ()))  # reclaimed for jobs that wait: they stop after these started
    cluster_snaps = []
    for c, snap in enumerate(clusters.snaps):
        nodes = sorted(snap.nodes, key=lambda n: n.name)
        if all(map(operator.is_, clusters.rows[c], before[c])):
            cluster_snaps.append(snap)  # as the hub's cluster cache: an unchanged node is the same object
            continue
        free = tuple(
            n if clusters.rows[c][i] is before[c][i] else replace(n, free=index.vector(clusters.rows[c][i]))
            for i, n in enumerate(nodes)
        )
        cluster_snaps.append(replace(snap, nodes=free))
    uids = set(result.admitted_order)
    return replace(
        snapshot,
        now=snapshot.now + 1.0,
        queues=_with_usage(snapshot.queues, (job for job, _ in admitted)),
        clusters=tuple(cluster_snaps),
        pending=tuple(j for j in snapshot.pending if j.uid not in uids),
        running=tuple(running.values()),
        claims=result.claims,  # as the hub keeps them between cycles
    )


def next_cycle_dispatched(snapshot: Snapshot, result: AdmissionResult) -> Snapshot:
    """One cycle later, before the agents placed anything: admitted gangs are running without
    placements and held on their cluster as unplaced; reclaimed victims left their nodes and
    are pending again (keeping their creation time), as the hub re-queues them."""
    now = snapshot.now + 1.0
    requeued = []
    for rc in result.reclaims:
        victim = next(r for r in snapshot.running if r.uid == rc.victim_uid)
        gang = tuple((v, 1) for v in victim.placements.values()) or ((victim.request, 1),)
        requeued.append(
            PendingJob(
                victim.uid,
                victim.uid,
                "bench",
                victim.queue,
                victim.priority,
                victim.created,
                now,
                victim.request,
                gang,
            )
        )
    snapshot, running = _without_victims(snapshot, result)
    admitted = list(_admitted(snapshot, result))
    unplaced: dict[str, list[Gang]] = {}
    for job, cluster in admitted:
        unplaced.setdefault(cluster, []).append(job.gang)
        running[job.uid] = RunningJob(
            job.uid, job.queue, cluster, job.priority, job.created, job.request, running_since=now
        )
    uids = set(result.admitted_order)
    return replace(
        snapshot,
        now=now,
        queues=_with_usage(snapshot.queues, (job for job, _ in admitted)),
        clusters=tuple(
            replace(c, unplaced=c.unplaced + tuple(unplaced.get(c.name, ()))) for c in snapshot.clusters
        ),
        pending=tuple(j for j in snapshot.pending if j.uid not in uids) + tuple(requeued),
        running=tuple(running.values()),
        claims=result.claims,
    )


def grouped(snap: Snapshot, before: PendingByQueue | None) -> PendingByQueue:
    """The snapshot's pending jobs per queue as the dispatch cache keeps them: a queue whose jobs
    are the ones it had keeps its tuple (the same object)."""
    lists: dict[str, list[PendingJob]] = {}
    for job in snap.pending:
        got = lists.get(job.queue)
        if got is None:
            got = lists[job.queue] = []
        got.append(job)
    old = before.by_queue if before is not None else {}
    by_queue: dict[str, tuple[PendingJob, ...]] = {}
    for queue, jobs in lists.items():
        now, had = tuple(jobs), old.get(queue)
        same = had is not None and len(had) == len(now) and all(map(operator.is_, had, now))
        by_queue[queue] = had if same and had is not None else now
    return PendingByQueue(by_queue)
