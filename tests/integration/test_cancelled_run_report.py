"""The final report of a cancelled run: recorded only from the very run (cluster, generation) the
Aborted binding names, only once it says the run finished, and once (a report sent again after a
reconnect adds nothing); the pods it no longer has are shown Terminated, the binding stays."""

from __future__ import annotations

import sqlalchemy as sa

from tests.integration.test_report_batches import bindings, events, record, seed, status
from vglobal.api.v1 import agent_pb2 as pb


def stopped(uid: str, gen: int) -> pb.AgentMessage:
    """The agent's report once it stopped the run: its pods are gone."""
    return pb.AgentMessage(
        status=pb.JobStatus(
            job_uid=uid,
            generation=gen,
            phase="Aborted",
            tasks=[pb.TaskStatus(name="main", replicas=1)],
            events=[
                pb.AgentEvent(kind="Normal", reason="JobAborted", message="Aborting -> Aborted", time=2.0)
            ],
        )
    )


def pods(engine: sa.Engine, uid: str) -> list[tuple[str, str, str]]:
    with engine.connect() as conn:
        got = conn.execute(sa.text("SELECT placements FROM jobs WHERE uid = :u"), {"u": uid}).scalar()
    return [(p["pod"], p["node"], p["phase"]) for p in got]


def test_only_the_cancelled_runs_confirmation_marks_its_pods_terminated(engine: sa.Engine) -> None:
    seed(engine, {"a": "Running"})
    record(engine, [status("a", 1, "Running")])
    assert pods(engine, "a") == [("a-main-0", "east-0", "Running")]
    with engine.begin() as conn:  # cancelled, as cancel_job leaves it
        conn.execute(sa.text("UPDATE resource_bindings SET phase = 'Aborted' WHERE job_uid = 'a'"))
        conn.execute(sa.text("UPDATE jobs SET phase = 'Aborted' WHERE uid = 'a'"))
    # Another generation's report, and the run's own before it has stopped: fenced, nothing kept.
    assert record(engine, [stopped("a", 2)]).stale == 1
    assert record(engine, [status("a", 1, "Aborting")]).stale == 1
    assert pods(engine, "a") == [("a-main-0", "east-0", "Running")]
    assert events(engine, "a") == []

    assert record(engine, [stopped("a", 1)]).stale == 0
    assert pods(engine, "a") == [("a-main-0", "east-0", "Terminated")]
    assert events(engine, "a") == ["JobAborted", "Stopped"]
    assert bindings(engine)["a"][:2] == ("Aborted", "east")
    with engine.connect() as conn:
        phase, tasks = conn.execute(sa.text("SELECT phase, tasks FROM jobs WHERE uid = 'a'")).one()
    assert phase == "Aborted" and tasks[0]["running"] == 0
    # Sent again after a reconnect: nothing more.
    record(engine, [pb.AgentMessage(status=pb.JobStatus(job_uid="a", generation=1, phase="Aborted"))])
    assert events(engine, "a") == ["JobAborted", "Stopped"]
    assert pods(engine, "a") == [("a-main-0", "east-0", "Terminated")]
