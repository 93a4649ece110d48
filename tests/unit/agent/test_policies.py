"""Volcano lifecycle policies: every event with every action, exitCode, timeout, precedence,
maxRetry and minSuccess, on the sim backend with a virtual clock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from vglobal.agent.pods import PodPhase
from vglobal.agent.run import JobRun
from vglobal.model.phases import JobPhase

ACTIONS = ["RestartPod", "RestartTask", "RestartJob", "AbortJob", "TerminateJob", "CompleteJob", None]
ENDED = {"AbortJob": JobPhase.Aborted, "TerminateJob": JobPhase.Terminated, "CompleteJob": JobPhase.Completed}


def uids(run: JobRun) -> dict[str, str]:
    return {name: pod.uid for name, pod in run.pods.items()}


def recreated(before: dict[str, str], run: JobRun) -> set[str]:
    return {name for name, uid in before.items() if name in run.pods and run.pods[name].uid != uid}


def phases(run: JobRun) -> dict[str, str]:
    return {name: str(st.phase) for name, st in run.status.items()}


def policy(event: str, action: str | None, **extra: Any) -> list[dict[str, Any]]:
    return [] if action is None else [{"event": event, "action": action, **extra}]


# Each scenario: (job tasks, the pods that the event hits, the pods left when an ending action runs,
# optional hook time and action on the sim, check time)
def pod_failed(jobs: Any, action: str | None) -> dict[str, Any]:
    doc = jobs.job(
        jobs.task("bad", 1, duration="10s", exit_code=3),
        jobs.task("good", 2, duration="100s"),
        policies=policy("PodFailed", action),
    )
    return {
        "doc": doc,
        "pod": {"job-bad-0"},
        "task": {"job-bad-0"},
        "left": {"job-bad-0": "Failed"},
        "check": 15,
    }


def task_completed(jobs: Any, action: str | None) -> dict[str, Any]:
    doc = jobs.job(
        jobs.task("short", 1, duration="10s"),
        jobs.task("long", 2),
        policies=policy("TaskCompleted", action),
    )
    left = {"job-short-0": "Succeeded"}
    return {"doc": doc, "pod": {"job-short-0"}, "task": {"job-short-0"}, "left": left, "check": 15}


def pod_evicted(jobs: Any, action: str | None) -> dict[str, Any]:
    doc = jobs.job(jobs.task("a", 1), jobs.task("good", 2), policies=policy("PodEvicted", action))

    def evict(sim: Any) -> None:
        run = sim.runtime.runs["uid-1"]
        sim.backend.delete_pod(run.pods["job-good-0"].uid)

    return {
        "doc": doc,
        "hook": (5.0, evict),
        "pod": {"job-good-0"},
        "task": {"job-good-0", "job-good-1"},
        "left": {},
        "check": 6,
    }


def task_failed(jobs: Any, action: str | None) -> dict[str, Any]:
    doc = jobs.job(
        jobs.task("bad", 2, duration="10s", exit_code=1),
        jobs.task("good", 1, duration="100s"),
        policies=policy("TaskFailed", action),
    )
    left = {"job-bad-0": "Failed", "job-bad-1": "Failed"}
    both = {"job-bad-0", "job-bad-1"}
    return {"doc": doc, "pod": both, "task": both, "left": left, "check": 15}


SCENARIOS: dict[str, Callable[[Any, str | None], dict[str, Any]]] = {
    "PodFailed": pod_failed,
    "TaskCompleted": task_completed,
    "PodEvicted": pod_evicted,
    "TaskFailed": task_failed,
}


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a or "no-policy")
@pytest.mark.parametrize("event", list(SCENARIOS))
def test_event_action(sim: Any, jobs: Any, event: str, action: str | None) -> None:
    sc = SCENARIOS[event](jobs, action)
    run = sim.start(sc["doc"])
    assert run.phase == JobPhase.Running
    before = uids(run)
    if "hook" in sc:
        sim.at(*sc["hook"])
    sim.run_until(sc["check"])
    reasons = [e.reason for e in run.history]
    assert event in reasons  # the event itself is reported
    if action in ENDED:
        assert run.phase == ENDED[action]
        assert phases(run) == sc["left"]  # running and pending pods are deleted, finished ones kept
        assert action in reasons and f"Job{ENDED[action]}" in reasons
        assert not any(st.phase == PodPhase.Running for st in sim.backend.pods().values())
    elif action is None:
        assert run.phase == JobPhase.Running
        assert run.retry_count == 0
        assert "JobRestarting" not in reasons
    else:
        expected = {"RestartPod": sc["pod"], "RestartTask": sc["task"], "RestartJob": set(before)}[action]
        assert run.retry_count == 1
        assert run.phase == JobPhase.Running
        assert reasons.count("JobRestarting") == 1 and action in reasons
        assert recreated(before, run) | (set(before) - set(uids(run))) >= expected - sc["left"].keys()
        untouched = set(before) - expected
        assert {n for n in untouched if run.pods[n].uid != before[n]} == set()


def test_restart_task_restarts_every_pod_of_that_task_only(sim: Any, jobs: Any) -> None:
    doc = jobs.job(
        jobs.task(
            "w", 2, duration="10s", exit_code=2, policies=[{"event": "PodFailed", "action": "RestartTask"}]
        ),
        jobs.task("ps", 1),
    )
    run = sim.start(doc)
    before = uids(run)
    sim.run_until(11)
    assert recreated(before, run) == {"job-w-0", "job-w-1"}
    # two pods failed at once: one restart, the second request refers to a killed pod
    assert run.retry_count == 1


@pytest.mark.parametrize("code,restarted", [(3, True), (4, False)])
def test_exit_code_policy(sim: Any, jobs: Any, code: int, restarted: bool) -> None:
    doc = jobs.job(
        jobs.task("bad", 1, duration="10s", exit_code=code),
        jobs.task("good", 1, duration="100s"),
        policies=[{"exitCode": 3, "action": "RestartJob"}],
    )
    run = sim.start(doc)
    sim.run_until(12)
    assert run.retry_count == (1 if restarted else 0)
    assert ("RestartJob" in [e.reason for e in run.history]) is restarted


def test_any_event_matches(sim: Any, jobs: Any) -> None:
    doc = jobs.job(
        jobs.task("bad", 1, duration="10s", exit_code=1),
        jobs.task("good", 1),
        policies=[{"event": "*", "action": "AbortJob"}],
    )
    run = sim.start(doc)
    sim.run_until(12)
    assert run.phase == JobPhase.Aborted


def test_timeout_delays_the_action(sim: Any, jobs: Any) -> None:
    doc = jobs.job(
        jobs.task("bad", 1, duration="10s", exit_code=1),
        jobs.task("good", 1),
        policies=[{"event": "PodFailed", "action": "RestartJob", "timeout": "5s"}],
    )
    run = sim.start(doc)
    sim.run_until(14)
    assert run.retry_count == 0
    assert run.status["job-bad-0"].phase == PodPhase.Failed
    sim.run_until(16)
    assert run.retry_count == 1
    assert next(e.time for e in run.history if e.reason == "RestartJob") == 15.0


def test_task_policy_wins_over_job_policy(sim: Any, jobs: Any) -> None:
    doc = jobs.job(
        jobs.task(
            "bad", 1, duration="10s", exit_code=1, policies=[{"event": "PodFailed", "action": "RestartTask"}]
        ),
        jobs.task("good", 1),
        policies=[{"event": "PodFailed", "action": "AbortJob"}],
    )
    run = sim.start(doc)
    sim.run_until(12)
    assert run.phase == JobPhase.Running and run.retry_count == 1
    assert "AbortJob" not in [e.reason for e in run.history]


def test_non_matching_task_policy_falls_through_to_job_policy(sim: Any, jobs: Any) -> None:
    doc = jobs.job(
        jobs.task(
            "bad",
            1,
            duration="10s",
            exit_code=1,
            policies=[{"event": "TaskCompleted", "action": "CompleteJob"}],
        ),
        jobs.task("good", 1),
        policies=[{"event": "PodFailed", "action": "AbortJob"}],
    )
    run = sim.start(doc)
    sim.run_until(12)
    assert run.phase == JobPhase.Aborted


def test_max_retry_fails_the_job(sim: Any, jobs: Any) -> None:
    doc = jobs.job(
        jobs.task("bad", 1, duration="10s", exit_code=1),
        jobs.task("good", 1),
        policies=[{"event": "PodFailed", "action": "RestartPod"}],
        maxRetry=2,
    )
    run = sim.start(doc)
    sim.run_until(15)
    assert (run.phase, run.retry_count) == (JobPhase.Running, 1)
    sim.run_until(25)
    assert (run.phase, run.retry_count) == (JobPhase.Failed, 2)
    assert not any(st.phase == PodPhase.Running for st in sim.backend.pods().values())
    assert [e.reason for e in run.history].count("RestartPod") == 2


def test_default_max_retry_is_three(sim: Any, jobs: Any) -> None:
    doc = jobs.job(
        jobs.task("bad", 1, duration="10s", exit_code=1),
        policies=[{"event": "PodFailed", "action": "RestartJob"}],
    )
    run = sim.start(doc)
    sim.run_until(100)
    assert (run.phase, run.retry_count) == (JobPhase.Failed, 3)


def test_failed_pod_without_policy_just_counts_as_failed(sim: Any, jobs: Any) -> None:
    doc = jobs.job(jobs.task("bad", 1, duration="10s", exit_code=1), jobs.task("good", 2, duration="50s"))
    run = sim.start(doc)
    sim.run_until(20)
    assert run.phase == JobPhase.Running
    sim.run_until(60)
    # every pod finished, task "bad" has fewer successes than its minAvailable: Failed
    assert run.phase == JobPhase.Failed and run.retry_count == 0


def test_job_completes_when_below_task_min_available_is_allowed(sim: Any, jobs: Any) -> None:
    doc = jobs.job(
        jobs.task("bad", 1, duration="10s", exit_code=1, min_available=0),
        jobs.task("good", 2, duration="20s"),
        minAvailable=2,
    )
    run = sim.start(doc)
    sim.run_until(30)
    # one pod failed, but every task met its own minAvailable and 2 pods succeeded: Completed
    assert run.phase == JobPhase.Completed


def test_min_success_completes_early_and_stops_the_rest(sim: Any, jobs: Any) -> None:
    doc = jobs.job(jobs.task("fast", 2, duration="10s"), jobs.task("slow", 2), minSuccess=2)
    run = sim.start(doc)
    sim.run_until(11)
    assert run.phase == JobPhase.Completed
    assert phases(run) == {"job-fast-0": "Succeeded", "job-fast-1": "Succeeded"}
    assert sim.backend.free() == {n.name: n.allocatable for n in sim.backend.nodes()}


def test_min_success_not_reached_fails(sim: Any, jobs: Any) -> None:
    doc = jobs.job(
        jobs.task("ok", 1, duration="10s"),
        jobs.task("bad", 1, duration="10s", exit_code=1, min_available=0),
        minSuccess=2,
        minAvailable=1,
    )
    run = sim.start(doc)
    sim.run_until(11)
    assert run.phase == JobPhase.Failed


def big_pending_job(jobs: Any, pols: list[dict[str, Any]], duration: str | None = None) -> dict[str, Any]:
    # one 6-cpu pod fits per 8-cpu node; with one node the second pod stays pending
    doc: dict[str, Any] = jobs.job(
        jobs.task("big", 2, cpu="6", duration=duration), minAvailable=1, policies=pols
    )
    return doc


@pytest.mark.parametrize(
    "action,phase",
    [
        ("AbortJob", JobPhase.Aborted),
        ("TerminateJob", JobPhase.Terminated),
        ("CompleteJob", JobPhase.Completed),
    ],
)
def test_pod_pending_with_timeout(make_sim: Any, jobs: Any, action: str, phase: JobPhase) -> None:
    sim = make_sim(nodes=1)
    run = sim.start(big_pending_job(jobs, [{"event": "PodPending", "action": action, "timeout": "30s"}]))
    assert run.phase == JobPhase.Running
    sim.run_until(29)
    assert run.phase == JobPhase.Running
    sim.run_until(31)
    assert run.phase == phase


def test_pod_pending_restart_job_after_timeout(make_sim: Any, jobs: Any) -> None:
    sim = make_sim(nodes=1)
    run = sim.start(
        big_pending_job(jobs, [{"event": "PodPending", "action": "RestartJob", "timeout": "30s"}])
    )
    sim.run_until(31)
    assert run.retry_count == 1 and run.phase == JobPhase.Running


def test_pod_pending_without_timeout_never_matches(make_sim: Any, jobs: Any) -> None:
    sim = make_sim(nodes=1)
    run = sim.start(big_pending_job(jobs, [{"event": "PodPending", "action": "AbortJob"}]))
    sim.run_until(300)
    assert run.phase == JobPhase.Running and run.retry_count == 0


def test_pod_pending_timeout_dropped_when_the_pod_starts(make_sim: Any, jobs: Any) -> None:
    sim = make_sim(nodes=1)
    run = sim.start(
        big_pending_job(jobs, [{"event": "PodPending", "action": "AbortJob", "timeout": "30s"}], "20s")
    )
    sim.run_until(35)  # big-1 started at 20s when big-0 ended, before its 30s pending timeout
    assert run.phase == JobPhase.Running
    assert run.status["job-big-1"].phase == PodPhase.Running


def test_gang_waits_pending_with_the_scheduler_reason(make_sim: Any, jobs: Any) -> None:
    sim = make_sim(nodes=1)
    run = sim.start(jobs.job(jobs.task("big", 2, cpu="6")))
    assert run.phase == JobPhase.Pending
    assert all(st.node is None for st in run.status.values())  # all or nothing
    assert run.message
    assert "Unschedulable" in [e.reason for e in run.history]


def test_bind_timeout_gives_the_job_up(make_sim: Any, jobs: Any) -> None:
    sim = make_sim(nodes=1, bind_timeout=30.0)
    sim.start(jobs.job(jobs.task("big", 2, cpu="6")))
    sim.clock.advance_to(29)
    assert sim.runtime.step() == []
    sim.clock.advance_to(30)
    (rej,) = sim.runtime.step()
    assert (rej.uid, rej.generation) == ("uid-1", 1)
    assert "60s" not in rej.reason and "30s" in rej.reason
    assert "uid-1" not in sim.runtime.runs
    assert sim.backend.pods() == {}


def test_every_transition_is_an_event(sim: Any, jobs: Any) -> None:
    doc = jobs.job(
        jobs.task("bad", 1, duration="10s", exit_code=1),
        policies=[{"event": "PodFailed", "action": "RestartJob"}],
        maxRetry=1,
    )
    run = sim.start(doc)
    sim.run_until(20)
    reasons = [e.reason for e in run.history]
    assert reasons == [
        "JobPending",
        "Scheduled",
        "JobRunning",
        "PodFailed",
        "RestartJob",
        "JobRestarting",
        "JobFailed",
    ]


@pytest.mark.parametrize(
    "action,phase",
    [("AbortJob", JobPhase.Aborted), ("RestartJob", JobPhase.Running), (None, JobPhase.Running)],
)
def test_unknown_podgroup_raises_the_unknown_event(
    sim: Any, jobs: Any, action: str | None, phase: JobPhase
) -> None:
    run = sim.start(jobs.job(jobs.task("w", 2), policies=policy("Unknown", action)))
    # the scheduler reports Unknown when part of a running gang cannot be scheduled any more
    sim.runtime.controller.podgroup_changed(run, "Unknown")
    sim.runtime.step()
    assert "Unknown" in [e.reason for e in run.history]
    assert run.phase == phase
    assert run.retry_count == (1 if action == "RestartJob" else 0)


def test_task_failed_is_raised_once_per_task(sim: Any, jobs: Any) -> None:
    run = sim.start(jobs.job(jobs.task("bad", 3, duration="10s", exit_code=1), jobs.task("good", 1)))
    sim.run_until(12)
    reasons = [e.reason for e in run.history]
    assert reasons.count("PodFailed") == 3 and reasons.count("TaskFailed") == 1
