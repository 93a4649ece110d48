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
        "cycle 2": "9c21902260aaea9e15a934a9561d5d00735ecf092b836a7df2f5e987be12b893",
        "cycle 3": "b32e186df26142573aac3728a1a349c49ca0231fee2b7ceb549898440d3e117b",
        "cycle 1 with an admission budget": "c5377a376b1e5c87097ff90a4d81a11639c324aeaedf18b11e41c072afc3a5e2",
    },
    "reclaim": {
        "cycle 1": "2ac5359b42401e899fb3ec27bbaf7cb505f941c2485bdd9dbe526542aa9caf8b",
        "cycle 2": "fa7bc823db08629411f4bd09796f93988a9431002bd8f65e806de019a2a99eee",
        "cycle 3": "0806b7d4b8914e3d45559846d8c66d83db53e3454c6c880adac60f96239c37fd",
    },
    "topology": {
        "cycle 1": "103b7d85986f88bd87f73fa1980fd09989d579df29a4b38de6025af815dd11c7",
        "cycle 2": "0392235535e146569e2fd2506bfb834286e915e93d787478560e60c6a54be61d",
        "cycle 3": "770f9d90fad3fd2e444ec07c4de2af8a6828c118385a89df02538859cc7a94d5",
    },
    "guarantee": {
        "cycle 1": "5f1998c69042a28d004814327597112ca02f56f6f6a9cfd57d8d583797e9a3be",
        "cycle 2": "8995aa76e2d720455ecef48f95c1e1413e39cbbe78be5370bb22c95633417da5",
        "cycle 3": "401f0e25373e2cde320952c8a9064193baaaaa43d760073bb7573231e85033b1",
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
