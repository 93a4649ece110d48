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
        "cycle 1": "596b6b94b5c3c42d70736ce592db94e4f32b9ca035c2ca30bcb33fbbe49e5aba",
        "cycle 2": "fd40e0ba3da42b30bfecd8223d30e8ee2e9907a996ad549a9a02e807f559ef4f",
        "cycle 3": "29bf1239cfd443eaa7dcfbe3bb4360e51cf79e42ab99af6327d00d3a44dc9102",
        "cycle 1 with an admission budget": "29bd49fab3c907b034db7d1414a29f486ff2e864d902c8193854a23ca99ae30b",
    },
    "reclaim": {
        "cycle 1": "823d3000a866c36900dad9ccd491ef98775f078b7c4b33fe2fe94d11171b6555",
        "cycle 2": "92514c1b4d259d744be93bffea2d19849df496392a3710da80bc839da7553242",
        "cycle 3": "66bc6d06205434305f3978459bcd9cafc5c8d27f7151be94f47278e40692ac4b",
    },
    "topology": {
        "cycle 1": "9aa5c11d8f9fabbf6d018d629d5846e1a499e014e2a2df0422adae656dadb345",
        "cycle 2": "f6eee5e059d7d52e55fb8fe3e83f8862bbba41804a1e148f3094471059f5e8f2",
        "cycle 3": "98b325210ac639685ed7e3f49309968c9afecf7da5e6870558ac23fc38bb133a",
    },
    "guarantee": {
        "cycle 1": "18b2af115e740a1469bdda8a785817eca8950bf6e1e4c5e3d2897018570f77d7",
        "cycle 2": "2bdd2c93a39f4ad6d2ff26c522cfce931fbcd60e66755b0087c27ef0b1dca8fb",
        "cycle 3": "b05a61e20e1b94d91bc6c78d815ae6ea67c82c11cd9943889cbe6dcac99bae04",
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
