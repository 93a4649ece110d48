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
        "cycle 1": "9aefbc5b6c891a056e2982b3bffb600fc9c0139eeeee5cb0df7dce35b2b43bea",
        "cycle 2": "d6e8f10bddec36e1df43ac1bae7eb0be87261cb980ee0f29df03414bf489e98a",
        "cycle 3": "bedf576344127902438645abb916c0375528a28e1a086c5eec4732f115de1fa9",
        "cycle 1 with an admission budget": "446e4ff7820038460983617527f87ebe6ee88488a1793be144b216ec3b7c4550",
    },
    "reclaim": {
        "cycle 1": "a41be2569a15ca177590a16c865f6b7b0c9cf8dd49c59e00f87faccd94dacb29",
        "cycle 2": "3d6b09d308f898d4f5ae00036066f5b0d6d89b22417a6b2aaf7814ba9159f051",
        "cycle 3": "b9cb8dfe436bd7ab607bb652044d1ea76b3d1bdf71b2bb59c2efa4c28879a8e0",
    },
    "topology": {
        "cycle 1": "b9c1f4b36a08f4e52f465c1a68b2d337fcbbe94c3a287f49ffe4925d6551e9ed",
        "cycle 2": "6cb15c8d2393b5b9e0d3bbde25634f465ef4b4404f3847ad428e19d869c7c0e6",
        "cycle 3": "1aeb5da528a613104dbe3d435aa6fa9281d7478bdfe2861b3ec15df5cd7b0d44",
    },
    "guarantee": {
        "cycle 1": "3ef9a67e0548874bf2ef98f9feec60e61b2f03f6f9325f9eb20baede65174de1",
        "cycle 2": "03ea9b73e186f116fbf34d0061bca564128baae2066d911e3f5168462a0412ad",
        "cycle 3": "031ec50cd95b900dc96a25f5834f39d9c313d89a7dbff376959064a8b5df279c",
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
