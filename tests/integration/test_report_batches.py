"""An agent's reports recorded many per transaction (hub/agents/record.py) move bindings exactly
as one at a time would: in the order sent, only for the current run, only where the life-cycle
table allows, with every report's events kept."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.integration.test_snapshot_reads import new_job
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.hub.agents import record as recorder
from vglobal.model.binding import BindingPhase, allowed, reported
from vglobal.model.phases import JobPhase
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import clusters as clusters_repo
from vglobal.store.repo import jobs as jobs_repo


def status(uid: str, gen: int, phase: str, *events: str) -> pb.AgentMessage:
    return pb.AgentMessage(
        status=pb.JobStatus(
            job_uid=uid,
            generation=gen,
            phase=phase,
            tasks=[pb.TaskStatus(name="main", replicas=1, succeeded=int(phase == "Completed"))],
            placements=[pb.PodPlacement(pod=f"{uid}-main-0", node="east-0", phase="Running", task="main")],
            events=[
                pb.AgentEvent(kind="Normal", reason=r, message=r, time=1.0 + i) for i, r in enumerate(events)
            ],
        )
    )


def accepted(uid: str, gen: int) -> pb.AgentMessage:
    return pb.AgentMessage(accepted=pb.BindingAccepted(job_uid=uid, generation=gen))


def rejected(uid: str, gen: int, reason: str) -> pb.AgentMessage:
    return pb.AgentMessage(rejected=pb.BindingRejected(job_uid=uid, generation=gen, reason=reason))


def heartbeat(cpu: int) -> pb.AgentMessage:
    free = pb.Units(values={"cpu": cpu})
    return pb.AgentMessage(heartbeat=pb.Heartbeat(nodes=[pb.NodeFree(name="east-0", free=free)]))


def seed(engine: sa.Engine, phases: dict[str, str]) -> None:
    """Jobs with the run (east, 1) in the given binding phases, and the cluster east."""
    with session_scope(make_sessionmaker(engine)) as session:
        clusters_repo.register(
            "east",
            session=session,
            labels={},
            nodes=[],
            free={"east-0": {"cpu": 8}},
            stream="s",
            identity="t",
        )
        for uid, phase in phases.items():
            jobs_repo.insert_job(new_job(uid, 1000), session=session)
            session.execute(
                sa.text(
                    "UPDATE resource_bindings SET phase = :p, cluster = 'east', generation = 1 "
                    "WHERE job_uid = :u"
                ),
                {"p": phase, "u": uid},
            )


def record(engine: sa.Engine, messages: list[pb.AgentMessage]) -> recorder.Outcome:
    with session_scope(make_sessionmaker(engine)) as session:
        return recorder.record("east", messages, stream="s", exclude_for=60.0, session=session)


def bindings(engine: sa.Engine) -> dict[str, tuple[str, str | None, str]]:
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT job_uid, phase, cluster, reason FROM resource_bindings")).all()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def events(engine: sa.Engine, uid: str) -> list[str]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT reason FROM events WHERE job_uid = :u ORDER BY id"), {"u": uid}
        ).all()
    return [r[0] for r in rows]


def test_one_batch_of_a_runs_whole_life(engine: sa.Engine) -> None:
    seed(engine, {"a": "Dispatched", "b": "Running", "c": "Bound", "d": "Dispatched"})
    outcome = record(
        engine,
        [
            heartbeat(7000),
            accepted("a", 1),
            status("a", 1, "Running", "JobPending", "JobRunning"),
            status("b", 2, "Completed", "JobCompleted"),  # a generation that never ran here
            rejected("c", 1, "gang did not fit within 60s"),
            status("c", 1, "Running"),  # after its rejection: no longer the current run
            accepted("d", 1),
            rejected("d", 1, "gang did not fit"),
            heartbeat(6000),
            status("a", 1, "Completed", "TaskCompleted", "JobCompleted"),
        ],
    )
    assert (outcome.stale, outcome.finished, outcome.rejected) == (2, 1, 2)
    got = bindings(engine)
    assert got["a"] == ("Succeeded", "east", "job Completed")
    assert got["b"] == ("Running", "east", "")
    assert got["c"][:2] == ("Suspended", None) and "gang did not fit within 60s" in got["c"][2]
    assert got["d"][:2] == ("Suspended", None)
    assert events(engine, "a") == ["Bound", "JobPending", "JobRunning", "TaskCompleted", "JobCompleted"]
    assert events(engine, "b") == [] and events(engine, "c") == ["Rejected"]
    assert events(engine, "d") == ["Bound", "Rejected"]
    with engine.connect() as conn:
        job = conn.execute(
            sa.text("SELECT phase, finished_at IS NOT NULL, tasks FROM jobs WHERE uid = 'a'")
        ).one()
        excluded = conn.execute(
            sa.text("SELECT excluded_clusters FROM resource_bindings WHERE job_uid = 'c'")
        ).scalar()
        free = conn.execute(sa.text("SELECT free FROM clusters WHERE name = 'east'")).scalar()
    assert job[0] == "Completed" and job[1] and job[2][0]["succeeded"] == 1
    assert list(excluded) == ["east"]
    assert free == {"east-0": {"cpu": 6000}}


@pytest.mark.parametrize("source", list(BindingPhase), ids=str)
def test_a_reported_phase_moves_the_binding_exactly_when_the_table_allows(
    engine: sa.Engine, source: BindingPhase
) -> None:
    phases = [p.value for p in JobPhase if reported(p) is not None]
    seed(engine, {f"j{i}": source.value for i in range(len(phases))})
    record(engine, [status(f"j{i}", 1, p) for i, p in enumerate(phases)])
    got = bindings(engine)
    for i, phase in enumerate(phases):
        target = reported(phase)
        assert target is not None
        moved = target is not source and allowed(source, target)
        # Only an admitted run (east, 1) reports: from other phases nothing moves at all.
        expected = (
            target.value if moved and source.value in ("Dispatched", "Bound", "Running") else source.value
        )
        assert got[f"j{i}"][0] == expected, (source, phase)


def test_the_observed_generation_is_written_with_the_status_and_never_goes_back(engine: sa.Engine) -> None:
    seed(engine, {"a": "Running", "b": "Running"})

    def seen(uid: str, observed: int) -> pb.AgentMessage:
        msg = status(uid, 1, "Running")
        msg.status.observed_generation = observed
        return msg

    def observed() -> dict[str, int]:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT uid, observed_generation FROM jobs")).all()
        return {r[0]: r[1] for r in rows}

    # A later status of the batch that says no generation (an older agent) keeps the earlier one's.
    record(engine, [seen("a", 3), seen("a", 0), seen("b", 2)])
    assert observed() == {"a": 3, "b": 2}
    record(engine, [seen("a", 2), seen("b", 0)])  # a report from before an apply arrives late
    assert observed() == {"a": 3, "b": 2}
    record(engine, [seen("b", 4)])
    assert observed() == {"a": 3, "b": 4}


def test_a_binding_that_moves_and_gets_placements_is_written_once(engine: sa.Engine) -> None:
    """The placements' touch (a statement trigger on jobs) skips a binding the batch's move already
    stamped: one row version, so its triggers run once; one that does not move is still touched."""
    seed(engine, {"a": "Bound", "b": "Running"})
    with engine.connect() as conn:
        before = dict(conn.execute(sa.text("SELECT job_uid, updated_at FROM resource_bindings")).all())
    counted = sa.text("SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = 'resource_bindings'")
    with session_scope(make_sessionmaker(engine)) as session:
        # Counts this backend has not reported yet, an earlier transaction's included: the difference.
        start = session.execute(counted).scalar_one()
        recorder.record(
            "east", [status("a", 1, "Running"), status("b", 1, "Running")], stream="s", exclude_for=60.0,
            session=session,
        )  # fmt: skip
        updates = session.execute(counted).scalar_one() - start
    assert updates == 2  # a's move, b's touch (three when a's move followed a touch of it)
    with engine.connect() as conn:
        after = dict(conn.execute(sa.text("SELECT job_uid, updated_at FROM resource_bindings")).all())
        pods = dict(conn.execute(sa.text("SELECT uid, placements FROM jobs")).all())
    assert after["a"] > before["a"] and after["b"] > before["b"]
    assert [p["pod"] for p in pods["a"]] == ["a-main-0"] and [p["pod"] for p in pods["b"]] == ["b-main-0"]
    assert bindings(engine)["a"][0] == "Running"
