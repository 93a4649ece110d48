"""Dispatch benchmark: pure admit() over 100k pending jobs, 1,000 queues, 20 clusters x 500 nodes.

    .venv/bin/python bench/dispatch.py [--jobs 100000] [--repeat 3] [--seed 7]

Prints a Markdown table: our admit() (decisions/s, cycle time, admissions) beside Volcano Global's
dispatcher rule (round-robin one job per queue per round, capability checked against the sum of all
clusters, no per-cluster gang fit), with how many of the baseline's admissions fit no cluster.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace

import numpy as np

from vglobal.admission import (
    AdmissionResult,
    Admit,
    ClusterSnap,
    NodeSnap,
    PendingJob,
    QueueSnap,
    RunningJob,
    Snapshot,
    admit,
)
from vglobal.admission.index import ResourceIndex
from vglobal.admission.placement import Clusters, prepare_gang
from vglobal.hub.dispatch.facts import Shared
from vglobal.model.resources import ResourceVector, total

GPU = "nvidia.com/gpu"
GI = 2**30
NOW = 1_800_000_000.0


def _vec(cpu: int, mem_gi: int, gpu: int = 0) -> ResourceVector:
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
    queues: list[QueueSnap] = []
    leaves: list[str] = []
    for a in range(fanout):
        top = f"org{a}"
        cap = _vec(200_000, 2_000_000, 8 * nodes * clusters // 4) if a % 3 == 0 else None
        queues.append(QueueSnap(top, "root", weight=int(rng.integers(1, 10)), capability=cap, created=a))
        for b in range(fanout):
            mid = f"{top}-team{b}"
            queues.append(QueueSnap(mid, top, weight=int(rng.integers(1, 10)), created=b))
            for c in range(fanout):
                leaf = f"{mid}-q{c}"
                guarantee = _vec(0, 0, 8) if (a + b + c) % 37 == 0 else ResourceVector()
                queues.append(
                    QueueSnap(leaf, mid, weight=int(rng.integers(1, 10)), guarantee=guarantee, created=c)
                )
                leaves.append(leaf)
    # Node inventory: three of every four clusters are GPU clusters.
    node_alloc: list[list[ResourceVector]] = []
    for ci in range(clusters):
        if ci % 4 == 3:
            node_alloc.append([_vec(64, 256) for _ in range(nodes)])
        else:
            node_alloc.append([_vec(96, 1024, 8) for _ in range(nodes)])
    # Running jobs (single pods) placed first-fit at random nodes; they set node free and queue usage.
    used = [[ResourceVector() for _ in range(nodes)] for _ in range(clusters)]
    alloc_by_queue: dict[str, ResourceVector] = {}
    running_jobs: list[RunningJob] = []
    for k in range(running):
        ci = int(rng.integers(0, clusters))
        ni = int(rng.integers(0, nodes))
        gpu = ci % 4 != 3
        req = _vec(8, 64, int(rng.choice([1, 2, 4, 8]))) if gpu else _vec(int(rng.choice([2, 8, 16])), 32)
        if not (used[ci][ni] + req).fits_in(node_alloc[ci][ni]):
            continue
        used[ci][ni] = used[ci][ni] + req
        leaf = leaves[int(rng.integers(0, len(leaves)))]
        alloc_by_queue[leaf] = alloc_by_queue.get(leaf, ResourceVector()) + req
        running_jobs.append(
            RunningJob(
                f"run-{k:06d}",
                leaf,
                f"c{ci:02d}",
                int(rng.choice([0, 100])),
                NOW - 10_000 + k,
                req,
                {f"n{ni:04d}": req},
            )
        )
    queues = [
        QueueSnap(
            q.name,
            q.parent,
            q.weight,
            q.priority,
            q.capability,
            q.deserved,
            q.guarantee,
            q.reclaimable,
            q.open,
            alloc_by_queue.get(q.name, ResourceVector()),
            q.created,
        )
        for q in queues
    ]
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
    # Pending jobs: a skewed queue popularity and a mix of GPU gangs and CPU jobs.
    # Jobs share one object per distinct request and gang, as the hub's snapshot cache builds them.
    shared = Shared()
    popularity = rng.zipf(1.3, size=jobs) % len(leaves)
    kinds = rng.choice(5, size=jobs, p=[0.35, 0.2, 0.1, 0.05, 0.3])
    pending: list[PendingJob] = []
    for k in range(jobs):
        kind = int(kinds[k])
        if kind == 0:
            pod, count = _vec(8, 64, 1), 1
        elif kind == 1:
            pod, count = _vec(32, 256, 8), 1
        elif kind == 2:
            pod, count = _vec(32, 256, 8), int(rng.choice([2, 4]))
        elif kind == 3:
            pod, count = _vec(48, 512, 8), int(rng.choice([8, 16, 32]))
        else:
            pod, count = _vec(int(rng.choice([1, 4, 16])), 16), int(rng.choice([1, 2, 10]))
        created = NOW - float(rng.integers(0, 3_600))
        pending.append(
            PendingJob(
                uid=f"job-{k:06d}",
                name=f"job-{k}",
                namespace="bench",
                queue=leaves[int(popularity[k])],
                priority=int(rng.choice([0, 0, 0, 100])),
                created=created,
                waiting_since=created,
                request=shared.vector(pod.scale(count)),
                gang=shared.gang(((shared.vector(pod), count),)),
                cluster_selector={"gpu": "yes"} if kind in (1, 2, 3) and k % 2 else {},
            )
        )
    return Snapshot(NOW, tuple(queues), cluster_snaps, tuple(pending), tuple(running_jobs))


@dataclass
class Baseline:
    admitted: list[str]
    seconds: float


def volcano_global_rule(snapshot: Snapshot) -> Baseline:
    """Volcano Global's dispatcher: one job per queue per round, queues by priority, capability against
    the sum of ALL clusters' allocatable, no gang fit on any one cluster, no fair share."""
    start = time.perf_counter()
    everything = total(n.allocatable for c in snapshot.clusters for n in c.nodes)
    caps = {
        q.name: (q.capability.minimum(everything) if q.capability else everything) for q in snapshot.queues
    }
    alloc = {q.name: q.allocated for q in snapshot.queues}
    by_queue: dict[str, list[PendingJob]] = {}
    for job in snapshot.pending:
        by_queue.setdefault(job.queue, []).append(job)
    order = sorted(
        (q for q in snapshot.queues if q.name in by_queue), key=lambda q: (-q.priority, q.created, q.name)
    )
    for jobs in by_queue.values():
        jobs.sort(key=lambda j: (-j.priority, j.created, j.uid))
    cursor = dict.fromkeys(by_queue, 0)
    admitted: list[str] = []
    live = [q.name for q in order]
    while live:
        nxt = []
        for name in live:
            jobs = by_queue[name]
            i = cursor[name]
            job = jobs[i]
            cursor[name] = i + 1
            if (alloc[name] + job.request).fits_in(caps[name]):
                alloc[name] = alloc[name] + job.request
                admitted.append(job.uid)
            if i + 1 < len(jobs):
                nxt.append(name)
        live = nxt
    return Baseline(admitted, time.perf_counter() - start)


def unplaceable(snapshot: Snapshot, uids: list[str]) -> int:
    """How many of these admissions, placed in order, fit no single cluster's free nodes."""
    by_uid = {j.uid: j for j in snapshot.pending}
    names = {r for j in snapshot.pending for r in j.request} | {
        r for c in snapshot.clusters for n in c.nodes for r in n.allocatable
    }
    index = ResourceIndex(names)
    clusters = Clusters(snapshot.clusters, index, "binpack")
    scale = np.maximum(clusters.max_alloc.max(axis=0), 1)
    bad = 0
    for uid in uids:
        job = by_uid[uid]
        gang = prepare_gang(job.gang, index, scale)
        for c in clusters.ranked(clusters.candidates(job), gang):
            placement = clusters.fit(c, gang)
            if placement is not None:
                clusters.commit(c, placement, gang)
                break
        else:
            bad += 1
    return bad


def next_cycle(snapshot: Snapshot, result: AdmissionResult) -> Snapshot:
    """The snapshot one cycle later: this cycle's admissions run (placed first-fit on their cluster),
    reclaimed jobs are gone from the nodes, everything else still waits."""
    names = {r for c in snapshot.clusters for n in c.nodes for r in n.allocatable}
    names |= {r for j in snapshot.pending for r in j.request}
    index = ResourceIndex(names)
    clusters = Clusters(snapshot.clusters, index, snapshot.placement)
    scale = np.maximum(clusters.max_alloc.max(axis=0), 1)
    by_uid = {j.uid: j for j in snapshot.pending}
    usage = {q.name: q.allocated for q in snapshot.queues}
    running = {r.uid: r for r in snapshot.running}
    freed: dict[tuple[str, str], ResourceVector] = {}
    for rc in result.reclaims:
        victim = running.pop(rc.victim_uid)
        for node, vec in victim.placements.items():
            freed[(victim.cluster, node)] = freed.get((victim.cluster, node), ResourceVector()) + vec
        usage[victim.queue] = usage[victim.queue] - victim.request
    if freed:  # reclaimed jobs are gone from their nodes before this cycle's admissions are placed
        snapshot = replace(
            snapshot,
            clusters=tuple(
                replace(
                    c,
                    nodes=tuple(
                        replace(n, free=n.free + freed.get((c.name, n.name), ResourceVector()))
                        for n in c.nodes
                    ),
                )
                for c in snapshot.clusters
            ),
        )
        clusters = Clusters(snapshot.clusters, index, snapshot.placement)
    for uid in result.admitted_order:
        job = by_uid[uid]
        decision = result.decisions[uid]
        assert isinstance(decision, Admit)
        c = clusters.col[decision.cluster]
        gang = prepare_gang(job.gang, index, scale)
        placement = clusters.fit(c, gang)
        assert placement is not None, f"{uid} does not fit {decision.cluster}"
        node_names = sorted(clusters.node_col[c], key=clusters.node_col[c].__getitem__)
        placements = {
            node_names[i]: index.vector([a - b for a, b in zip(clusters.rows[c][i], row, strict=True)])
            for i, row in placement.rows.items()
        }
        clusters.commit(c, placement, gang)
        running[uid] = RunningJob(
            uid, job.queue, decision.cluster, job.priority, job.created, job.request, placements
        )
        usage[job.queue] = usage[job.queue] + job.request
    cluster_snaps = []
    for c, snap in enumerate(clusters.snaps):
        nodes = sorted(snap.nodes, key=lambda n: n.name)
        cluster_snaps.append(
            replace(
                snap,
                nodes=tuple(replace(n, free=index.vector(clusters.rows[c][i])) for i, n in enumerate(nodes)),
            )
        )
    admitted = set(result.admitted_order)
    return replace(
        snapshot,
        now=snapshot.now + 1.0,
        queues=tuple(replace(q, allocated=usage[q.name]) for q in snapshot.queues),
        clusters=tuple(cluster_snaps),
        pending=tuple(j for j in snapshot.pending if j.uid not in admitted),
        running=tuple(running.values()),
    )


def timed(snapshot: Snapshot, repeat: int) -> tuple[AdmissionResult, list[float]]:
    times = []
    result = None
    for _ in range(repeat):
        t = time.perf_counter()
        result = admit(snapshot)
        times.append(time.perf_counter() - t)
    assert result is not None
    return result, times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--clusters", type=int, default=20)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--running", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--budget", type=int, default=5000, help="--max-admissions-per-cycle for the budgeted first cycle"
    )
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    snap = make_snapshot(args.jobs, args.clusters, args.nodes, running=args.running, seed=args.seed)
    gen = time.perf_counter() - t0
    first, times = timed(snap, args.repeat)
    second_snap = next_cycle(snap, first)
    second, times2 = timed(second_snap, args.repeat)
    capped_snap = replace(snap, max_admissions=args.budget)
    capped, times3 = timed(capped_snap, args.repeat)
    assert capped.admitted_order == first.admitted_order[: args.budget]  # the same order, cut short
    base = volcano_global_rule(snap)
    bad = unplaceable(snap, base.admitted)
    cmd = "python bench/dispatch.py " + " ".join(sys.argv[1:] if argv is None else argv)
    print(
        f"`{cmd.strip()}` (snapshot built in {gen:.1f} s; {len(snap.pending)} pending, "
        f"{len(snap.queues)} queues, {len(snap.clusters)} clusters x {args.nodes} nodes, "
        f"{len(snap.running)} running)\n"
    )
    print(
        f"| rule | pending | cycle (best of {args.repeat}) | decisions/s | admitted | admitted but fit no "
        "cluster | reclaims |"
    )
    print("|---|---|---|---|---|---|---|")
    for label, sn, res, ts in (
        ("first cycle", snap, first, times),
        ("next cycle", second_snap, second, times2),
        (f"first cycle, at most {args.budget} admissions", capped_snap, capped, times3),
    ):
        best = min(ts)
        print(
            f"| vglobal admit(), {label} | {len(sn.pending)} | {best * 1000:.0f} ms | "
            f"{len(sn.pending) / best:,.0f} | {len(res.admitted_order)} | 0 | {len(res.reclaims)} |"
        )
    print(
        f"| Volcano Global round-robin, first cycle | {len(snap.pending)} | {base.seconds * 1000:.0f} ms | "
        f"{len(snap.pending) / base.seconds:,.0f} | {len(base.admitted)} | {bad} | 0 |"
    )
    print(
        f"\nall cycle times: first {', '.join(f'{t * 1000:.0f} ms' for t in times)}; "
        f"next {', '.join(f'{t * 1000:.0f} ms' for t in times2)}; "
        f"budgeted {', '.join(f'{t * 1000:.0f} ms' for t in times3)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
