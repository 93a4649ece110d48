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
        "cycle 1": "5deaf72bad77532986f13319b94423217a3c3226a059198eb37e4ae275ea1585",
        "cycle 2": "01fcaa53f636cf45f277d456321e40b9d02300048dd77896ba166f5280cf3922",
        "cycle 3": "55a17cc630e858d4001cb1eebc1d2cde62c45468e58bc53dd664c4de783eaa4a",
        "cycle 1 with an admission budget": "664682e4a7435624e2ad0085a8b9a108adbef3a103ad172770741269ad8ce7a6",
    },
    "reclaim": {
        "cycle 1": "c117858191d9cbb0264480dc266e5cc42aacd71cf54fb764e35d11689617bf49",
        "cycle 2": "b2f729c5566e6be6a6c4b78339748bdf83360d1824a884855520f42ca1aea8f4",
        "cycle 3": "769c74bb4fac43e22852ba5249461b0089579c1b866d03192441502280fc326a",
    },
    "topology": {
        "cycle 1": "f8d9769ad06d7fd05f2ac488c6d33557016ad6c4dccadf5289e76a436f2ebb29",
        "cycle 2": "4def4c4540b25bf9935b996194b40bd5d12dbc2c798a6437df2f8a770dfe3faf",
        "cycle 3": "44a234a360890331b16b6901ec1c849bd4625cd75c3ca5c051bb558fe886bf08",
    },
    "guarantee": {
        "cycle 1": "9f7813dd4c43a2f67de353772e7a81ee41eeeed1d5535a5dc8d60a0fe2608ec4",
        "cycle 2": "747248a355301f6155e71c69de4a044dee3c37d3806712328181de2109df7107",
        "cycle 3": "40c994cac267741887125719c265fb2c3fc103c3b9827fabf44d1159284be74e",
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
