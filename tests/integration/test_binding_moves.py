"""Every write of a binding's phase goes through a store function whose SQL refuses the moves the
life-cycle table refuses: from each phase, each function either moves the binding as the table
allows or leaves it untouched."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from tests.integration.test_snapshot_reads import new_job
from vglobal.model.binding import BindingPhase, allowed
from vglobal.model.reasons import WaitKind
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import jobs as jobs_repo

P = BindingPhase
UID = "j"


def _run_moves(to: P) -> Callable[[str, Session], bool]:
    def move(uid: str, session: Session) -> bool:
        return bindings_repo.transition(uid, session=session, cluster="east", generation=1, to_phase=to)

    return move


# How the hub moves a binding to each phase: (target, by what, store call → whether it moved).
MOVES: list[tuple[P, str, Callable[[str, Session], bool]]] = [
    (P.Dispatched, "admission", lambda u, s: bool(bindings_repo.admit([(u, "east")], session=s))),
    (P.Bound, "the agent's acceptance", _run_moves(P.Bound)),
    (P.Running, "the agent's report", _run_moves(P.Running)),
    (P.Succeeded, "the agent's report", _run_moves(P.Succeeded)),
    (P.Failed, "the agent's report", _run_moves(P.Failed)),
    (P.Aborted, "the agent's report", _run_moves(P.Aborted)),
    (P.Aborted, "a cancel", lambda u, s: bindings_repo.abort(u, session=s, reason="test") is not None),
    (
        P.Suspended,
        "a re-queue",
        lambda u, s: bool(bindings_repo.requeue([u], session=s, kind=WaitKind.Drained, reason="test")),
    ),
]


@pytest.mark.parametrize("source", list(P), ids=str)
def test_a_store_move_happens_exactly_when_the_table_allows_it(engine: sa.Engine, source: P) -> None:
    sessions = make_sessionmaker(engine)
    uids = [f"j{i}" for i in range(len(MOVES))]
    with session_scope(sessions) as session:
        for uid in uids:
            jobs_repo.insert_job(new_job(uid, 1000), session=session)
        # The run (east, 1) in every phase, so that only the phase decides.
        session.execute(
            sa.text("UPDATE resource_bindings SET phase = :p, cluster = 'east', generation = 1"),
            {"p": source.value},
        )
    for uid, (target, by, call) in zip(uids, MOVES, strict=True):
        with session_scope(sessions) as session:
            moved = call(uid, session)
        with session_scope(sessions) as session:
            phase = session.execute(
                sa.text("SELECT phase FROM resource_bindings WHERE job_uid = :u"), {"u": uid}
            ).scalar_one()
        assert (moved, phase) == ((True, target) if allowed(source, target) else (False, source)), (
            f"{source} -> {target} by {by}"
        )


def test_a_run_that_is_not_current_moves_nothing(engine: sa.Engine) -> None:
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as session:
        jobs_repo.insert_job(new_job(UID, 1000), session=session)
        bindings_repo.admit([(UID, "east")], session=session)
    with session_scope(sessions) as session:
        for cluster, gen in (("west", 1), ("east", 2), ("east", 0)):
            assert not bindings_repo.transition(
                UID, session=session, cluster=cluster, generation=gen, to_phase=P.Bound
            )
        ref = bindings_repo.current(UID, session=session)
    assert ref is not None and (ref.phase, ref.cluster, ref.generation) == (P.Dispatched, "east", 1)
