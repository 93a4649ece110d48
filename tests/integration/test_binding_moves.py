"""Every write of a binding's phase refuses the moves the life-cycle table refuses: from each phase,
each way the hub moves a binding either moves it as the table allows or leaves it untouched. The
agent's reports go through the hub's recorder (agents/record.py), which moves only the current
run's binding: one admitted (Dispatched, Bound, Running) to that cluster at that generation."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from tests.integration.test_snapshot_reads import new_job
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.hub.agents import record
from vglobal.model.binding import ADMITTED, BindingPhase, allowed
from vglobal.model.reasons import WaitKind
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import clusters as clusters_repo
from vglobal.store.repo import jobs as jobs_repo

P = BindingPhase
UID = "j"


def _phase(uid: str, session: Session) -> str:
    return str(
        session.execute(
            sa.text("SELECT phase FROM resource_bindings WHERE job_uid = :u"), {"u": uid}
        ).scalar_one()
    )


def _report(msg: Callable[[str], pb.AgentMessage]) -> Callable[[str, Session], bool]:
    """What run (east, 1)'s agent says of the job, recorded as the hub records it."""

    def move(uid: str, session: Session) -> bool:
        before = _phase(uid, session)
        record.record("east", [msg(uid)], stream="s", exclude_for=60.0, session=session)
        return _phase(uid, session) != before

    return move


def _status(job_phase: str) -> Callable[[str], pb.AgentMessage]:
    return lambda u: pb.AgentMessage(status=pb.JobStatus(job_uid=u, generation=1, phase=job_phase))


def _accepted(uid: str) -> pb.AgentMessage:
    return pb.AgentMessage(accepted=pb.BindingAccepted(job_uid=uid, generation=1))


# How the hub moves a binding to each phase: (target, by what, whether only the current run may
# make it, store call → whether it moved).
MOVES: list[tuple[P, str, bool, Callable[[str, Session], bool]]] = [
    (P.Dispatched, "admission", False, lambda u, s: bool(bindings_repo.admit([(u, "east")], session=s))),
    (P.Bound, "the agent's acceptance", True, _report(_accepted)),
    (P.Running, "the agent's report", True, _report(_status("Running"))),
    (P.Succeeded, "the agent's report", True, _report(_status("Completed"))),
    (P.Failed, "the agent's report", True, _report(_status("Failed"))),
    (P.Aborted, "the agent's report", True, _report(_status("Aborted"))),
    (P.Aborted, "a cancel", False, lambda u, s: bindings_repo.abort(u, session=s, reason="test") is not None),
    (
        P.Suspended,
        "a re-queue",
        False,
        lambda u, s: bool(bindings_repo.requeue([u], session=s, kind=WaitKind.Drained, reason="test")),
    ),
]


def _register(session: Session, cluster: str, stream: str) -> None:
    clusters_repo.register(
        cluster, session=session, labels={}, nodes=[], free={}, stream=stream, identity="t"
    )


@pytest.mark.parametrize("source", list(P), ids=str)
def test_a_store_move_happens_exactly_when_the_table_allows_it(engine: sa.Engine, source: P) -> None:
    sessions = make_sessionmaker(engine)
    uids = [f"j{i}" for i in range(len(MOVES))]
    with session_scope(sessions) as session:
        _register(session, "east", "s")
        for uid in uids:
            jobs_repo.insert_job(new_job(uid, 1000), session=session)
        # The run (east, 1) in every phase, so that only the phase decides.
        session.execute(
            sa.text("UPDATE resource_bindings SET phase = :p, cluster = 'east', generation = 1"),
            {"p": source.value},
        )
    for uid, (target, by, by_run, call) in zip(uids, MOVES, strict=True):
        with session_scope(sessions) as session:
            moved = call(uid, session)
        with session_scope(sessions) as session:
            phase = _phase(uid, session)
        may = allowed(source, target) and (source in ADMITTED or not by_run)
        assert (moved, phase) == ((True, target) if may else (False, source)), f"{source} -> {target} by {by}"


def test_a_run_that_is_not_current_moves_nothing(engine: sa.Engine) -> None:
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as session:
        _register(session, "east", "s")
        _register(session, "west", "w")
        jobs_repo.insert_job(new_job(UID, 1000), session=session)
        bindings_repo.admit([(UID, "east")], session=session)
    for cluster, stream, gen in (("west", "w", 1), ("east", "s", 2), ("east", "s", 0)):
        msg = pb.AgentMessage(accepted=pb.BindingAccepted(job_uid=UID, generation=gen))
        with session_scope(sessions) as session:
            outcome = record.record(cluster, [msg], stream=stream, exclude_for=60.0, session=session)
        assert outcome.stale == 1, (cluster, gen)
    with session_scope(sessions) as session:
        ref = bindings_repo.current(UID, session=session)
    assert ref is not None and (ref.phase, ref.cluster, ref.generation) == (P.Dispatched, "east", 1)
