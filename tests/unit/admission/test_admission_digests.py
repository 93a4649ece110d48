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
        "cycle 1": "feb0516a9f889264b35ebec3009ca7d40d66dac0611286602cbab8d08976f5df",
        "cycle 2": "e9ae02785ea27f23aef1001060c9f5918d4598c64d65c284cde581ff73fc6b60",
        "cycle 3": "7aa0e0d538db20503f1acc65cf19363cbe905bed1f6892d97ba2122926098ce3",
        "cycle 1 with an admission budget": "6f69ba3e0978441ecdb10c01c7b34be4a249ef83338a5fd5d8aaa569ef46b718",
    },
    "reclaim": {
        "cycle 1": "37ceb60f72ebd1450248d053d96b139051b408c5e1e396237c5c45c83ae988c3",
        "cycle 2": "dc35ac1b139b219f17bedbc796617cd32f845b3a74aea74de6ab23e734c78dcd",
        "cycle 3": "ce1a4b1c83b95130146509174414c15ee557b006444c929d121c5252bc4ffa28",
    },
    "topology": {
        "cycle 1": "04b593b65b3e85b8d1477919b3794379dfeafc09a2519f5fb142427b273d995a",
        "cycle 2": "c61200781c6df8681ee16836459c4b029bcd9f3f5535c77624260a438da059a4",
        "cycle 3": "16522b11577739a39163e926969fa6395312769d6510ef582ce70e14a22c7a95",
    },
    "guarantee": {
        "cycle 1": "d009ad64f08f093e909dc96a0dda63026c6b38d0ce66fec1dbd873349d1c328d",
        "cycle 2": "a67e02af56430026d13cae24252de0c957d1bfce7b3e77d6bc68c52a28aa05be",
        "cycle 3": "d62fc0672f8477d87c7ae0ae5ec709e48189603a11e40fdb782d7aa1c14fdd73",
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
