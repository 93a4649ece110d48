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
        "cycle 1": "ccddf78abf253410497c2c71be87c1799dce921ed8c5d17d75fa14c8d83ecff5",
        "cycle 2": "6cbdb4f95c30e3a60720821688936ea5d05e58b0464169730eca3928be2a6b42",
        "cycle 3": "bf285942bb8b35b1a2294b7380075671a32285879b046c1362504c440895ca3b",
    },
    "topology": {
        "cycle 1": "213fa85a7afce34d3247b02bf4d9f4801b2e0024a7c865a262461c833bded06c",
        "cycle 2": "e18090636f0a761a4d28c5d3841e52a14846d8f1d791196cc7c6340ab08e6953",
        "cycle 3": "a2fbf7296a741a42cd2a2b088f73d12e958a65aec9a40e9532b195fa1cf88012",
    },
    "guarantee": {
        "cycle 1": "d0a2c78d11411d6c2c668a4d4b6efc84bfc1e1c028810b6198be1cb97120c782",
        "cycle 2": "d39d29570d55b59195e22590d05529f0b38e38a28d2cc77ba5fcf596194479ed",
        "cycle 3": "4849d6f52a5343e701e1086ca07273ece67a13bc9d95e96157c09942b0e55f0a",
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
