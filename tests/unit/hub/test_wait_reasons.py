"""Which wait reasons the dispatcher writes back: new kinds at once, moved figures now and then."""

from __future__ import annotations

from dataclasses import dataclass

from vglobal.admission import AdmissionResult, Admit, Wait
from vglobal.hub.dispatch.cache import WrittenReason
from vglobal.hub.dispatch.explain import REASON_REFRESH, REASONS_PER_CYCLE, REFRESH_PER_CYCLE, changed_waits
from vglobal.model.reasons import WaitKind

K = WaitKind


@dataclass
class Job:
    reason: WrittenReason | None = None


def result(**waits: tuple[WaitKind, str]) -> AdmissionResult:
    decisions: dict[str, Admit | Wait] = {uid: Wait(k, r) for uid, (k, r) in waits.items()}
    decisions["admitted"] = Admit("c")
    return AdmissionResult(decisions=decisions, reclaims=(), queues={}, admitted_order=("admitted",))


def jobs(written: dict[str, tuple[WaitKind, str, float]], *uids: str) -> dict[str, Job]:
    out = {uid: Job() for uid in uids}
    out.update({uid: Job(WrittenReason(*w)) for uid, w in written.items()})
    return out


def noted(known: dict[str, Job], out: list[tuple[str, WaitKind, str]], at: float) -> None:
    for uid, kind, text in out:
        known[uid].reason = WrittenReason(kind, text, at)


def test_new_and_changed_kinds_are_written_moved_figures_wait_for_the_refresh() -> None:
    known = jobs(
        {
            "same": (K.Capability, "capacity held: 4 cpu", 100.0),
            "figures": (K.NoFit, "best: c1 can hold 2 of the 8 pods", 100.0),
            "kind": (K.NoFit, "best: c1 can hold 2 of the 8 pods", 100.0),
        },
        "new",
    )
    now = result(
        new=(K.QueueClosed, "queue b is closed"),
        same=(K.Capability, "capacity held: 4 cpu"),
        figures=(K.NoFit, "best: c2 can hold 5 of the 8 pods"),
        kind=(K.Capability, "queue a: capacity held: 4 cpu"),
    )
    soon = changed_waits(now, known, 100.0 + REASON_REFRESH / 2)
    assert sorted(uid for uid, _, _ in soon) == ["kind", "new"]
    assert ("kind", K.Capability, "queue a: capacity held: 4 cpu") in soon
    later = changed_waits(now, known, 100.0 + REASON_REFRESH)
    assert sorted(uid for uid, _, _ in later) == ["figures", "kind", "new"]


def test_refreshes_are_spread_over_cycles_new_kinds_are_not() -> None:
    n = REFRESH_PER_CYCLE + 10
    known = jobs({f"j{i}": (K.NoFit, f"best c{i}", 0.0) for i in range(n)}, "fresh")
    now = result(
        **{f"j{i}": (K.NoFit, f"best c{i + 1}") for i in range(n)}, fresh=(K.QueueClosed, "queue b is closed")
    )
    first = changed_waits(now, known, REASON_REFRESH + 1)
    assert len(first) == REFRESH_PER_CYCLE + 1 and ("fresh", K.QueueClosed, "queue b is closed") in first
    noted(known, first, REASON_REFRESH + 1)
    second = changed_waits(now, known, REASON_REFRESH + 2)
    assert sorted(uid for uid, _, _ in second) == sorted(f"j{i}" for i in range(REFRESH_PER_CYCLE, n))


def test_a_burst_of_first_reasons_is_written_over_cycles_new_kinds_before_refreshes() -> None:
    burst = REASONS_PER_CYCLE + 5
    fresh = [f"j{i:06d}" for i in range(burst)]
    known = jobs({"old": (K.NoFit, "best c1", 0.0)}, *fresh)
    now = result(old=(K.NoFit, "best c2"), **{uid: (K.QueueClosed, "queue b is closed") for uid in fresh})
    seen: set[str] = set()
    for cycle in range(3):
        out = changed_waits(now, known, REASON_REFRESH + cycle)
        assert len(out) <= REASONS_PER_CYCLE
        noted(known, out, REASON_REFRESH + cycle)
        seen.update(uid for uid, _, _ in out)
        if cycle == 0:  # the refresh of "old" waits while new reasons fill the cycle
            assert "old" not in seen and len(out) == REASONS_PER_CYCLE
    assert seen == set(now.decisions) - {"admitted"}  # every reason written, within two cycles


def test_a_job_the_dispatcher_no_longer_knows_gets_no_reason() -> None:
    assert changed_waits(result(gone=(K.NoFit, "no cluster fits")), {}, 0.0) == []
