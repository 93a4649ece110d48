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
        "cycle 2": "470b35bd7f4f88e0bb37f753d89b8f4fbe795213d4b719e6d77d2691d1fa946f",
        "cycle 3": "5ff09e2e5cda083223a3d152b2f60011bc21137f9c681cf863318f4d23a9c371",
        "cycle 1 with an admission budget": "6f69ba3e0978441ecdb10c01c7b34be4a249ef83338a5fd5d8aaa569ef46b718",
    },
    "reclaim": {
        "cycle 1": "2ac5359b42401e899fb3ec27bbaf7cb505f941c2485bdd9dbe526542aa9caf8b",
        "cycle 2": "f8966414ad7ec675f7e26f0d35243d43076daf83adc2ccf60bd475d1016415a8",
        "cycle 3": "11fecc30c3a2364e435f3318229bce598751e74acd6d24e8d5824a7527b455c2",
    },
    "topology": {
        "cycle 1": "55d74838be5de54ce7706fe8fc74eee5ad1304684f9834df1e275ce7129ddbc6",
        "cycle 2": "e488b9a39e55802d102a2c279566ad092beb2c2d36e75d5cbc55312b49f9810e",
        "cycle 3": "0f73488caf327639e968ab3d12969bf1ac3eed395efb074aee23729c6794098c",
    },
    "guarantee": {
        "cycle 1": "8b70bb922db0da7de8b0103d6f7980850dee2dfb84ce53392728a5ecc8604011",
        "cycle 2": "72872e71b459d536fc7e382483d0734500d21a272e57a104efcea312e041d321",
        "cycle 3": "ad195b6ea0546c69110bf6098fbf47347e469f89339af81b272e842fefaaa85b",
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
