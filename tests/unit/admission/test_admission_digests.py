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
        "cycle 1": "52fb13045b7ae0249b3852a33f37e224db0879b01407be1198a80262376a9e00",
        "cycle 2": "d92187f8649443a7a6c28666b6cf7db3875f93deb28bedbcce3c5a74b6fdcf66",
        "cycle 3": "8333fc8f1fd3be8154c6383f9d1673980ef64f191d32306f842e3a99f7f348ef",
        "cycle 1 with an admission budget": "08fba1316b180c60a135775051bda6a5268add4cdc89e52b38d4d53edf1fd910",
    },
    "reclaim": {
        "cycle 1": "4cf202a53c259095c5fb11e37431aa6d1595f2f97ba4638f5a0aef491f80365b",
        "cycle 2": "5f9e7dd1b06e3efc6883417b2aa3a8f0eb394025c08cacac68fb2c08e0c1c1fe",
        "cycle 3": "e2a13679b665673548b64bea027565b032f0a860266a387a67de53f7bf71a63b",
    },
    "topology": {
        "cycle 1": "eef69a9bbe666daa12698d95ea2dbf02b294e2c695efca392bb745f42d2aa72d",
        "cycle 2": "439fb0affb72085090ca81b5889284a47d66fd56349a2d227ad4c5793b391192",
        "cycle 3": "29d54a89fe22b39ed79166fd14156aecce678fe3c68bcd97073340d9c6876c44",
    },
    "guarantee": {
        "cycle 1": "4ebfc189e91078b6bdeff0d320e8b47c9d9affc38e8c1f328658d124934ab3de",
        "cycle 2": "cbf2aaf68edf64d0aae2cc98a5d23200c03241a0d524c6642d6e5008f116bd9f",
        "cycle 3": "98f377d47b2eddb5f73dafea2cb18be2aa5a9e469eed9a46a21e2a2002212836",
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
