"""JobFlow progress: the diamond in order, failures, retain and delete, restarts, probes."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.model.jobflow_docs import DIAMOND
from vglobal.model.jobflow import JobFlow, parse_job_flow
from vglobal.model.workflow_status import SKIPPED, WAITING, JobFlowPhase, JobFlowStatus
from vglobal.workflows.flow_progress import FlowJob, FlowProgress, TaskCounts, flow_progress

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def diamond(**spec: Any) -> JobFlow:
    doc = copy.deepcopy(DIAMOND)
    doc["spec"].update(spec)
    return parse_job_flow(doc)


def job(phase: str, minute: int = 0, **kw: Any) -> FlowJob:
    finished = T0 + timedelta(minutes=minute + 1) if phase in ("Completed", "Failed") else None
    return FlowJob(phase=phase, created=T0 + timedelta(minutes=minute), finished=finished, **kw)


def phases(p: FlowProgress) -> dict[str, str]:
    return {f.name: f.phase for f in p.status.flows}


def test_the_diamond_runs_in_order_and_succeeds() -> None:
    flow = diamond()
    p = flow_progress(flow, {})
    assert p.create == ("a",) and p.status.phase == JobFlowPhase.Pending
    assert phases(p) == dict.fromkeys("abcd", WAITING)
    p = flow_progress(flow, {"flow-a": job("Pending")}, p.status)
    assert p.create == () and p.status.phase == JobFlowPhase.Pending
    p = flow_progress(flow, {"flow-a": job("Running")}, p.status)
    assert p.create == () and p.status.phase == JobFlowPhase.Running
    p = flow_progress(flow, {"flow-a": job("Completed")}, p.status)
    assert p.create == ("b", "c")
    jobs = {"flow-a": job("Completed"), "flow-b": job("Completed", 2), "flow-c": job("Running", 2)}
    p = flow_progress(flow, jobs, p.status)
    assert p.create == () and p.status.phase == JobFlowPhase.Running  # d waits for c too
    jobs["flow-c"] = job("Completed", 2)
    p = flow_progress(flow, jobs, p.status)
    assert p.create == ("d",)
    jobs["flow-d"] = job("Completed", 4)
    p = flow_progress(flow, jobs, p.status)
    assert p.status.phase == JobFlowPhase.Succeed and p.create == () and p.delete == ()
    assert phases(p) == dict.fromkeys("abcd", "Completed")
    assert p.status.to_volcano()["completedJobs"] == ["flow-a", "flow-b", "flow-c", "flow-d"]


def test_a_failed_dependency_fails_the_flow_and_its_dependents_never_start() -> None:
    flow = diamond()
    jobs = {"flow-a": job("Completed"), "flow-b": job("Failed", 2), "flow-c": job("Running", 2)}
    p = flow_progress(flow, jobs, JobFlowStatus(phase=JobFlowPhase.Running))
    assert p.status.phase == JobFlowPhase.Failed and p.create == ()
    assert phases(p) == {"a": "Completed", "b": "Failed", "c": "Running", "d": SKIPPED}
    # c completing afterwards starts nothing: Failed is final.
    jobs["flow-c"] = job("Completed", 2)
    later = flow_progress(flow, jobs, p.status)
    assert later.status.phase == JobFlowPhase.Failed and later.create == ()
    assert later.status.to_volcano()["failedJobs"] == ["flow-b"]


def test_terminated_and_cancelled_jobs_fail_the_flow_too() -> None:
    for phase in ("Terminated", "Aborted"):
        p = flow_progress(diamond(), {"flow-a": job(phase)})
        assert p.status.phase == JobFlowPhase.Failed and p.create == ()


def test_delete_policy_removes_the_jobs_once_succeeded_and_keeps_their_record() -> None:
    flow = diamond(jobRetainPolicy="delete")
    jobs = {f"flow-{n}": job("Completed", i) for i, n in enumerate("abcd")}
    done = flow_progress(flow, jobs, JobFlowStatus(phase=JobFlowPhase.Running))
    assert done.delete == ("flow-a", "flow-b", "flow-c", "flow-d")
    # The next look, the Jobs gone: nothing is made again and the record stays.
    after = flow_progress(flow, {}, done.status)
    assert after.create == () and after.delete == ()
    assert after.status == done.status
    # A failed flow keeps its Jobs whatever the policy (Volcano deletes only on success).
    failed = flow_progress(flow, {"flow-a": job("Failed")})
    assert failed.delete == ()


def test_a_restarted_hub_carries_on_from_the_jobs_alone() -> None:
    # No previous status (lost, or a new leader): the Jobs say where the flow is.
    jobs = {"flow-a": job("Completed"), "flow-b": job("Completed", 2)}
    p = flow_progress(diamond(), jobs)
    assert p.create == ("c",) and p.status.phase == JobFlowPhase.Running


def test_a_finished_job_deleted_by_hand_is_not_run_again_but_an_unfinished_one_is() -> None:
    flow = diamond()
    status = flow_progress(flow, {"flow-a": job("Completed"), "flow-b": job("Running", 2)}).status
    p = flow_progress(flow, {"flow-b": job("Running", 2)}, status)
    assert p.create == ("c",) and phases(p)["a"] == "Completed"
    p = flow_progress(flow, {"flow-a": job("Completed")}, status)
    assert "b" in p.create


def test_a_probe_starts_a_flow_once_the_watched_task_runs() -> None:
    doc = copy.deepcopy(DIAMOND)
    doc["spec"]["flows"][1]["dependsOn"]["probe"] = {
        "taskStatusList": [{"taskName": "ps", "phase": "Running"}]
    }
    flow = parse_job_flow(doc)
    starting = {"ps": TaskCounts(replicas=2, running=1, pending=1)}
    assert flow_progress(flow, {"flow-a": job("Running", tasks=starting)}).create == ()
    running = {"ps": TaskCounts(replicas=2, running=2)}
    assert flow_progress(flow, {"flow-a": job("Running", tasks=running)}).create == ("b",)
    # c has no probe: it still waits for a to complete.
    assert flow_progress(flow, {"flow-a": job("Completed")}).create == ("b", "c")


def test_status_in_volcanos_shape() -> None:
    p = flow_progress(diamond(), {"flow-a": job("Completed"), "flow-b": job("Restarting", 2)})
    out = p.status.to_volcano()
    assert out["state"] == {"phase": "Running"}
    assert out["completedJobs"] == ["flow-a"] and out["unKnowJobs"] == ["flow-b"] and out["pendingJobs"] == []
    assert out["jobStatusList"][0] == {
        "name": "flow-a",
        "state": "Completed",
        "startTimestamp": "2024-05-01T12:00:00Z",
        "endTimestamp": "2024-05-01T12:01:00Z",
    }


# ---------------------------------------------------------------- any order of events


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["Running", "Completed", "Failed"])), max_size=30)
)
def test_jobs_start_only_after_their_dependencies_and_once(events: list[tuple[int, str]]) -> None:
    """Whatever the jobs do, a flow's Job is made once, only when its targets have Completed,
    and nothing is made once the flow has failed."""
    flow = diamond()
    deps = {f.name: f.depends_on for f in flow.flows}
    jobs: dict[str, FlowJob] = {}
    status: JobFlowStatus | None = None
    made: list[str] = []
    for pick, phase in [*events, (0, "Running")]:
        p = flow_progress(flow, jobs, status)
        for name in p.create:
            assert name not in made
            assert all(jobs[f"flow-{t}"].phase == "Completed" for t in deps[name])
            assert p.status.phase != JobFlowPhase.Failed
            made.append(name)
            jobs[f"flow-{name}"] = job("Pending")
        status = p.status
        live = [n for n in made if jobs[f"flow-{n}"].phase not in ("Completed", "Failed")]
        if live:
            jobs[f"flow-{live[pick % len(live)]}"] = job(phase)
    assert status is not None
    if status.phase == JobFlowPhase.Failed:
        failed = {n for n in made if jobs[f"flow-{n}"].phase == "Failed"}
        assert not any(set(deps[n]) & failed for n in made)
