"""Which wait reasons the dispatcher writes back: new kinds at once, moved figures now and then."""

from __future__ import annotations

from vglobal.admission import AdmissionResult, Admit, Wait
from vglobal.hub.dispatcher import REASON_REFRESH, REASONS_PER_CYCLE, REFRESH_PER_CYCLE, changed_waits
from vglobal.model.reasons import WaitKind


def result(**reasons: str) -> AdmissionResult:
    decisions: dict[str, Admit | Wait] = {uid: Wait(WaitKind.NoFit, r) for uid, r in reasons.items()}
    decisions["admitted"] = Admit("c")
    return AdmissionResult(decisions=decisions, reclaims=(), queues={}, admitted_order=("admitted",))


def test_new_and_changed_kinds_are_written_moved_figures_wait_for_the_refresh() -> None:
    written = {
        "same": ("queue a: capability cpu 4, allocated 3, job needs 2", 100.0),
        "figures": ("no cluster fits gang: 8 pods; best: c1 can hold 2 of the 8 pods", 100.0),
        "kind": ("no cluster fits gang: 8 pods; best: c1 can hold 2 of the 8 pods", 100.0),
    }
    now = result(
        new="queue b is closed",
        same="queue a: capability cpu 4, allocated 3, job needs 2",
        figures="no cluster fits gang: 8 pods; best: c2 can hold 5 of the 8 pods",
        kind="queue a: capability cpu 4, allocated 3, job needs 2",
    )
    soon = changed_waits(now, written, 100.0 + REASON_REFRESH / 2)
    assert sorted(uid for uid, _ in soon) == ["kind", "new"]
    later = changed_waits(now, written, 100.0 + REASON_REFRESH)
    assert sorted(uid for uid, _ in later) == ["figures", "kind", "new"]


def test_refreshes_are_spread_over_cycles_new_kinds_are_not() -> None:
    n = REFRESH_PER_CYCLE + 10
    written = {f"j{i}": (f"no cluster fits gang: best c{i}", 0.0) for i in range(n)}
    now = result(
        **{f"j{i}": f"no cluster fits gang: best c{i + 1}" for i in range(n)}, fresh="queue b is closed"
    )
    first = changed_waits(now, written, REASON_REFRESH + 1)
    assert len(first) == REFRESH_PER_CYCLE + 1 and ("fresh", "queue b is closed") in first
    written.update((uid, (reason, REASON_REFRESH + 1)) for uid, reason in first)
    second = changed_waits(now, written, REASON_REFRESH + 2)
    assert sorted(uid for uid, _ in second) == sorted(f"j{i}" for i in range(REFRESH_PER_CYCLE, n))


def test_a_burst_of_first_reasons_is_written_over_cycles_new_kinds_before_refreshes() -> None:
    burst = REASONS_PER_CYCLE + 5
    written = {"old": ("no cluster fits gang: best c1", 0.0)}
    now = result(
        old="no cluster fits gang: best c2", **{f"j{i:06d}": "queue b is closed" for i in range(burst)}
    )
    seen: set[str] = set()
    for cycle in range(3):
        out = changed_waits(now, written, REASON_REFRESH + cycle)
        assert len(out) <= REASONS_PER_CYCLE
        written.update((uid, (reason, REASON_REFRESH + cycle)) for uid, reason in out)
        seen.update(uid for uid, _ in out)
        if cycle == 0:  # the refresh of "old" waits while new reasons fill the cycle
            assert "old" not in seen and len(out) == REASONS_PER_CYCLE
    assert seen == set(now.decisions) - {"admitted"}  # every reason written, within two cycles
