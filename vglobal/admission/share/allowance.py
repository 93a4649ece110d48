"""A capped queue's room for pods beyond gangs, split among the clusters that run its jobs.

Admission charges a job its gang (minAvailable pods); the pods beyond it are placed by the agents
as room allows. Two clusters that each see the queue's whole room left would both fill it (a 7-cpu
queue running 8). So each cycle the room a capped queue has left, its capability less what it
holds on every cluster (placed pods, at least each gang, and the gangs just admitted), is handed
out pod by pod to the jobs that have pods beyond what they hold, in job order (priority, then
creation, then uid), each within the room of every capped queue of its chain and within what its
cluster's nodes have free: what a cluster's jobs are given is its allowance. The allowances of a
queue never add up to more than its room, so every agent staying within its own keeps the queue
within its capability. Room nobody is given now stays for the next cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from vglobal.model.resources import ResourceVector

Units = dict[str, int]


@dataclass(frozen=True, slots=True)
class Elastic:
    """An admitted job that has pods beyond what it holds (beyond its gang, not placed yet)."""

    uid: str
    queue: str
    cluster: str
    priority: int
    created: float
    beyond: ResourceVector  # what its pods not placed beyond the gang would take in all
    shapes: tuple[ResourceVector, ...]  # one pod of each of its tasks


def _order(j: Elastic) -> tuple[int, float, str]:
    return (-j.priority, j.created, j.uid)


def split_room(
    capability: Mapping[str, ResourceVector | None],
    parents: Mapping[str, str | None],
    held: Mapping[str, Mapping[str, Mapping[str, int]]],
    jobs: Iterable[Elastic],
    free: Mapping[str, Mapping[str, int]],
) -> dict[str, dict[str, Units]]:
    """queue -> cluster -> allowance, for every queue with a capability (``capability``: its real
    capability, None: unlimited). ``held``: queue -> cluster -> what it holds there, its
    descendants' included; ``free``: cluster -> what its nodes have free beyond the gangs admitted
    to it. A capped queue's clusters without an allowance are given none (an empty entry)."""
    capped = {q: c for q, c in capability.items() if c is not None}
    room: dict[str, Units] = {}
    for q, cap in capped.items():
        used: Units = {}
        for units in held.get(q, {}).values():
            for r, v in units.items():
                used[r] = used.get(r, 0) + v
        room[q] = {r: max(v - used.get(r, 0), 0) for r, v in cap.items()}
    out: dict[str, dict[str, Units]] = {q: {c: {} for c in held.get(q, {})} for q in capped}
    if not capped:
        return out
    chains: dict[str, tuple[str, ...]] = {}
    left = {c: dict(v) for c, v in free.items()}
    for job in sorted(jobs, key=_order):
        chain = chains.get(job.queue)
        if chain is None:
            chain = chains[job.queue] = _capped_chain(job.queue, parents, capped)
        if not chain:
            continue
        want = dict(job.beyond)
        nodes = left.setdefault(job.cluster, {})
        given: Units = {}
        for shape in job.shapes:
            n = _pods(shape, want, nodes, [room[q] for q in chain])
            if n <= 0:
                continue
            for r, v in shape.items():
                take = v * n
                want[r] = want.get(r, 0) - take
                nodes[r] = nodes.get(r, 0) - take
                given[r] = given.get(r, 0) + take
                for q in chain:
                    if r in room[q]:
                        room[q][r] -= take
        if given:
            for q in chain:
                mine = out[q].setdefault(job.cluster, {})
                for r, v in given.items():
                    if r in capped[q]:
                        mine[r] = mine.get(r, 0) + v
    return out


def _pods(
    shape: Mapping[str, int], want: Mapping[str, int], nodes: Mapping[str, int], rooms: list[Units]
) -> int:
    """How many pods of ``shape`` fit in what the job still wants, its cluster's free room and
    every capped queue's room (on the resources that queue's capability names)."""
    n: int | None = None
    for r, v in shape.items():
        if v <= 0:
            continue
        bound = min(want.get(r, 0), nodes.get(r, 0))
        for room in rooms:
            if r in room:
                bound = min(bound, room[r])
        k = max(bound, 0) // v
        n = k if n is None else min(n, k)
        if n == 0:
            return 0
    return n or 0


def _capped_chain(
    queue: str, parents: Mapping[str, str | None], capped: Mapping[str, object]
) -> tuple[str, ...]:
    """The queue and its ancestors that have a capability (a cycle in the tree cannot loop)."""
    out: list[str] = []
    name: str | None = queue
    for _ in range(len(parents) + 1):
        if name is None or name not in parents:
            break
        if name in capped:
            out.append(name)
        name = parents.get(name)
    return tuple(out)
