"""GPU-hour budgets: the annotation's rules, the spend ledger's window over subtrees, and a queue
over its budget waiting in admission with the budget named."""

from __future__ import annotations

import pytest

from tests.unit.admission.builders import cluster, gpus, job
from vglobal.admission import PendingByQueue, QueueSnap, Snapshot, Wait, admit
from vglobal.hub.dispatch.snapshot import _near_budget
from vglobal.hub.dispatch.spend import DAY, SpendLedger
from vglobal.model.errors import Problems
from vglobal.model.queue_budget import Budget, budget_of
from vglobal.model.reasons import WaitKind

NOW = 100 * DAY + 3600.0


def test_the_annotations_and_their_errors() -> None:
    assert budget_of({"vglobal.io/gpu-hours-budget": "10000"}) == Budget(10000.0)
    assert budget_of({"vglobal.io/gpu-hours-budget": "50", "vglobal.io/budget-period": "168h"}) == Budget(50.0, 7 * DAY)
    for bad in ({"vglobal.io/gpu-hours-budget": "-3"}, {"vglobal.io/gpu-hours-budget": "lots"}):
        p = Problems()
        assert budget_of(bad, p) is None
        assert p.items[0][0] == "metadata.annotations[vglobal.io/gpu-hours-budget]"
    p = Problems()
    budget_of({"vglobal.io/gpu-hours-budget": "5", "vglobal.io/budget-period": "10m"}, p)
    assert p.items == [("metadata.annotations[vglobal.io/budget-period]", "must be at least 1h")]


def test_spend_over_the_period_counts_the_subtree_and_whole_days() -> None:
    ledger = SpendLedger(stored={"a1": {99: 3600.0 * 50, 100: 3600.0 * 45}, "a2": {100: 3600.0 * 10}, "b": {100: 1e9}})
    ledger.stored["a1"][60] = 3600.0 * 1000  # outside a 7-day period
    queues = {
        "team-a": (None, {"vglobal.io/gpu-hours-budget": "100", "vglobal.io/budget-period": "168h"}),
        "a1": ("team-a", {}),
        "a2": ("team-a", {}),
        "b": (None, {}),
    }
    view = ledger.view(queues, NOW)
    assert view.status["team-a"]["spentGpuHours"] == 105.0
    assert view.over["a1"] == view.over["a2"] == view.over["team-a"]
    assert view.over["a1"] == "queue team-a spent 105 of its 100 GPU-hour budget over the last 7 days"
    assert "b" not in view.over and view.near == {"team-a", "a1", "a2"}
    near = ledger.view({**queues, "team-a": (None, {"vglobal.io/gpu-hours-budget": "110"})}, NOW)
    assert near.over == {} and near.near == {"team-a", "a1", "a2"}  # 105 of 110: near, not over


def test_jobs_of_a_queue_near_its_budget_take_no_victims() -> None:
    pending = PendingByQueue({"a1": (job("x", "a1", gpus(1)),), "b": (job("y", "b", gpus(1)),)})
    near = _near_budget(pending, {"a1"})
    out = {p.uid: p.preemption_policy for p in near}
    assert out == {"x": "Never", "y": "PreemptLowerPriority"}
    assert near.by_queue["b"] is pending.by_queue["b"]  # a queue not near its budget keeps its tuple


def test_a_queue_over_its_budget_waits_naming_it() -> None:
    reason = "queue a spent 12 of its 10 GPU-hour budget over the last 30 days"
    snap = Snapshot(
        now=NOW,
        queues=(QueueSnap("a", over_budget=reason), QueueSnap("b")),
        clusters=(cluster("c", 1, gpus(8)),),
        pending=(job("x", "a", gpus(1)), job("y", "b", gpus(1))),
    )
    result = admit(snap)
    assert result.decisions["x"] == Wait(WaitKind.OverBudget, reason)
    assert not isinstance(result.decisions["y"], Wait)


@pytest.mark.parametrize("hours", [0.002, 5.5, 12000.0])
def test_budget_state_reads_well(hours: float) -> None:
    near, over = Budget(hours).state("q", hours)
    assert near and over.startswith("queue q spent ")
