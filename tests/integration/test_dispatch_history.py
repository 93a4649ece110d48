"""A job's dispatch history: one row per generation, written by the bindings' trigger in the moving
statement, whatever moved it (admission, failover, rejection, the agent's reports, cancel)."""

from __future__ import annotations

import sqlalchemy as sa

from tests.integration.test_snapshot_reads import new_job
from vglobal.client import Client
from vglobal.hub.server import Hub
from vglobal.model.binding import BindingPhase
from vglobal.model.reasons import WaitKind
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo import runs as runs_repo

_P = BindingPhase


def runs(client: Client, name: str) -> list[tuple[int, str, str, bool, bool]]:
    """(generation, cluster, outcome, fenced, ended) of each dispatch, oldest first."""
    return [
        (d.generation, d.cluster, d.outcome, d.fenced, d.HasField("ended_at"))
        for d in client.job_dispatches(name, "ns")
    ]


def test_each_generation_is_one_row_that_says_how_it_ended(
    follower: tuple[Hub, sa.Engine],
) -> None:
    hub, engine = follower
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as s:
        for uid in ("moved", "cancelled", "rejected"):
            jobs_repo.insert_job(new_job(uid, 1000), session=s)
    with session_scope(sessions) as s:  # one statement admits them all, as the dispatcher does
        assert (
            len(
                bindings_repo.admit(
                    [("moved", "east"), ("cancelled", "east"), ("rejected", "west")], session=s
                )
            )
            == 3
        )
    with Client(f"127.0.0.1:{hub.port}", timeout=10, retries=1) as c:
        assert runs(c, "moved") == [(1, "east", "", False, False)]
        with session_scope(sessions) as s:
            bindings_repo.requeue(["moved"], session=s, kind=WaitKind.FailedOver, reason="east failed over")
            bindings_repo.requeue(["rejected"], session=s, kind=WaitKind.Rejected, reason="west: no room")
            assert bindings_repo.abort("cancelled", session=s, reason="cancelled by ada") is not None
        with session_scope(sessions) as s:
            bindings_repo.admit([("moved", "west")], session=s)
        with session_scope(sessions) as s:  # west's agent reports it running, then done
            runs_repo.move(
                [runs_repo.Move("moved", 2, _P.Dispatched, _P.Running, None, False)], "west", session=s
            )
        with session_scope(sessions) as s:
            ended = runs_repo.move(
                [runs_repo.Move("moved", 2, _P.Running, _P.Succeeded, "job Completed", True)],
                "west",
                session=s,
            )
            assert ended == [("default", "Succeeded")]
        assert runs(c, "moved") == [
            (1, "east", "FailedOver", True, True),
            (2, "west", "Completed", False, True),
        ]
        assert runs(c, "cancelled") == [(1, "east", "Cancelled", True, True)]
        assert runs(c, "rejected") == [(1, "west", "Rejected", True, True)]
        first, second = c.job_dispatches("moved", "ns")
        assert first.reason == "east failed over" and second.reason == "job Completed"
        assert (
            first.dispatched_at.ToDatetime()
            <= first.ended_at.ToDatetime()
            <= second.dispatched_at.ToDatetime()
        )
        # A move the binding refuses (a stale generation) writes no history.
        with session_scope(sessions) as s:
            stale = [runs_repo.Move("moved", 1, _P.Running, _P.Failed, "late", True)]
            assert runs_repo.move(stale, "east", session=s) == []
        assert runs(c, "moved")[-1] == (2, "west", "Completed", False, True)
    with session_scope(sessions) as s:  # the history goes with the job
        jobs_repo.delete_job("moved", session=s)
    with engine.connect() as conn:
        assert (
            conn.execute(sa.text("SELECT count(*) FROM job_dispatches WHERE job_uid = 'moved'")).scalar_one()
            == 0
        )
