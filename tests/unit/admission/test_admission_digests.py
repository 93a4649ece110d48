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
        "cycle 1": "b462a8bc95844bdcd8bc9dc26ad2690501dca797c0df8a91c7cab9528289200a",
        "cycle 2": "0327d8e1c44c93b86072570763179d2c458f5258489030abebb3223508f5d4fb",
        "cycle 3": "019c8fad21be86732318b4a31b32aa434a986af5557310f95b5c5ed5b1021e86",
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
