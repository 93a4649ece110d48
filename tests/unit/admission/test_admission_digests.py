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
        "cycle 1": "831e1c3ecfcee03493829b0ed5971b5b97b96a3281ec7499f8efc908a8db136e",
        "cycle 2": "7ae92fde9a59b5034cddf2bb51714cad45601f803a4a9fca0ff3786c7dff6c5a",
        "cycle 3": "df5ead53bec9a07efdd9ff0d6496543bd5386a74560cd14e7d87a0c961690e44",
        "cycle 1 with an admission budget": "a9555175746cd87a5c78c9aa3fa4d35f93117c66bb19826fe1063e797bd3bc3d",
    },
    "reclaim": {
        "cycle 1": "ee476ae4f6808ac1ca4beba8db5dba9c462a7ca2745f83ecc5d06d424164c523",
        "cycle 2": "79250b3040454dc193760fe459fbaed635569bb4bbe92cb45bd144f38f9c5fb8",
        "cycle 3": "39d3f472a273dc3d1a00fcbc3f7688ce57ee4f89582609d9dad73b2fd0413bcf",
    },
    "topology": {
        "cycle 1": "76c238d6b134ef166b6ad2f49588808f4455032ea92bde8c1087c120ade45770",
        "cycle 2": "ed91099bcf5cb011bad8e5a259c2f9477006b93b20cfc769f69da5df90fb5aae",
        "cycle 3": "1eaea6d2ac533118d2c75cb9650ead62f343c474de624c8b4bfe9a57d599df81",
    },
    "guarantee": {
        "cycle 1": "2ee3b7ccf9a0e095593102facf95de37920ed1ea4162939e080ebf42cb829184",
        "cycle 2": "cf22f70772d26f72bd41a8c777b61b72d809957e346c3fa1c7878df1e8aa8bde",
        "cycle 3": "100c0327c6106889f8d92bcf5a944c2cb0d03b59a2ffff684ca3527ba2771d5d",
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
