"""Pods annotated volcano.sh/preemptable: "false" are never victims: a job with such a task is never
taken whole by in-queue preemption or by reclaim, even while its pods are known per node only (its
other pods may still go one by one where they are known)."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.admission.builders import cluster, job, res
from vglobal.admission import Admit, QueueSnap
from vglobal.sim.rounds import AdmissionRounds, facts_of


def _mixed(queue: str) -> object:
    """A leader task of 1 cpu that may never go and 3 workers of 1 cpu that may."""
    pending = replace(
        job("mixed", queue, res(cpu=1), 1), gang=((res(cpu=1), 1), (res(cpu=1), 3)), request=res(cpu=4)
    )
    return replace(facts_of(pending), unpreemptable=frozenset({"0"}))


def _taken(sim: AdmissionRounds) -> set[str]:
    out: set[str] = set()
    for r in sim.results:
        out |= {v.victim_uid for v in r.reclaims} | {e.job_uid for e in r.evictions}
    return out


def test_in_queue_preemption_never_takes_a_job_with_a_pinned_task_whole() -> None:
    sim = AdmissionRounds.of([QueueSnap("q", capability=res(cpu=4))], [cluster("c", 1, res(cpu=8))])
    sim.dispatcher.submit(_mixed("q"), waiting_since=0.0)  # type: ignore[arg-type]
    assert isinstance(sim.step().decisions["mixed"], Admit)
    sim.submit(job("urgent", "q", res(cpu=2), priority=100, created=5.0, waiting_since=sim.now))
    for _ in range(3):
        result = sim.step()
        assert not isinstance(result.decisions.get("urgent"), Admit)
    assert "mixed" not in _taken(sim) and "mixed" in sim.placements


def test_reclaim_never_takes_a_job_with_a_pinned_task_whole() -> None:
    # a deserves nothing: every job of it may be reclaimed, but for its pinned leader
    sim = AdmissionRounds.of(
        [QueueSnap("a", deserved=res(cpu=0)), QueueSnap("b")], [cluster("c", 1, res(cpu=4))], reclaim_after=0.0
    )
    sim.dispatcher.submit(_mixed("a"), waiting_since=0.0)  # type: ignore[arg-type]
    assert isinstance(sim.step().decisions["mixed"], Admit)
    sim.submit(job("b1", "b", res(cpu=2), created=5.0, waiting_since=sim.now))
    for _ in range(3):
        sim.step()
    assert "mixed" not in _taken(sim) and "mixed" in sim.placements
