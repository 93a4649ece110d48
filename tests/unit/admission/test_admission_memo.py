"""A cycle handed the last cycles' memo decides exactly as one that starts from scratch, over a
seeded random sequence of cycles: admissions run, jobs finish, new jobs arrive, waiting jobs are
re-specified (a new object under the same uid) and leave."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from bench.decisions_digest import digest, workloads
from bench.workload import grouped as workload_grouped
from bench.workload import next_cycle, next_cycle_dispatched
from vglobal.admission import GroupRef, PendingByQueue, Snapshot, admit
from vglobal.admission.fit.index import ResourceIndex
from vglobal.admission.fit.node_rows import NodeRows
from vglobal.admission.memo import Memo
from vglobal.admission.queue_jobs import summarise, update
from vglobal.admission.snapshot import NodeSnap
from vglobal.model.resources import EMPTY, ResourceVector


def _churn(snap: Snapshot, rng: random.Random, k: int) -> Snapshot:
    """Some running jobs finish (their nodes and queues get their room back), some pending jobs
    are re-specified or deleted, new ones arrive as copies of pending ones."""
    running = list(snap.running)
    gone = set(rng.sample(range(len(running)), min(len(running), rng.randint(0, 30))))
    usage = {q.name: q.allocated for q in snap.queues}
    freed: dict[tuple[str, str], object] = {}
    for i in gone:
        r = running[i]
        usage[r.queue] = usage[r.queue] - r.request
        for node, v in r.placements.items():
            freed[(r.cluster, node)] = freed.get((r.cluster, node), EMPTY) + v  # type: ignore[operator]
    clusters = tuple(
        replace(
            c,
            nodes=tuple(
                replace(n, free=n.free + freed[(c.name, n.name)]) if (c.name, n.name) in freed else n
                for n in c.nodes
            ),
        )  # type: ignore[operator]
        for c in snap.clusters
    )
    pending = list(snap.pending)
    for i in rng.sample(range(len(pending)), min(len(pending), 20)):
        pending[i] = replace(pending[i], priority=pending[i].priority + rng.choice([-10, 10]))
    for i in sorted(rng.sample(range(len(pending)), min(len(pending), 10)), reverse=True):
        del pending[i]
    new = [
        replace(j, uid=f"{j.uid}-n{k}", name=f"{j.name}-n{k}", created=snap.now, waiting_since=snap.now)
        for j in rng.sample(snap.pending, min(len(snap.pending), rng.randint(0, 40)))
    ]
    return replace(
        snap,
        queues=tuple(replace(q, allocated=usage[q.name]) for q in snap.queues),
        clusters=clusters,
        pending=tuple(pending + new),
        running=tuple(r for i, r in enumerate(running) if i not in gone),
    )


@pytest.mark.parametrize("name", ["dispatch", "reclaim", "guarantee"])
def test_a_cycle_with_the_memo_decides_as_one_from_scratch(name: str) -> None:
    (workload,) = workloads(small=True, names=[name])
    rng = random.Random(name)
    memo = Memo()
    snap = workload.first
    took_over = [0, 0, 0, 0]
    for k in range(6):  # enough cycles that each kind of memo is taken over at least once
        scratch = admit(snap)
        kept = admit(snap, memo)
        assert digest(kept) == digest(scratch), f"cycle {k + 1}"
        assert kept.queues == scratch.queues, f"cycle {k + 1}"  # every figure, not only the digest's
        took_over = [a + b for a, b in zip(took_over, [*memo.reused, memo.nodes.reused], strict=True)]
        step = next_cycle if k % 2 == 0 else next_cycle_dispatched
        snap = _churn(step(snap, scratch), rng, k)
    # orders, jobs, shares and node rows were taken over, not all derived afresh
    assert all(took_over), took_over


@pytest.mark.parametrize("name", ["dispatch", "reclaim", "guarantee"])
def test_jobs_handed_in_per_queue_decide_as_one_flat_tuple(name: str) -> None:
    """Pending jobs grouped per queue, with and without a memo, over cycles where clusters free
    room, queues' jobs are re-specified, leave and arrive: the decisions of a flat tuple."""
    (workload,) = workloads(small=True, names=[name])
    rng = random.Random(name + "grouped")
    memo = Memo()
    snap = workload.first
    before: PendingByQueue | None = None
    took_over = [0, 0]
    indexed = 0
    for k in range(4):
        scratch = admit(snap)
        grouped = replace(snap, pending=workload_grouped(snap, before))
        assert isinstance(grouped.pending, PendingByQueue)
        before = grouped.pending
        assert digest(admit(grouped)) == digest(scratch), f"cycle {k + 1}, no memo"
        assert digest(admit(grouped, memo)) == digest(scratch), f"cycle {k + 1}, memo"
        if grouped.claims:  # the memo's jobs by uid, where claims find theirs: the ones handed in
            indexed += 1
            assert memo.by_uid.keys() == {p.uid for p in grouped.pending}
            assert all(memo.by_uid[p.uid] is p for p in grouped.pending)
        took_over = [a + b for a, b in zip(took_over, memo.reused[:2], strict=True)]
        step = next_cycle if k % 2 == 0 else next_cycle_dispatched
        snap = _churn(step(snap, scratch), rng, k)
    assert all(took_over), took_over  # unchanged queues' summaries were taken over
    assert indexed or name != "reclaim"  # its cycles after the first carry claims


def test_a_queue_summary_updated_is_the_one_derived_afresh() -> None:
    """queue_jobs.update from the last summary and the jobs now equals summarise of the jobs now:
    over random gone, new, re-specified jobs and HyperJob children."""
    (workload,) = workloads(small=True, names=["dispatch"])
    pool = list(workload.first.pending)
    rng = random.Random(7)
    jobs = rng.sample(pool, 40)
    summary = summarise(tuple(jobs))
    for k in range(30):
        jobs = [j for j in jobs if rng.random() > 0.1]
        for i in rng.sample(range(len(jobs)), min(len(jobs), 3)):
            jobs[i] = replace(jobs[i], priority=jobs[i].priority + rng.choice([-5, 5]))
        for j in rng.sample(pool, rng.randint(0, 8)):
            group = GroupRef(f"ns/h{k}", 1, 2, 0) if rng.random() < 0.2 else None
            jobs.insert(rng.randint(0, len(jobs)), replace(j, uid=f"{j.uid}-{k}", group=group))
        summary = update(summary, tuple(jobs))
        fresh = summarise(tuple(jobs))
        assert summary.ordered == fresh.ordered and summary.grouped == fresh.grouped
        assert list(summary.lone) == list(fresh.lone)
        assert sorted(summary.requests.items()) == sorted(fresh.requests.items())
        assert sorted(summary.gangs) == sorted(fresh.gangs) and all(
            summary.gangs[g][1] == fresh.gangs[g][1] for g in fresh.gangs
        )


def test_node_rows_are_made_again_only_for_changed_nodes_and_a_changed_index() -> None:
    """A cluster's rows taken over per unchanged node object equal rows made afresh: with one node
    replaced, one added, and a resource new to the index."""
    (workload,) = workloads(small=True, names=["dispatch"])
    cluster = workload.first.clusters[0]
    rows = NodeRows()

    def check(nodes: list[NodeSnap], index: ResourceIndex) -> int:
        rows.start()
        rows.index(index)
        free, alloc, col = rows.rows(cluster.name, nodes, index)
        rows.done()
        assert free == [[max(v, 0) for v in index.row(n.free)] for n in nodes]
        assert alloc.tolist() == [index.row(n.allocatable) for n in nodes]
        assert col == {n.name: i for i, n in enumerate(nodes)}
        return rows.reused

    nodes = list(cluster.nodes)
    index = ResourceIndex({r for n in nodes for r in (*n.free, *n.allocatable)})
    assert check(nodes, index) == 0
    assert check(nodes, index) == len(nodes)
    nodes[1] = replace(nodes[1], free=nodes[1].free + ResourceVector({"cpu": 1}))
    assert check(nodes, index) == len(nodes) - 1
    nodes.append(replace(nodes[0], name="zz-new"))
    assert check(nodes, index) == 0  # the node count changed: every row made again
    wider = ResourceIndex((*index.names, "example.com/fpga"))
    assert check(nodes, wider) == 0
    assert check(nodes, wider) == len(nodes)


def test_a_cluster_with_no_nodes_has_no_names_from_the_first_cycle_on() -> None:
    """A cluster registered with no nodes yet (a new agent) names no resource, in its first cycle
    and in the next."""
    (workload,) = workloads(small=True, names=["dispatch"])
    empty = replace(workload.first.clusters[0], name="bare", nodes=())
    rows = NodeRows()
    for _ in range(2):
        rows.start()
        assert rows.names([empty]) == set()
        rows.done()
