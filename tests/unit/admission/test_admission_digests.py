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
        "cycle 1": "2eaf4e8b8737816af5b76b02ecf4b6471ac54422a1fad2adf667ea2f4ac36ccd",
        "cycle 2": "13da122126af2076ce6fc0cd9b9e09abe3e89dc2d6a1093c34ebe68338804eaa",
        "cycle 3": "3c294e4bf1eea69a232a03132b8ae30b6c83257d72fb1ddd68b6554f9a71a209",
        "cycle 1 with an admission budget": "ed8f37447dadbbe0b366c4ba2c2ecd7407c34140f95a1b2c016624a8663c6e00",
    },
    "reclaim": {
        "cycle 1": "f384b315ce22060676f537b1f57119fe57164401ee5efdbee9edc13036160aa6",
        "cycle 2": "f7d6d33cd2c45bfd537fc8ec83ff54c7faaa70afd23a81aaf401b8978ef56647",
        "cycle 3": "72ead95b010d513808a5eca816e61319e3ed6212f56d915e509faa9cb4cb8473",
    },
    "topology": {
        "cycle 1": "022537b7b1009166481a6df0c8a5386c11b58b004430ce9f2ba50356246f1ea1",
        "cycle 2": "7d27371a630f8d2eb10f2007b9f675a71842dba2ff98ae58d52e23207ac0e7e5",
        "cycle 3": "ff3abb5162aa557473ebbbf6392ab66d27069718b29d29e4cc4f37351b71a193",
    },
    "guarantee": {
        "cycle 1": "9497ec2ac4960e0d288f4a92a21c6c122408aeb930f3dc7886ceb47c922a75e0",
        "cycle 2": "238792c01ffc869fb006a5d40c59f64cb8e8496d71db67cd7608700e81d1e765",
        "cycle 3": "f6fd480022ecfe44880c225d17d69667cd3b5f78a356d7a29d99cf7b5a56e8c3",
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
