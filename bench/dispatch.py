"""Dispatch benchmark: pure admit() over 100k pending jobs, 1,000 queues, 20 clusters x 500 nodes.

    .venv/bin/python bench/dispatch.py [--jobs 100000] [--repeat 3] [--seed 7] [--kinds-mix 0.1] [--taints 2]

Prints a Markdown table: our admit() (decisions/s, cycle time, admissions) beside Volcano Global's
dispatcher rule (round-robin one job per queue per round, capability checked against the sum of all
clusters, no per-cluster gang fit), with how many of the baseline's admissions fit no cluster.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from vglobal.admission import AdmissionResult, GroupRef, PendingJob, Snapshot, admit
from vglobal.model.placement_config import parse_placement_config
from vglobal.model.resources import ResourceVector, total
from vglobal.model.served import MISSING, served_label

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import first_fit, make_snapshot, next_cycle, vec

# Gangs shaped as the kinds' readers derive them (model/kinds): a JobSet's leader and its workers'
# replicas x parallelism, a PyTorchJob's master and workers, a TrainJob's numNodes; each written as
# its API resource, which one cluster's agent says it lacks.
KIND_SHAPES: tuple[tuple[str, tuple[tuple[ResourceVector, int], ...]], ...] = (
    ("jobsets.jobset.x-k8s.io", ((vec(4, 16), 1), (vec(32, 256, 8), 4))),
    ("pytorchjobs.kubeflow.org", ((vec(16, 128, 8), 1), (vec(16, 128, 8), 3))),
    ("trainjobs.trainer.kubeflow.org", ((vec(32, 256, 8), 2),)),
)


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
    _, clusters, prepare = first_fit(snapshot.clusters, (r for j in snapshot.pending for r in j.request))
    bad = 0
    for uid in uids:
        job = by_uid[uid]
        gang = prepare(job.gang)
        for c in clusters.ranked(clusters.candidates(job), gang):
            placement = clusters.fit(c, gang)
            if placement is not None:
                clusters.commit(c, placement, gang)
                break
        else:
            bad += 1
    return bad


def with_hyperjobs(snapshot: Snapshot, count: int) -> Snapshot:
    """Every k-th pending job made a child of one of ``count`` HyperJobs of 3 (same queue each)."""
    pending = list(snapshot.pending)
    step = max(len(pending) // (3 * count), 1)
    picked = list(range(0, len(pending), step))[: 3 * count]
    by_queue: dict[str, list[int]] = {}
    for i in picked:
        by_queue.setdefault(pending[i].queue, []).append(i)
    made = 0
    for _, idx in sorted(by_queue.items()):
        for k in range(0, len(idx) - 2, 3):
            if made >= count:
                break
            key = f"bench/hj-{made}"
            for child, i in enumerate(idx[k : k + 3]):
                pending[i] = replace(pending[i], group=GroupRef(key, 3, 3, child))
            made += 1
    return replace(snapshot, pending=tuple(pending))


def with_kinds(snapshot: Snapshot, fraction: float) -> Snapshot:
    """Every (1/fraction)-th pending job made a JobSet, PyTorchJob or TrainJob gang, in turn; the
    first cluster lacks TrainJob, as an agent whose API does not serve it says."""
    if fraction <= 0:
        return snapshot
    step = max(round(1 / fraction), 1)
    pending = list(snapshot.pending)
    requests = {w: total(r.scale(n) for r, n in gang) for w, gang in KIND_SHAPES}
    for turn, i in enumerate(range(0, len(pending), step)):
        workload, gang = KIND_SHAPES[turn % len(KIND_SHAPES)]
        pending[i] = replace(pending[i], workload=workload, gang=gang, request=requests[workload])
    clusters = list(snapshot.clusters)
    if clusters:
        lacking = {**clusters[0].labels, served_label(KIND_SHAPES[2][0]): MISSING}
        clusters[0] = replace(clusters[0], labels=lacking)
    return replace(snapshot, pending=tuple(pending), clusters=tuple(clusters))


def with_taints(snapshot: Snapshot, count: int) -> Snapshot:
    """A placement file tainting the first ``count`` clusters, NoSchedule and PreferNoSchedule in
    turn (no job tolerates either): every job then passes the placement stages' filters and scores."""
    if count <= 0:
        return snapshot
    names = sorted(c.name for c in snapshot.clusters)[:count]
    effects = ("NoSchedule", "PreferNoSchedule")
    doc = {"taints": {n: [f"bench-{i}=true:{effects[i % 2]}"] for i, n in enumerate(names)}}
    return replace(snapshot, policy=replace(snapshot.policy, placement_config=parse_placement_config(doc)))


CPU: list[float] = []  # each timed cycle's CPU seconds, in the order run


def timed(snapshot: Snapshot, repeat: int) -> tuple[AdmissionResult, list[float]]:
    times = []
    result = None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        result = admit(snapshot)
        times.append(time.perf_counter() - t)
        CPU.append(time.process_time() - c)
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
        "--hyperjobs", type=int, default=0, help="make this many HyperJobs of 3 children out of pending jobs"
    )
    parser.add_argument(
        "--budget", type=int, default=5000, help="--max-admissions for the budgeted first cycle"
    )
    parser.add_argument(
        "--kinds-mix",
        type=float,
        default=0.0,
        help="this fraction of the pending jobs as JobSet/PyTorchJob/TrainJob-shaped gangs",
    )
    parser.add_argument(
        "--taints", type=int, default=0, help="a placement file tainting this many clusters (see with_taints)"
    )
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    snap = make_snapshot(args.jobs, args.clusters, args.nodes, running=args.running, seed=args.seed)
    if args.hyperjobs:
        snap = with_hyperjobs(snap, args.hyperjobs)
    snap = with_taints(with_kinds(snap, args.kinds_mix), args.taints)
    gen = time.perf_counter() - t0
    first, times = timed(snap, args.repeat)
    second_snap = next_cycle(snap, first)
    second, times2 = timed(second_snap, args.repeat)
    capped_snap = replace(snap, policy=replace(snap.policy, max_admissions=args.budget))
    capped, times3 = timed(capped_snap, args.repeat)
    # The same order, cut short (a HyperJob is admitted whole, so it may pass the budget by its size).
    assert capped.admitted_order == first.admitted_order[: len(capped.admitted_order)]
    base = volcano_global_rule(snap)
    bad = unplaceable(snap, base.admitted)
    cmd = "python bench/dispatch.py " + " ".join(sys.argv[1:] if argv is None else argv)
    print(
        f"`{cmd.strip()}` (snapshot built in {gen:.1f} s; {len(snap.pending)} pending, "
        f"{len(snap.queues)} queues, {len(snap.clusters)} clusters x {args.nodes} nodes, "
        f"{len(snap.running)} running, {args.hyperjobs} of the pending HyperJobs of 3 children, "
        f"{args.kinds_mix:g} of them JobSet/PyTorchJob/TrainJob gangs, {args.taints} clusters tainted)\n"
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
        f"budgeted {', '.join(f'{t * 1000:.0f} ms' for t in times3)}; "
        f"CPU of each {', '.join(f'{c:.2f} s' for c in CPU)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
