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
        "cycle 1": "213fa85a7afce34d3247b02bf4d9f4801b2e0024a7c865a262461c833bded06c",
        "cycle 2": "807e7da67a33008c8b415b3bb4d2f631daa181607adca08a4b1612b25e20d2e7",
        "cycle 3": "10f8dd1306320f4f1232a1abc9b482513724b4e9c2d73d6f8076d739cd683388",
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
