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
        "cycle 1": "90cd36ed5a1d08c307dc6b7af85a272c4a97c187a4117e40d8fecd20b16c887c",
        "cycle 2": "abf2871386b310c2a5a35a372f86187e0b2006ff4f4186a0d4ca386655019d03",
        "cycle 3": "b5025f3fb3dc0fc73d0a218e26d307ba6493737e3341661f11efe69bb88cb40f",
        "cycle 1 with an admission budget": "c5377a376b1e5c87097ff90a4d81a11639c324aeaedf18b11e41c072afc3a5e2",
    },
    "reclaim": {
        "cycle 1": "37ceb60f72ebd1450248d053d96b139051b408c5e1e396237c5c45c83ae988c3",
        "cycle 2": "dc35ac1b139b219f17bedbc796617cd32f845b3a74aea74de6ab23e734c78dcd",
        "cycle 3": "e01a02bbfa3109fcd27b59c7a854a87bee5ad32ffa0dddaa86ae67460c4ddbff",
    },
    "topology": {
        "cycle 1": "04b593b65b3e85b8d1477919b3794379dfeafc09a2519f5fb142427b273d995a",
        "cycle 2": "c61200781c6df8681ee16836459c4b029bcd9f3f5535c77624260a438da059a4",
        "cycle 3": "16522b11577739a39163e926969fa6395312769d6510ef582ce70e14a22c7a95",
    },
    "guarantee": {
        "cycle 1": "b462a8bc95844bdcd8bc9dc26ad2690501dca797c0df8a91c7cab9528289200a",
        "cycle 2": "791c8f324bedc78f377cb89d650ff3c597a88f4df73e4b8e39eddb130617dab1",
        "cycle 3": "f5c58bf92fe0e2fbbb12a42b9138b2543e4752384df1f7ce12283b8e5db9b6e9",
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
