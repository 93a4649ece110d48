"""What the hub's card fit costs a cycle: one admit() of gangs asking for whole GPUs or vGPUs on
20 clusters x 100 nodes of 8 A100 cards each, with the agents' card tables and without (node totals
only). Reports process CPU time, which a loaded machine disturbs less than wall time.

    PYTHONPATH=. .venv/bin/python bench/cards.py [--jobs 5000] [--pods 4]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from vglobal.admission import (
    AdmissionPolicy,
    Admit,
    ClusterSnap,
    NodeSnap,
    PendingJob,
    QueueSnap,
    Snapshot,
    admit,
)
from vglobal.model.cards import CardFree
from vglobal.model.resources import ResourceVector

CARDS = 8
CARD_MIB = 81920

UNBUDGETED = AdmissionPolicy(max_admissions=0)


def _node(name: str) -> NodeSnap:
    alloc = ResourceVector(
        {
            "cpu": 64000,
            "nvidia.com/gpu": CARDS * 1000,
            "volcano.sh/vgpu-number": CARDS * 10 * 1000,
            "volcano.sh/vgpu-memory": CARDS * CARD_MIB * 1000,
        }
    )
    return NodeSnap(name, alloc, alloc)


def _clusters() -> tuple[ClusterSnap, ...]:
    cards = tuple(CardFree(CARD_MIB, CARD_MIB, 100, 10, 10, "A100") for _ in range(CARDS))
    names = [f"n{i:03d}" for i in range(100)]
    return tuple(
        ClusterSnap(f"c{c:02d}", {}, tuple(_node(n) for n in names), devices=dict.fromkeys(names, cards))
        for c in range(20)
    )


def _job(k: int, pod: ResourceVector, pods: int) -> PendingJob:
    return PendingJob(
        uid=f"j{k:06d}",
        name=f"j{k}",
        namespace="ns",
        queue=f"q{k % 10}",
        priority=0,
        created=float(k),
        waiting_since=float(k),
        request=pod.scale(pods),
        gang=((pod, pods),),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=4)
    args = ap.parse_args()
    clusters = _clusters()
    blind = tuple(replace(c, devices={}) for c in clusters)
    shapes = {
        "whole GPU": ResourceVector({"cpu": 4000, "nvidia.com/gpu": 1000}),
        "vGPU 20000 MiB": ResourceVector(
            {"cpu": 1000, "volcano.sh/vgpu-number": 1000, "volcano.sh/vgpu-memory": 20_000_000}
        ),
    }
    print(f"{args.jobs} gangs of {args.pods} pods, 20 clusters x 100 nodes x {CARDS} cards")
    print("| gangs ask for | card tables | cycle (CPU) | admitted |")
    print("|---|---|---|---|")
    for name, pod in shapes.items():
        pending = tuple(_job(k, pod, args.pods) for k in range(args.jobs))
        queues = tuple(QueueSnap(f"q{i}") for i in range(10))
        for label, cs in (("reported", clusters), ("none", blind)):
            snap = Snapshot(now=0.0, queues=queues, clusters=cs, pending=pending, policy=UNBUDGETED)
            start = time.process_time()
            result = admit(snap)
            spent = time.process_time() - start
            placed = sum(1 for d in result.decisions.values() if isinstance(d, Admit))
            print(f"| {name} | {label} | {spent * 1000:.0f} ms | {placed} |")


if __name__ == "__main__":
    main()
