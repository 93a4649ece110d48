"""The cycle ledger (vglobal/admission/ledger.py): a random trial through the cycle's own planners
(gangs placed on nodes and GPU cards within node-group limits, queue charges given and taken,
victims taken, room freed, decisions and admissions) rolled back leaves everything as it was at
its checkpoint; nested checkpoints, kept or rolled back in any order, too."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.admission.builders import job
from vglobal.admission import Admit, ClusterSnap, NodeSnap, PendingJob, QueueSnap, Snapshot, Wait
from vglobal.admission.admit import _Cycle
from vglobal.admission.ledger import Ledger, Mark
from vglobal.model.cards import CardFree
from vglobal.model.queue_affinity import NODE_GROUP_LABEL
from vglobal.model.reasons import WaitKind
from vglobal.model.resources import ResourceVector

GPU, MEM, NUM = "nvidia.com/gpu", "volcano.sh/vgpu-memory", "volcano.sh/vgpu-number"


def _card_node(name: str, cards: int, free_mib: int) -> tuple[NodeSnap, tuple[CardFree, ...]]:
    cs = tuple(CardFree(24000, free_mib, 100, 10, 10, "A100", 0) for _ in range(cards))
    free = ResourceVector({"cpu": 16000, GPU: cards * 1000, NUM: cards * 10_000, MEM: cards * free_mib * 1000})
    alloc = ResourceVector({"cpu": 16000, GPU: cards * 1000, NUM: cards * 10_000, MEM: cards * 24_000_000})
    return NodeSnap(name, free, alloc, {NODE_GROUP_LABEL: "g1" if cards % 2 else "g2"}), cs


@st.composite
def cycles(draw: st.DrawFn) -> _Cycle:
    """A small cycle: a cluster of GPU cards, a plain one, queues with node-group limits."""
    carded = [_card_node(f"c-n{i}", draw(st.integers(1, 4)), draw(st.sampled_from([24000, 12000]))) for i in range(3)]
    plain = tuple(
        NodeSnap(f"p-n{i}", ResourceVector({"cpu": 8000 * k, GPU: 1000 * k}), ResourceVector({"cpu": 32000, GPU: 4000}))
        for i, k in enumerate(draw(st.lists(st.integers(0, 4), min_size=1, max_size=4)))
    )
    clusters = (
        ClusterSnap("cards", {}, tuple(n for n, _ in carded), devices={n.name: cs for n, cs in carded}),
        ClusterSnap("plain", {}, plain),
    )
    limits = {"g1": ResourceVector({GPU: draw(st.integers(1, 6)) * 1000})}
    queues = (QueueSnap("a", node_group_limits=limits), QueueSnap("b"))
    shapes = [
        ResourceVector({"cpu": 1000, GPU: 1000}),
        ResourceVector({"cpu": 1000, NUM: 1000, MEM: 8_000_000}),
        ResourceVector({"cpu": 4000}),
    ]
    pending = tuple(
        job(f"j{k}", draw(st.sampled_from(["a", "b"])), shapes[k] if k < 2 else draw(st.sampled_from(shapes)), draw(st.integers(1, 3)))
        for k in range(draw(st.integers(2, 8)))
    )  # a whole-GPU job and a vGPU one at least
    return _Cycle(Snapshot(now=100.0, queues=queues, clusters=clusters, pending=pending))


def state(cycle: _Cycle) -> bytes:
    """Everything a cycle changes (learnt misfits and caches aside: they stay true after a rollback)."""
    cl, dev = cycle.clusters, cycle.devices
    parts: list[Any] = [
        cl.rows,
        cl.tot,
        cl.full,
        cl.free_sum,
        [sorted(c.items()) for c in cl._cursor],
        cycle.tree.alloc,
        cycle.checks.admitted,
        [sorted(n.items()) for n in dev.nodes],
        dev.shared,
        dev._deferred,
        sorted((k, v.tolist()) for k, v in cycle.prep.group_limits._usage().items()),
        sorted(cycle.preempt.taken),
        sorted(cycle.ledger.decisions.items(), key=lambda kv: kv[0]),
        cycle.ledger.admitted,
        cycle.claims.made,
    ]
    return pickle.dumps(parts)


def _job(cycle: _Cycle, pending: PendingJob) -> Any:
    return cycle.prep.job_of(pending, cycle.tree.idx[pending.queue])


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("checkpoint")),
        st.tuples(st.just("keep")),
        st.tuples(st.just("rollback")),
        st.tuples(st.just("place"), st.integers(0, 7)),
        st.tuples(st.just("charge"), st.integers(0, 7)),
        st.tuples(st.just("give back"), st.integers(0, 7)),
        st.tuples(st.just("free"), st.integers(0, 1), st.integers(0, 3), st.integers(0, 3000)),
        st.tuples(st.just("take"), st.integers(0, 20)),
        st.tuples(st.just("decide"), st.integers(0, 7)),
        st.tuples(st.just("claim"), st.integers(0, 7)),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(cycles(), st.lists(st.integers(0, 7), max_size=4), OPS)
def test_a_rollback_leaves_the_cycle_as_it_was_at_its_checkpoint(
    cycle: _Cycle, before: list[int], ops: list[tuple[Any, ...]]
) -> None:
    ledger, pending = cycle.ledger, cycle.snap.pending
    for k in before:  # jobs placed before the trial (whole GPUs: their cards are taken later)
        p = pending[k % len(pending)]
        cycle.fit.place(_job(cycle, p), {}, cycle.devices.packer(p))
    outer = state(cycle)
    top = ledger.checkpoint()  # the trial's own
    marks: list[tuple[Mark, bytes]] = []  # nested in it
    for op in ops:
        kind = op[0]
        if kind == "checkpoint":
            marks.append((ledger.checkpoint(), state(cycle)))
        elif kind == "keep" and marks:
            ledger.keep(marks.pop()[0])
        elif kind == "rollback" and marks:
            mark, before = marks.pop()
            ledger.rollback(mark)
            assert state(cycle) == before
        elif kind == "place":
            p = pending[op[1] % len(pending)]
            j = _job(cycle, p)
            c = cycle.fit.place(j, {}, cycle.devices.packer(p))
            if c is not None:
                ledger.admit(p.uid, Admit(cycle.clusters.names[c]))
        elif kind == "charge":
            cycle.checks.charge(_job(cycle, pending[op[1] % len(pending)]))
        elif kind == "give back":
            j = _job(cycle, pending[op[1] % len(pending)])
            cycle.checks.release(j.leaf, [v // 2 for v in j.req])
        elif kind == "free":
            c, row, amount = op[1], op[2], op[3]
            if row < len(cycle.clusters.rows[c]):
                cycle.clusters.release(c, {row: [amount] * cycle.prep.index.size})
        elif kind == "take":
            ledger.add(cycle.preempt.taken, [f"victim-{op[1]}"])
        elif kind == "decide":
            ledger.decide(pending[op[1] % len(pending)].uid, Wait(WaitKind.NoFit, f"op {len(ops)}"))
        elif kind == "claim":
            cycle.claims.make(pending[op[1] % len(pending)].uid, "plain", ["p-n0"], [f"victim-{op[1]}"])
    while marks:
        mark, before = marks.pop()
        ledger.rollback(mark)
        assert state(cycle) == before
    ledger.rollback(top)
    assert state(cycle) == outer and not ledger.open


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["checkpoint", "keep", "rollback", "put", "add", "set", "array", "later"]), st.integers(0, 5)), max_size=50))
def test_every_kind_of_write_is_undone_and_kept_effects_wait_for_the_outermost(ops: list[tuple[str, int]]) -> None:
    ledger = Ledger()
    d: dict[int, int] = {}
    s: set[int] = set()
    seq = [0] * 6
    arr = np.zeros((6, 2))
    done: list[int] = []
    marks: list[tuple[Mark, bytes]] = []
    promised: list[list[int]] = []  # per open checkpoint, the effects asked for under it

    def snap() -> bytes:
        return pickle.dumps((sorted(d.items()), sorted(s), seq, arr.tolist(), ledger.decisions, ledger.admitted))

    for kind, k in ops:
        if kind == "checkpoint":
            marks.append((ledger.checkpoint(), snap()))
            promised.append([])
        elif kind == "keep" and marks:
            ledger.keep(marks.pop()[0])
            kept = promised.pop()
            if promised:
                promised[-1] += kept
            else:
                assert done[-len(kept) :] == kept if kept else True
        elif kind == "rollback" and marks:
            mark, before = marks.pop()
            promised.pop()
            count = len(done)
            ledger.rollback(mark)
            assert snap() == before and len(done) == count
        elif kind == "put":
            ledger.put(d, k, len(ops))
        elif kind == "add":
            ledger.add(s, [k, k + 1])
        elif kind == "set":
            ledger.set_at(seq, k, seq[k] + 1)
            ledger.admit(f"u{k}", Admit("c"))
        elif kind == "array":
            ledger.set_at(arr, k, arr[k] + 1.5)
        elif kind == "later":
            ledger.when_kept(lambda k=k: done.append(k))
            if promised:
                promised[-1].append(k)
            else:
                assert done[-1] == k
    assert ledger.open == bool(marks)
