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
        "cycle 1": "f9dd5b48eb339d50af33f6ef6c893796fc9973851402b756f597a033c504201c",
        "cycle 2": "78ec0f2abf3bf65d5ebcf2cdce392df22028526886ffc6b89fdeb7fe67637e6c",
        "cycle 3": "57ed0706ec01c25b3e082a60c6223b61cded6da63315b4829101ec0863999509",
        "cycle 1 with an admission budget": "a9555175746cd87a5c78c9aa3fa4d35f93117c66bb19826fe1063e797bd3bc3d",
    },
    "reclaim": {
        "cycle 1": "b02149442c1794db8c8764ee2b78ff187ab6aa2252e22c7fae9c596007a96bef",
        "cycle 2": "d72d76ba5d89eac038211f5797eecc95055bafa0fa407b07636aecdbbeaeb508",
        "cycle 3": "c49f83e1c33b2e967adb91efdceab881739e1c3609d62aa2e4bb314532adfec6",
    },
    "topology": {
        "cycle 1": "af30e6757e5f32aa9eedfa11c29b7452ea409c1eb76da3a1eb9375cdb6a2993f",
        "cycle 2": "e578669724532029603cfcc4ee8a6798ec4b48b083c275379d4edd7e4d80a224",
        "cycle 3": "2c2f9df67ebb629976f3b9124409000c2a8f8a70a5533c07e12fec86070dcf9d",
    },
    "guarantee": {
        "cycle 1": "b5cc3512b2bd426c69372dc168963a7b1733fec7d82ccc084b482aa21140f6f4",
        "cycle 2": "c24bdf40f93134f3150d807eef25ed292623ef835bc54eceb61fcbc3ed3de3d2",
        "cycle 3": "6f313c2cf02e2b163e32c02bd274d23bba04d079e7def04030d5b17f2c1d868f",
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
