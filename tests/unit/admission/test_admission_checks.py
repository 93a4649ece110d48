"""Checks and explanations: open leaf queue, capability at every level, held-back guarantees."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.unit.admission.builders import GPU, admitted, cluster, gpus, job, jobs, reason
from vglobal.admission import AdmissionPolicy, AdmissionResult, PendingJob, QueueSnap, Snapshot, admit
from vglobal.model.resources import ResourceVector
from vglobal.sim.rounds import AdmissionRounds


def run(queues: list[QueueSnap], pending: list[PendingJob], nodes: int = 8) -> AdmissionResult:
    node = gpus(8) + {"cpu": 64_000}
    return admit(Snapshot(0, tuple(queues), (cluster("c", nodes, node),), tuple(pending)))


@pytest.mark.parametrize(
    ("case", "queues", "pending", "uid", "expected"),
    [
        ("unknown queue", [QueueSnap("a")], [job("j", "nope", gpus(1))], "j", "queue nope does not exist"),
        (
            "non-leaf queue",
            [QueueSnap("p"), QueueSnap("p-a", parent="p")],
            [job("j", "p", gpus(1))],
            "j",
            "queue p is not a leaf queue (children: p-a); jobs go only to leaf queues",
        ),
        ("closed queue", [QueueSnap("a", open=False)], [job("j", "a", gpus(1))], "j", "queue a is closed"),
        (
            "closed ancestor",
            [QueueSnap("p", open=False), QueueSnap("p-a", parent="p")],
            [job("j", "p-a", gpus(1))],
            "j",
            "queue p is closed",
        ),
        (
            "leaf capability",
            [QueueSnap("team-a", capability=gpus(64), allocated=gpus(60))],
            [job("j", "team-a", gpus(8))],
            "j",
            "queue team-a: capability nvidia.com/gpu 64, allocated 60, job needs 8",
        ),
        (
            "ancestor capability",
            [QueueSnap("org", capability=gpus(16)), QueueSnap("org-a", parent="org", allocated=gpus(12))],
            [job("j", "org-a", gpus(8))],
            "j",
            "queue org: capability nvidia.com/gpu 16, allocated 12, job needs 8",
        ),
        (
            "capability in millicores",
            [QueueSnap("a", capability=ResourceVector({"cpu": 1500}))],
            [job("j", "a", ResourceVector({"cpu": 2000}))],
            "j",
            "queue a: capability cpu 1500m, allocated 0, job needs 2",
        ),
        (
            "no cluster offers the resource",
            [QueueSnap("a")],
            [job("j", "a", ResourceVector({"example.com/fpga": 1000}))],
            "j",
            "job needs example.com/fpga 1 but all schedulable clusters together have 0",
        ),
    ],
)
def test_wait_reasons(
    case: str, queues: list[QueueSnap], pending: list[PendingJob], uid: str, expected: str
) -> None:
    assert reason(run(queues, pending, nodes=16), uid) == expected, case


def test_capability_counts_this_cycles_admissions_and_skips_to_smaller_jobs() -> None:
    pending = [
        job("big1", "a", gpus(8), created=0),
        job("big2", "a", gpus(8), created=1),
        job("small", "a", gpus(4), created=2),
    ]
    result = run([QueueSnap("a", capability=gpus(12))], pending)
    assert admitted(result) == {"big1": "c", "small": "c"}
    assert reason(result, "big2") == "queue a: capability nvidia.com/gpu 12, allocated 8, job needs 8"


def test_sibling_guarantees_lower_real_capability() -> None:
    # 64 GPUs; b is guaranteed 16 but has nothing pending: a's realCap is 48.
    queues = [QueueSnap("a"), QueueSnap("b", guarantee=gpus(16))]
    result = run(queues, jobs("a", "a", gpus(8), 8))
    assert len(admitted(result)) == 6
    assert reason(result, "a06") == (
        "queue a: limit nvidia.com/gpu 48 (schedulable capacity less other queues' guarantees), "
        "allocated 48, job needs 8"
    )


def test_other_branches_unmet_guarantee_is_held_back() -> None:
    # The guarantee sits deeper in another branch, so x's realCap is the whole 64 GPUs, but the 16
    # GPUs org-b is owed stay free.
    queues = [QueueSnap("org"), QueueSnap("org-b", parent="org", guarantee=gpus(16)), QueueSnap("x")]
    result = run(queues, jobs("x", "x", gpus(8), 8))
    assert len(admitted(result)) == 6
    assert (
        reason(result, "x06")
        == "guarantees of other queues hold back nvidia.com/gpu 16 of 16 free, job needs 8"
    )
    assert result.queues["x"].real_capability == gpus(64) + {"cpu": 512_000}


def test_a_queue_may_use_its_own_guarantee_and_ancestors_share_one() -> None:
    queues = [
        QueueSnap("org", guarantee=gpus(16)),
        QueueSnap("org-a", parent="org"),
        QueueSnap("org-b", parent="org"),
        QueueSnap("x"),
    ]
    sim = AdmissionRounds.of(
        queues, [cluster("c", 8, gpus(8))], jobs("x", "x", gpus(8), 8) + jobs("a", "org-a", gpus(8), 1)
    )
    sim.step()
    # org's guarantee is met by org-a's job, the rest went to x
    assert sim.usage("org-a") == gpus(8) and sim.usage("x") == gpus(48)
    sim.submit(job("b0", "org-b", gpus(8), created=200))
    assert admitted(sim.step()) == {"b0": "c"}
    assert sim.usage("org-a") + sim.usage("org-b") == gpus(16)


def test_queue_status_counts() -> None:
    result = run([QueueSnap("a", capability=gpus(16))], jobs("a", "a", gpus(8), 5))
    st = result.queues["a"]
    assert (st.allocated, st.pending, st.running, st.admitted) == (gpus(16), 3, 2, 2)
    assert (
        st.real_capability == gpus(16) + {"cpu": 512_000} and result.queues["root"].allocated[GPU] == 16_000
    )


def test_queue_lookback_examines_only_the_first_waiting_jobs_of_a_queue_per_cycle() -> None:
    # Queue a's 7 jobs in queue order (priority, then age): a cycle looks at 3 of them past those
    # it admits. a-urgent and a-big00 are admitted, so two more are looked at (a-big01 to a-big03
    # wait: no fit); a-big04 and the small job at the back, which would fit, wait their turn.
    # Queue b, under the limit, is unaffected.
    pending = [
        job("a-urgent", "a", gpus(8), created=5, priority=100),
        *jobs("a-big", "a", gpus(8), 5),
        job("a-small", "a", gpus(1), created=9),
        job("b-one", "b", gpus(1), created=0),
    ]
    node = gpus(8) + {"cpu": 64_000}
    snap = Snapshot(0, (QueueSnap("a"), QueueSnap("b")), (cluster("c", 3, node),), tuple(pending))
    limited = admit(replace(snap, policy=AdmissionPolicy(queue_lookback=3)))
    assert admitted(limited) == {"a-urgent": "c", "a-big00": "c", "b-one": "c"}
    assert reason(limited, "a-small") == (
        "waiting its turn in queue a: a cycle looks at 3 of its 7 pending jobs past those it admits "
        "(--queue-lookback)"
    )
    assert reason(limited, "a-big04") == reason(limited, "a-small")
    assert reason(limited, "a-big03") == reason(limited, "a-big01")
    assert "no cluster fits" in reason(limited, "a-big03")
    # One job looked at past the admissions: a-big01 is, a-big02 waits its turn.
    one = admit(replace(snap, policy=AdmissionPolicy(queue_lookback=1)))
    assert admitted(one) == admitted(limited)
    assert "no cluster fits" in reason(one, "a-big01") and "waiting its turn" in reason(one, "a-big02")
    # With no limit the small job at the back is admitted where the big ones do not fit.
    assert admitted(admit(replace(snap, policy=AdmissionPolicy(queue_lookback=0)))) == {
        "a-urgent": "c",
        "a-big00": "c",
        "a-small": "c",
        "b-one": "c",
    }
    assert limited.queues["a"].pending == 5
