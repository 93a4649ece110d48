"""A binding's life cycle: every move, allowed or refused; which run it names; when a run stops."""

from __future__ import annotations

import itertools

import pytest

from vglobal.model.binding import (
    ADMITTED,
    FINISHED,
    UNFINISHED,
    UNPLACED,
    BindingPhase,
    BindingRef,
    allowed,
    reported,
    sources,
    stop_reason,
)

P = BindingPhase
S, D, B, R, OK, FAIL, AB = P.Suspended, P.Dispatched, P.Bound, P.Running, P.Succeeded, P.Failed, P.Aborted

# Every move the hub makes, and who makes it. Any pair not listed is refused.
ALLOWED = {
    (S, D): "admission",
    (S, AB): "cancel while waiting",
    (D, B): "the agent accepts",
    (D, R): "the agent reports running before its acceptance is recorded",
    (B, R): "the agent reports running",
    (D, S): "re-queued (rejected, reclaimed, drained, failed over)",
    (B, S): "re-queued",
    (R, S): "re-queued",
    (D, OK): "finished",
    (B, OK): "finished",
    (R, OK): "finished",
    (D, FAIL): "failed",
    (B, FAIL): "failed",
    (R, FAIL): "failed",
    (D, AB): "cancelled or aborted",
    (B, AB): "cancelled or aborted",
    (R, AB): "cancelled or aborted",
}


@pytest.mark.parametrize(("source", "target"), list(itertools.product(P, P)), ids=lambda p: p.value)
def test_every_move_is_allowed_or_refused_as_the_table_says(source: P, target: P) -> None:
    assert allowed(source, target) == ((source, target) in ALLOWED)
    assert (source.value in sources(target)) == ((source, target) in ALLOWED)


def test_finished_is_final_and_nothing_moves_into_waiting_but_a_requeue() -> None:
    for phase in FINISHED:
        assert not any(allowed(phase, t) for t in P)
    assert sources(S) == [D.value, B.value, R.value]
    assert sources(D) == [S.value]


def test_the_named_sets() -> None:
    assert {D, B, R} == ADMITTED
    assert {D, B} == UNPLACED
    assert {S, D, B, R} == UNFINISHED
    assert {OK, FAIL, AB} == FINISHED
    assert set(P) == UNFINISHED | FINISHED and not UNFINISHED & FINISHED


@pytest.mark.parametrize(
    ("job_phase", "binding"),
    [
        ("Pending", None),
        ("Running", R),
        ("Restarting", R),
        ("Completing", R),
        ("Aborting", None),
        ("Terminating", None),
        ("Completed", OK),
        ("Failed", FAIL),
        ("Terminated", FAIL),
        ("Aborted", AB),
        ("NoSuchPhase", None),
    ],
)
def test_what_a_reported_job_phase_moves_the_binding_to(job_phase: str, binding: P | None) -> None:
    assert reported(job_phase) == binding


def test_a_run_is_current_only_while_admitted_to_its_cluster_at_its_generation() -> None:
    ref = BindingRef.of("Running", "east", 2)
    assert ref.is_current("east", 2)
    assert not ref.is_current("east", 1) and not ref.is_current("west", 2)
    finished = BindingRef(OK, "east", 2)
    assert finished.names_run("east", 2) and not finished.is_current("east", 2)
    requeued = BindingRef(S, None, 2)
    assert not requeued.names_run("east", 2) and not requeued.is_current("east", 2)


@pytest.mark.parametrize(
    ("ref", "run", "reason"),
    [
        (BindingRef(R, "east", 1), ("east", 1), None),
        (BindingRef(D, "east", 1), ("east", 1), None),
        # Finished by the run itself: the agent knows; the hub's record of runs only trails.
        (BindingRef(OK, "east", 1), ("east", 1), None),
        (BindingRef(FAIL, "east", 1), ("east", 1), None),
        (None, ("east", 1), "job deleted"),
        (BindingRef(AB, "east", 1), ("east", 1), "job cancelled"),
        (
            BindingRef(S, None, 1),
            ("east", 1),
            "generation 1 was re-queued; the job waits to be admitted again",
        ),
        (BindingRef(S, None, 2), ("east", 1), "generation 1 is stale (generation 2 was re-queued since)"),
        (BindingRef(R, "west", 2), ("east", 1), "generation 1 is stale (now generation 2 on west)"),
        (BindingRef(B, "east", 3), ("east", 1), "generation 1 is stale (now generation 3 on east)"),
        (
            BindingRef(OK, "west", 2),
            ("east", 1),
            "generation 1 is stale (the job ended as generation 2 on west, Succeeded)",
        ),
    ],
)
def test_when_a_cluster_must_stop_a_run_and_why(
    ref: BindingRef | None, run: tuple[str, int], reason: str | None
) -> None:
    assert stop_reason(ref, *run) == reason


def test_no_stop_reason_contradicts_itself() -> None:
    """A stale-generation reason always names another run than the one it stops."""
    phases = list(P)
    for phase, cluster, gen in itertools.product(phases, ["east", "west", None], [1, 2]):
        ref = BindingRef(phase, cluster, gen)
        reason = stop_reason(ref, "east", 1)
        if reason is not None and "now generation" in reason:
            assert (ref.cluster, ref.generation) != ("east", 1), (ref, reason)
