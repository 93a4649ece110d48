"""Pinned decisions: admit() decides the small seeded workloads of bench/decisions_digest.py exactly
as recorded. A digest covers every decision (cluster, or wait kind and reason), the admission
order, every reclaim and every queue figure, over three consecutive cycles.

A change that is meant to alter decisions updates the pins (run
`.venv/bin/python bench/decisions_digest.py --small`) and says why in its commit; any other change
must leave them as they are.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.decisions_digest import decide, digest, workloads
from vglobal.admission import Wait
from vglobal.model.reasons import ADMISSION_KINDS, WaitKind

PINNED = {
    "dispatch": {
        "cycle 1": "90cd36ed5a1d08c307dc6b7af85a272c4a97c187a4117e40d8fecd20b16c887c",
        "cycle 2": "7dd8e5b04a2eb0594cf2ef4ebf825b97b7bea7f1bdd50206fd4175062ceb4c45",
        "cycle 3": "3703e2a1d2d368abd74279a96864d627943dbc805c89c76ea52b11d2fbd814af",
        "cycle 1 with an admission budget": "c5377a376b1e5c87097ff90a4d81a11639c324aeaedf18b11e41c072afc3a5e2",
    },
    "reclaim": {
        "cycle 1": "0304d8e0537680e9cd5bd945dff22ce14f6ab58b0a15c0f266c9a7046ee2fff6",
        "cycle 2": "8917dfadb1d10911ecb44eae4754c2495f9710ed90a0d104039f9f81c1284d5d",
        "cycle 3": "5bf36bd8438b8d63d55a14d9c8b14ef85bde57a02f9cc73793d25763bf6c8210",
    },
    "topology": {
        "cycle 1": "fef9a0433b404eea1db66433c5459bb91ab55432486e7f3f95f15f6ae654967d",
        "cycle 2": "343d2869a85fbcfb996c94246fe545c87a25d8ef1f518fb7857f88d5b3af599d",
        "cycle 3": "0d3b91018706161e44641576524621eae141f11028a226a51da51030c7048fe4",
    },
    "guarantee": {
        "cycle 1": "87b13837e92837ca9957f3a5befa9d8dbf698c49d607ba4716e1f60e3fe88f0a",
        "cycle 2": "1b5fd96eaeb77a3471838ed87c23186b922afe5d03e784bb357c5b350bb63e92",
        "cycle 3": "c8e402840df5f96040c02bac153bda178666030fff1521fcffd1e58b72c6e621",
    },
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_decisions_match_the_pinned_digests(name: str) -> None:
    (workload,) = workloads(small=True, names=[name])
    got = {label: digest(result) for label, result in decide(workload)}
    assert got == PINNED[name]


def test_the_workloads_reach_every_kind_of_wait_and_the_digest_sees_one_changed_reason() -> None:
    kinds: set[WaitKind] = set()
    first = None
    for workload in workloads(small=True):
        for _, result in decide(workload):
            first = first or result
            kinds |= {d.kind for d in result.decisions.values() if isinstance(d, Wait)}
    assert kinds == ADMISSION_KINDS  # so a change on any path of admission moves a pinned digest
    assert first is not None
    uid, wait = next((u, d) for u, d in first.decisions.items() if isinstance(d, Wait))
    edited = replace(first, decisions={**first.decisions, uid: replace(wait, reason=wait.reason + ".")})
    assert digest(edited) != digest(first)
