"""A PodEvicted / PodFailed policy timeout is kept per pod name across the pod's replacement, as
Volcano's job controller keeps its delayed actions: the action applies when the deadline passes
without a pod of that name running, and is cancelled when one runs."""

from __future__ import annotations

from typing import Any

from vglobal.agent import deadlines
from vglobal.agent.kube.records import pod_record
from vglobal.agent.kube.recovery import _manifest
from vglobal.agent.pods import PodPhase
from vglobal.agent.policies import Request
from vglobal.agent.run import AdoptedRun, Delayed
from vglobal.model.job import parse_job


def _evicted(due: float, pod: str = "job-w-0", action: str = "RestartJob", uid: str = "u1") -> Delayed:
    return Delayed(due, 0, Request("PodEvicted", "w", pod, uid), action)


def test_deadline_kept_across_a_second_eviction_of_the_replacement() -> None:
    now = 100.0  # an explicit clock
    first = _evicted(now + 10)
    kept = deadlines.add([], first)
    # the replacement is evicted again 5s later: the first deadline stands
    kept = deadlines.add(kept, _evicted(now + 15, uid="u2"))
    assert kept == [first]
    ready, waiting = deadlines.due(kept, now + 9.9)
    assert ready == [] and waiting == [first]
    ready, waiting = deadlines.due(kept, now + 10)
    assert ready == [first] and waiting == []


def test_a_pod_of_that_name_running_cancels_it_but_not_the_others() -> None:
    other = _evicted(20, pod="job-w-1")
    pending = Delayed(20, 0, Request("PodPending", "w", "job-w-0", "u3"), "AbortJob")
    kept = deadlines.started([_evicted(10), other, pending], "job-w-0")
    assert kept == [other, pending]  # a pending timeout is the pod's own, checked when it fires


def test_another_action_for_the_same_pod_waits_too() -> None:
    kept = deadlines.add([_evicted(10)], _evicted(12, action="RestartTask"))
    assert [d.action for d in kept] == ["RestartJob", "RestartTask"]


def test_encode_decode_round_trip_and_garbage() -> None:
    d = _evicted(123.5)
    back = deadlines.decode(deadlines.encode([d]))
    assert len(back) == 1
    assert (back[0].due, back[0].action, back[0].request.pod, back[0].request.event) == (
        123.5,
        "RestartJob",
        "job-w-0",
        "PodEvicted",
    )
    assert deadlines.decode("not json") == [] and deadlines.decode('[{"due": "x"}]') == []


def _job_doc(timeout: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "victim", "namespace": "default"},
        "spec": {
            "minAvailable": 2,
            "policies": [{"event": "PodEvicted", "action": "RestartJob", "timeout": timeout}],
            "tasks": [
                {
                    "name": "w",
                    "replicas": 4,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
                            ]
                        }
                    },
                }
            ],
        },
    }


URGENT = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "urgent", "namespace": "default"},
    "spec": {
        "minAvailable": 2,
        "tasks": [
            {
                "name": "w",
                "replicas": 2,
                "template": {
                    "spec": {
                        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]
                    }
                },
            }
        ],
    },
}


def _victim_with_two_evicted(make_sim: Any) -> Any:
    """On one 4-cpu node: the victim's 4 pods run; a gang of 2 comes, the hub evicts 2 victim pods
    at t=5 and the gang takes their room, so the replacements stay pending."""
    sim = make_sim(nodes=1, cpu="4")
    run = sim.start(_job_doc("10s"))
    assert run.count(PodPhase.Running) == 4
    sim.runtime.controller.start("uid-2", 1, parse_job(URGENT))
    sim.runtime.step()

    def evict(s: Any) -> None:
        uids = [run.pods[n].uid for n in ("victim-w-2", "victim-w-3")]
        assert s.runtime.controller.evict("uid-1", uids, "preempted") == ["victim-w-2", "victim-w-3"]

    sim.at(5, evict)
    return sim, run


def test_evicted_pod_whose_replacement_never_runs_restarts_the_job_at_the_deadline(make_sim: Any) -> None:
    sim, run = _victim_with_two_evicted(make_sim)
    sim.run_until(14.9)
    assert run.retry_count == 0
    assert run.status["victim-w-2"].phase == PodPhase.Pending  # the replacement, waiting
    assert deadlines.DEADLINE_ANNOTATION in run.pods["victim-w-2"].obj["metadata"]["annotations"]
    sim.run_until(16)
    restarts = [e.time for e in run.history if e.reason == "RestartJob"]
    assert restarts == [15.0] and run.retry_count == 1


def test_replacement_that_runs_before_the_deadline_cancels_it(make_sim: Any) -> None:
    sim, run = _victim_with_two_evicted(make_sim)
    sim.at(8, lambda s: s.runtime.controller.remove("uid-2"))  # the gang leaves: room again
    sim.run_until(30)
    assert run.count(PodPhase.Running) == 4
    assert run.retry_count == 0 and not any(e.reason == "RestartJob" for e in run.history)


def test_an_agent_restart_finds_the_deadline_on_the_replacement(make_sim: Any) -> None:
    sim, run = _victim_with_two_evicted(make_sim)
    sim.run_until(7)
    pods = tuple((m, run.status[n]) for n, m in run.pods.items())
    found = AdoptedRun(run.uid, run.generation, run.job, run.queue, 0, run.version, run.incarnations, pods)
    # a fresh controller takes the run over, as the kube agent does from the pods it finds
    ctl = type(sim.runtime.controller)(sim.backend, sim.clock)
    adopted = ctl.adopt(found)
    waiting = sorted((d.due, d.action, d.request.pod) for d in adopted.delayed)
    assert waiting == [(15.0, "RestartJob", "victim-w-2"), (15.0, "RestartJob", "victim-w-3")]
    sim.clock.advance_to(15)
    ctl.sync()
    assert adopted.retry_count == 1
    assert [e.reason for e in adopted.history].count("RestartJob") == 1  # once, not once per pod


def test_the_kube_agent_reads_the_deadline_back_from_the_pod_it_finds() -> None:
    carried = deadlines.encode([_evicted(42.0, pod="victim-w-2")])
    pod = {
        "metadata": {
            "name": "victim-w-2",
            "namespace": "default",
            "labels": {"volcano.sh/task-spec": "w", "volcano.sh/task-index": "2"},
            "annotations": {deadlines.DEADLINE_ANNOTATION: carried, "volcano.sh/job-version": "0"},
        },
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Pending"},
    }
    rec = pod_record(pod)
    assert rec.deadline == carried
    manifest = _manifest(parse_job(_job_doc("10s")), rec)
    assert manifest is not None
    (d,) = deadlines.of_object(manifest.obj)
    assert (d.due, d.action, d.request.pod) == (42.0, "RestartJob", "victim-w-2")
