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
        "cycle 1": "5b99734c01c3d177e37431950438517e0a9a622f066f66759254855c38c4a2ba",
        "cycle 2": "f85761a601565ceea15eb6f1da87e2ad417b3c4f3428b9d18a50cf04493eec94",
        "cycle 3": "577e85ba8ebae3b3caca8b8e50aac0b5a903b53b4069104b41b4d53a53717fb4",
        "cycle 1 with an admission budget": "099a358ccc2af67589d7c8f0aebad34f01de9d878cee9c2989ff215fcecfa5e2",
    },
    "reclaim": {
        "cycle 1": "ee476ae4f6808ac1ca4beba8db5dba9c462a7ca2745f83ecc5d06d424164c523",
        "cycle 2": "d47235711b323502dfe0531b8c58a13a146e2e770d23b5f941e895d5720e1b8c",
        "cycle 3": "6da92aa940aeba5e93900bde251902996dea5abaa881119ad16987d61766723a",
    },
    "topology": {
        "cycle 1": "213fa85a7afce34d3247b02bf4d9f4801b2e0024a7c865a262461c833bded06c",
        "cycle 2": "99de2d4694f2bac5b8cf60364e18b37c9b8028e359e90d2fe76c2ba8d0e24db2",
        "cycle 3": "0454b57c8e5075276fb1d6924649f65c666fbd5610487cf8c2e31b31f89fcbc7",
    },
    "guarantee": {
        "cycle 1": "3077112e03283453740f519595799cb1f05ca371c003908ac607a007e6b779bd",
        "cycle 2": "a376e52717a15b84d4aea12d0c6b378ce7008b279daa1d5717193d8d019ff370",
        "cycle 3": "56165f79583bf6fe853346b8f5e665a60c00d6c149783f928d6c58df40495b94",
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
