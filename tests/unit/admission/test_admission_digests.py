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
        "cycle 1": "6a49e59e09088722d667372ba404a079fcd2c3d3f253d9fb7854046336ed1192",
        "cycle 2": "89283a3f97b2f3ba72cbfa28da8d24dec581a341710b663e2ddab45b2002d55c",
        "cycle 3": "03c6dfed678e0fe044d2de94e1f29fdff391356f5ede724366db7cdc40d068cb",
        "cycle 1 with an admission budget": "1ab0d41ac4cf092b8f1671481c879886ffa205a3cf7c8a34ff6f2970ce65a936",
    },
    "reclaim": {
        "cycle 1": "2b9dbf91c5372c0a67a6e960895184b0bf31ffc94aa86526025e9fc14db6f72d",
        "cycle 2": "b868534463bbf07d19664b928ac07a3ff46f2c4a3268b06a34462a3b98931fd7",
        "cycle 3": "a527d551892f6ebb887e7a9277b69911acf01d7271e53267026418bf9b040067",
    },
    "topology": {
        "cycle 1": "121ec811694c57d010f98a637c5324a3b0bd23ef1494c816936fc39fb122c46b",
        "cycle 2": "77dc73534f5d4aea5fbffb3773282be8e598c3db8fea84913c187f0887496009",
        "cycle 3": "b300b3442907a85e357b938cb0b70312e2e14f6c55f001fefbfe50529ae31e6d",
    },
    "guarantee": {
        "cycle 1": "9fd77aaaca0422589a6e49a24b21717b6996cac6818f648b241bb7f0779ccf19",
        "cycle 2": "cf22f70772d26f72bd41a8c777b61b72d809957e346c3fa1c7878df1e8aa8bde",
        "cycle 3": "5960777b96cfb2c495934d2c107903c4c82dcedf033633c14d1021ad143c3087",
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
