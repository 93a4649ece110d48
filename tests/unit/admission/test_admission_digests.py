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
        "cycle 2": "90b5cefab008c1cc4a39cd254e193279d2fd1d4264fac24bdd6d116a7e51c629",
        "cycle 3": "ce3571e843b92b760f4a0d7017ea070cf8938956f9fb57e92738393796757459",
        "cycle 1 with an admission budget": "a9555175746cd87a5c78c9aa3fa4d35f93117c66bb19826fe1063e797bd3bc3d",
    },
    "reclaim": {
        "cycle 1": "ee476ae4f6808ac1ca4beba8db5dba9c462a7ca2745f83ecc5d06d424164c523",
        "cycle 2": "480a36a1d89f845244cd2a08496d613884f0e68908eb140c492eb634f25ad7e4",
        "cycle 3": "1df6209614bad05e18115d1696d063bb6524755e5d721c07c5ed237def724177",
    },
    "topology": {
        "cycle 1": "213fa85a7afce34d3247b02bf4d9f4801b2e0024a7c865a262461c833bded06c",
        "cycle 2": "99de2d4694f2bac5b8cf60364e18b37c9b8028e359e90d2fe76c2ba8d0e24db2",
        "cycle 3": "0454b57c8e5075276fb1d6924649f65c666fbd5610487cf8c2e31b31f89fcbc7",
    },
    "guarantee": {
        "cycle 1": "2ee3b7ccf9a0e095593102facf95de37920ed1ea4162939e080ebf42cb829184",
        "cycle 2": "0e0ca645646d1a9fcc5aeb101e959feb05710cf82e34ae154d3a60bef0889b22",
        "cycle 3": "6e84340583f664e6a1dddb0bc90f08da9b41f092ae0cfbad891190f10e037de0",
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
