"""Decision digests: a SHA-256 of everything admit() decides on four seeded workloads.

    .venv/bin/python bench/decisions_digest.py [--small] [--workload NAME ...]

Each workload is decided over consecutive cycles, the next cycle fed with the previous one's
admissions as running (and its reclaims gone). A digest covers every decision (uid -> Admit
cluster | Wait kind and reason), the admission order, every reclaim and every queue figure
(QueueStatus). Equal digests before and after a change of admission's code show that it decides
exactly as before; a digest that moves names the workload and cycle where a decision changed.

Workloads (all built from bench/dispatch.py's generator, then shaped):
- dispatch: the dispatch bench as it is (100k pending, 1,110 queues, 20 x 500 nodes), three cycles
  and the first cycle again with an admission budget;
- reclaim: full clusters, most jobs starving, reclaim gated by waiting and run time, a short
  queue look-back; admissions come back as dispatched-but-unplaced gangs and victims re-queue;
- topology: three-tier HyperNodes of uneven ToRs, a third of the gangs hard (tier 1, 2 or any),
  some soft;
- guarantee: many guarantees, capabilities and explicit deserved shares in the tree, closed and
  prioritised queues, jobs sent to non-leaf, closed and missing queues or bigger than every
  cluster together, spread placement.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import make_snapshot, next_cycle, next_cycle_dispatched

from vglobal.admission import (
    AdmissionResult,
    Admit,
    ClusterSnap,
    HyperNodeSnap,
    Snapshot,
    Wait,
    admit,
)
from vglobal.model.resources import ResourceVector

Step = Callable[[Snapshot, AdmissionResult], Snapshot]
GPU = "nvidia.com/gpu"
GI = 2**30


@dataclass(frozen=True)
class Workload:
    name: str
    first: Snapshot
    steps: tuple[Step, ...]  # each makes the next cycle's snapshot from the last one and its result
    variants: tuple[tuple[str, Snapshot], ...] = ()  # other snapshots decided once, on their own


# --- digests -----------------------------------------------------------------------------------
def _vec(v: ResourceVector | None) -> str:
    return "-" if v is None else ",".join(f"{k}={n}" for k, n in sorted(v.items()))


def lines(result: AdmissionResult) -> Iterable[str]:
    """The result as text lines in a fixed order: what the digest hashes."""
    for uid in sorted(result.decisions):
        d = result.decisions[uid]
        if isinstance(d, Admit):
            yield f"D {uid} admit {d.cluster}" + (f" {d.preempting}" if d.preempting else "")
        else:
            yield f"D {uid} wait {d.kind.value} {d.reason}"
    yield "O " + " ".join(result.admitted_order)
    for r in result.reclaims:
        yield f"R {r.victim_uid} {r.cluster} {r.for_uid} {r.reason}" + (" preempted" if r.preempted else "")
    for e in result.evictions:
        yield f"E {e.job_uid} {e.cluster} {e.for_uid} {' '.join(e.pods)} {e.reason}"
    for name in sorted(result.queues):
        q = result.queues[name]
        yield (
            f"Q {q.name} alloc {_vec(q.allocated)} deserved {_vec(q.deserved)} "
            f"realcap {_vec(q.real_capability)} guarantee {_vec(q.guarantee)} "
            f"pending {q.pending} running {q.running} admitted {q.admitted}"
        )


def digest(result: AdmissionResult) -> str:
    h = hashlib.sha256()
    for line in lines(result):
        h.update(line.encode())
        h.update(b"\n")
    return h.hexdigest()


def summary(result: AdmissionResult) -> str:
    kinds = Counter(d.kind.value for d in result.decisions.values() if isinstance(d, Wait))
    waits = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    return (
        f"{len(result.decisions)} pending, {len(result.admitted_order)} admitted, "
        f"{len(result.reclaims)} reclaims; waits: {waits}"
    )


def decide(workload: Workload) -> list[tuple[str, AdmissionResult]]:
    """Every cycle of the workload, in order, with its result."""
    out: list[tuple[str, AdmissionResult]] = []
    snap = workload.first
    result = admit(snap)
    out.append(("cycle 1", result))
    for k, step in enumerate(workload.steps, start=2):
        snap = step(snap, result)
        result = admit(snap)
        out.append((f"cycle {k}", result))
    for label, variant in workload.variants:
        out.append((label, admit(variant)))
    return out


def workload_digest(cycles: list[tuple[str, AdmissionResult]]) -> str:
    h = hashlib.sha256()
    for label, result in cycles:
        h.update(f"{label} {digest(result)}\n".encode())
    return h.hexdigest()


# --- the four workloads ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Scale:
    jobs: int
    clusters: int
    nodes: int
    running: int
    fanout: int


FULL = {
    "dispatch": Scale(100_000, 20, 500, 20_000, 10),
    "reclaim": Scale(30_000, 8, 150, 40_000, 8),
    "topology": Scale(20_000, 10, 200, 6_000, 6),
    "guarantee": Scale(30_000, 10, 200, 8_000, 6),
}
SMALL = {
    "dispatch": Scale(3_000, 4, 40, 600, 4),
    "reclaim": Scale(1_500, 3, 16, 1_500, 3),
    "topology": Scale(1_500, 4, 48, 300, 3),
    "guarantee": Scale(2_000, 4, 32, 400, 4),
}


def _base(s: Scale, seed: int) -> Snapshot:
    return make_snapshot(s.jobs, s.clusters, s.nodes, s.fanout, s.running, seed)


def dispatch_workload(s: Scale, budget: int) -> Workload:
    snap = _base(s, 7)
    return Workload(
        "dispatch",
        snap,
        (next_cycle, next_cycle),
        (("cycle 1 with an admission budget", replace(snap, policy=replace(snap.policy, max_admissions=budget))),),
    )


def reclaim_workload(s: Scale) -> Workload:
    base = _base(s, 11)
    rng = np.random.default_rng(11)
    now = base.now
    leaves = sorted({j.queue for j in base.pending} | {r.queue for r in base.running})
    sturdy = {q for q in leaves if rng.random() < 0.1}  # not reclaimable
    queues = tuple(replace(q, reclaimable=q.name not in sturdy) for q in base.queues)
    since = rng.integers(0, 7_200, size=len(base.running))
    known = rng.random(len(base.running)) < 0.7
    running = tuple(
        replace(r, running_since=now - float(t) if k else None)
        for r, t, k in zip(base.running, since.tolist(), known.tolist(), strict=True)
    )
    names = [c.name for c in base.clusters]
    pending = []
    for j, roll in zip(base.pending, rng.random(len(base.pending)).tolist(), strict=True):
        if roll < 0.05:
            j = replace(j, excluded_clusters=frozenset(names[: 1 + int(roll * 100) % len(names)]))
        elif roll < 0.08:
            j = replace(j, allowed_clusters=frozenset(names[int(roll * 1000) % len(names) :]))
        pending.append(j)
    snap = replace(
        base,
        queues=queues,
        running=running,
        pending=tuple(pending),
        policy=replace(
            base.policy, starvation_after=300.0, reclaim_after=120.0, reclaim_min_runtime=1_800.0, queue_lookback=40
        ),
    )
    return Workload("reclaim", snap, (next_cycle_dispatched, next_cycle_dispatched))


def _hypernodes(c: ClusterSnap, rng: np.random.Generator) -> tuple[HyperNodeSnap, ...]:
    """ToRs (tier 1) of 4 to 24 nodes in name order, four ToRs to an aggregation (tier 2), one
    spine (tier 3)."""
    nodes = sorted(n.name for n in c.nodes)
    tors: list[tuple[str, ...]] = []
    at = 0
    while at < len(nodes):
        size = int(rng.integers(4, 25))
        tors.append(tuple(nodes[at : at + size]))
        at += size
    spine = f"{c.name}-spine"
    out = [HyperNodeSnap(spine, 3, None, tuple(nodes))]
    for a in range(0, len(tors), 4):
        agg = f"{c.name}-agg{a // 4}"
        group = tors[a : a + 4]
        out.append(HyperNodeSnap(agg, 2, spine, tuple(n for t in group for n in t)))
        out.extend(HyperNodeSnap(f"{c.name}-tor{a + k}", 1, agg, t) for k, t in enumerate(group))
    return tuple(out)


def topology_workload(s: Scale) -> Workload:
    base = _base(s, 5)
    rng = np.random.default_rng(5)
    clusters = tuple(
        c if k % 5 == 4 else replace(c, hypernodes=_hypernodes(c, rng)) for k, c in enumerate(base.clusters)
    )
    modes: list[tuple[str, int | None] | None] = [("hard", 1), ("hard", 2), ("hard", None), ("soft", 1)]
    picks = rng.choice(len(modes) + 3, size=len(base.pending)).tolist()
    pending = tuple(
        replace(j, network_topology=modes[p]) if p < len(modes) else j
        for j, p in zip(base.pending, picks, strict=True)
    )
    snap = replace(base, clusters=clusters, pending=pending)
    return Workload("topology", snap, (next_cycle_dispatched, next_cycle_dispatched))


def _gpus(n: int, cpu: int = 0) -> ResourceVector:
    return ResourceVector({GPU: n * 1000, "cpu": cpu * 1000})


def guarantee_workload(s: Scale) -> Workload:
    base = _base(s, 3)
    rng = np.random.default_rng(3)
    big = max(1, s.nodes // 40)  # guarantees grow with the clusters
    parents = {q.parent for q in base.queues}
    queues = []
    for q in base.queues:
        roll = float(rng.random())
        if q.name in parents and q.parent != "root":  # a team
            cap = _gpus(int(rng.integers(16, 160)), int(rng.integers(200, 2000))) if roll < 0.4 else None
            q = replace(q, capability=cap or q.capability, open=roll < 0.97)
        elif q.name in parents:  # an organisation
            q = replace(q, priority=1 if roll < 0.3 else 0)
        elif roll < 0.15:
            q = replace(q, guarantee=_gpus(int(rng.integers(1, 6)) * 8 * big, int(rng.integers(0, 64))))
        elif roll < 0.35:
            q = replace(q, capability=_gpus(int(rng.integers(0, 40)), int(rng.integers(8, 400))))
        elif roll < 0.45:
            q = replace(q, deserved=_gpus(int(rng.integers(0, 64))))
        elif roll < 0.5:
            q = replace(q, open=False)
        queues.append(q)
    # the last leaf spent its GPU-hour budget (no rng drawn: the other queues are as before)
    last = max(i for i, q in enumerate(queues) if q.name not in parents)
    spent = f"queue {queues[last].name} spent 12 of its 10 GPU-hour budget over the last 30 days"
    queues[last] = replace(queues[last], over_budget=spent)
    teams = sorted(n for n in parents if n and n != "root")
    pending = []
    for j, roll in zip(base.pending, rng.random(len(base.pending)).tolist(), strict=True):
        if roll < 0.01:
            j = replace(j, queue=teams[int(roll * 10_000) % len(teams)])
        elif roll < 0.015:
            j = replace(j, queue="no-such-queue")
        elif roll < 0.02:  # more than all clusters together
            pod = _gpus(8, 1_000_000)
            j = replace(j, request=pod.scale(4), gang=((pod, 4),))
        pending.append(j)
    snap = replace(base, queues=tuple(queues), pending=tuple(pending), policy=replace(base.policy, placement="spread"))
    return Workload("guarantee", snap, (next_cycle, next_cycle))


def workloads(small: bool, names: Iterable[str] | None = None) -> list[Workload]:
    scale = SMALL if small else FULL
    makers: dict[str, Callable[[], Workload]] = {
        "dispatch": lambda: dispatch_workload(scale["dispatch"], 200 if small else 5000),
        "reclaim": lambda: reclaim_workload(scale["reclaim"]),
        "topology": lambda: topology_workload(scale["topology"]),
        "guarantee": lambda: guarantee_workload(scale["guarantee"]),
    }
    return [makers[n]() for n in (names or makers)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", action="store_true", help="small workloads (seconds, for tests)")
    parser.add_argument("--workload", action="append", choices=sorted(FULL), help="only these (repeatable)")
    args = parser.parse_args(argv)
    cmd = "python bench/decisions_digest.py " + " ".join(sys.argv[1:] if argv is None else argv)
    print(f"`{cmd.strip()}`\n")
    everything = hashlib.sha256()
    for name in args.workload or sorted(FULL):
        t = time.perf_counter()
        (w,) = workloads(args.small, [name])
        cycles = decide(w)
        print(f"{name} ({time.perf_counter() - t:.1f} s)")
        for label, result in cycles:
            print(f"  {label}: {digest(result)}  ({summary(result)})")
        total = workload_digest(cycles)
        everything.update(f"{name} {total}\n".encode())
        print(f"  workload: {total}")
    print(f"\nall: {everything.hexdigest()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
