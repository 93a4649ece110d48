"""The agent's protocol logic (AgentCore) over a sim cluster and a virtual clock, no sockets."""

from __future__ import annotations

import json
from typing import Any

import pytest

from vglobal.agent.core import AgentCore
from vglobal.agent.snapshot import job_spec
from vglobal.api.v1 import agent_pb2 as pb


class Core(AgentCore):
    sim: Any  # the test harness driving the runtime's virtual clock


@pytest.fixture
def core(make_sim: Any) -> Core:
    sim = make_sim(nodes=2)
    sim.runtime.bind_timeout = 60.0
    c = Core(sim.runtime, heartbeat_interval=5.0)
    c.sim = sim
    return c


def kinds(msgs: list[pb.AgentMessage]) -> list[str]:
    return [str(m.WhichOneof("body")) for m in msgs]


def dispatch(doc: dict[str, Any], uid: str = "u1", gen: int = 1) -> pb.HubMessage:
    return pb.HubMessage(
        dispatch=pb.Dispatch(job_uid=uid, generation=gen, manifest=json.dumps(doc), queue="default")
    )


def registered(core: Core) -> list[pb.AgentMessage]:
    core.on_connected()
    return core.on_message(pb.HubMessage(registered=pb.Registered(heartbeat_interval_seconds=5.0)))


def statuses(msgs: list[pb.AgentMessage]) -> list[pb.JobStatus]:
    return [m.status for m in msgs if m.WhichOneof("body") == "status"]


def test_register_lists_inventory_and_running_jobs(core: Any, jobs: Any) -> None:
    (msg,) = core.on_connected()
    reg = msg.register
    assert reg.cluster == "test" and reg.labels["region"] == "test"
    # the default conf runs nodegroup with strict: false, and the hub is told so
    assert reg.labels["vglobal.io/nodegroup-plugin"] == "lenient"
    assert [n.name for n in reg.nodes] == ["n-0", "n-1"]
    assert reg.nodes[0].allocatable.values["cpu"] == 8000 and reg.nodes[0].free.values["pods"] == 110
    assert list(reg.jobs) == []
    registered(core)
    core.on_message(dispatch(jobs.job(jobs.task("w", 2))))
    core.tick()
    (again,) = core.on_connected()
    assert [(j.job_uid, j.generation) for j in again.register.jobs] == [("u1", 1)]
    assert again.register.nodes[0].free.values["cpu"] < 8000


def test_heartbeat_with_free_capacity_comes_before_the_placements(core: Any, jobs: Any) -> None:
    first = registered(core)
    assert kinds(first) == ["heartbeat"] and len(first[0].heartbeat.nodes) == 2  # all nodes first
    assert kinds(core.on_message(dispatch(jobs.job(jobs.task("w", 2, cpu="3"))))) == ["accepted"]
    out = core.tick()
    assert kinds(out) == ["heartbeat", "status"]
    changed = {n.name: n.free.values["cpu"] for n in out[0].heartbeat.nodes}
    placed = {p.node for p in out[1].status.placements}
    assert placed and placed <= set(changed)
    assert sum(8000 - v for v in changed.values()) == 6000
    st = out[1].status
    assert st.phase == "Running" and st.tasks[0].running == 2
    # Each pod names its task: the hub counts a pod's request by it, never by parsing its name.
    assert sorted((p.pod, p.task) for p in st.placements) == [("job-w-0", "w"), ("job-w-1", "w")]
    assert [e.reason for e in st.events] == ["JobPending", "Scheduled", "JobRunning"]
    assert core.tick() == []  # nothing changed, heartbeat interval not over
    core.sim.clock.advance(5.0)
    (hb,) = core.tick()
    assert kinds([hb]) == ["heartbeat"] and list(hb.heartbeat.nodes) == []  # liveness only


def test_same_generation_is_a_noop_that_resends_the_status(core: Any, jobs: Any) -> None:
    registered(core)
    core.on_message(dispatch(jobs.job(jobs.task("w", 2))))
    core.tick()
    pods_before = dict(core.sim.backend.pods())
    out = core.on_message(dispatch(jobs.job(jobs.task("w", 2))))
    assert kinds(out) == ["accepted", "status"]
    assert out[1].status.phase == "Running" and list(out[1].status.events) == []
    assert dict(core.sim.backend.pods()) == pods_before


def test_higher_generation_replaces_lower_is_ignored(core: Any, jobs: Any) -> None:
    registered(core)
    core.on_message(dispatch(jobs.job(jobs.task("w", 2)), gen=1))
    core.tick()
    old = set(core.sim.backend.pods())
    assert kinds(core.on_message(dispatch(jobs.job(jobs.task("w", 2)), gen=3))) == ["accepted"]
    assert not old & set(core.sim.backend.pods())  # the old run's pods were stopped
    assert core.runs["u1"].generation == 3
    assert core.on_message(dispatch(jobs.job(jobs.task("w", 2)), gen=2)) == []
    assert core.runs["u1"].generation == 3
    (st,) = statuses(core.tick())
    assert st.generation == 3


def test_invalid_manifest_is_rejected_with_the_reason(core: Any, jobs: Any) -> None:
    registered(core)
    bad = jobs.job(jobs.task("w", -1))
    (msg,) = core.on_message(dispatch(bad))
    assert msg.rejected.job_uid == "u1" and "replicas" in msg.rejected.reason
    hub = pb.HubMessage(dispatch=pb.Dispatch(job_uid="u2", generation=1, manifest="{not json"))
    (msg2,) = core.on_message(hub)
    assert msg2.rejected.reason.startswith("invalid manifest")
    assert kinds(core.on_message(dispatch(bad))) == ["rejected"]  # asked again: same answer
    assert core.runs == {}


@pytest.mark.parametrize("kind", ["cancel", "reclaim"])
def test_cancel_and_reclaim_abort_the_run(core: Any, jobs: Any, kind: str) -> None:
    registered(core)
    core.on_message(dispatch(jobs.job(jobs.task("w", 2)), gen=2))
    core.tick()
    body = {kind: getattr(pb, kind.capitalize())(job_uid="u1", generation=1, reason="moved")}
    assert core.on_message(pb.HubMessage(**body)) == []  # older generation: not ours to stop
    assert core.runs["u1"].phase == "Running"
    core.on_message(
        pb.HubMessage(**{kind: getattr(pb, kind.capitalize())(job_uid="u1", generation=2, reason="x")})
    )
    out = core.tick()
    (st,) = statuses(out)
    assert st.phase == "Aborted"
    assert kind.capitalize() in [e.reason for e in st.events]
    assert kinds(out)[0] == "heartbeat"  # the freed capacity is reported first
    assert all(v.phase != "Running" for v in core.sim.backend.pods().values())


def test_hub_away_jobs_keep_running_and_everything_is_resent(core: Any, jobs: Any) -> None:
    registered(core)
    core.on_message(dispatch(jobs.job(jobs.task("w", 1, duration="10s")), uid="done"))
    core.on_message(dispatch(jobs.job(jobs.task("w", 1), name="other"), uid="live"))
    core.tick()
    core.on_disconnected()
    core.sim.clock.advance(20)
    assert core.tick() == []  # nothing sent while away
    assert core.runs["done"].phase == "Completed"
    (reg,) = core.on_connected()
    assert [j.job_uid for j in reg.register.jobs] == ["live"]  # finished jobs are not fenced
    out = core.on_message(pb.HubMessage(registered=pb.Registered(heartbeat_interval_seconds=5.0)))
    sts = {s.job_uid: s for s in statuses(out)}
    assert kinds(out)[0] == "heartbeat"
    assert sts["done"].phase == "Completed" and "JobCompleted" in [e.reason for e in sts["done"].events]
    assert sts["live"].phase == "Running"


def test_finished_jobs_are_forgotten_after_retention(core: Any, jobs: Any) -> None:
    registered(core)
    core.on_message(dispatch(jobs.job(jobs.task("w", 1, duration="1s"))))
    core.tick()
    core.sim.clock.advance(2)
    core.tick()
    assert core.runs["u1"].phase == "Completed"
    core.sim.clock.advance(599)
    core.tick()
    assert "u1" in core.runs
    core.sim.clock.advance(2)
    core.tick()
    assert "u1" not in core.runs
    assert core.on_message(dispatch(jobs.job(jobs.task("w", 1, duration="1s")))) == []  # not run twice


def test_bind_timeout_rejects_so_the_hub_can_try_elsewhere(core: Any, jobs: Any) -> None:
    registered(core)
    core.on_message(dispatch(jobs.job(jobs.task("w", 3, cpu="6"))))  # 3 pods, room for 2
    out = core.tick()
    (st,) = statuses(out)
    assert st.phase == "Pending" and st.message
    core.sim.clock.advance(61)
    out = core.tick()
    assert "rejected" in kinds(out)
    rej = next(m.rejected for m in out if m.WhichOneof("body") == "rejected")
    assert (rej.job_uid, rej.generation) == ("u1", 1) and "60s" in rej.reason
    assert core.sim.backend.pods() == {}


def _evict(uid: str, gen: int, *pods: str) -> pb.HubMessage:
    return pb.HubMessage(evict=pb.Evict(job_uid=uid, generation=gen, pod_uids=list(pods), reason="preempted"))


def test_evict_takes_exactly_the_named_pods_and_applies_pod_evicted_policies(core: Any, jobs: Any) -> None:
    registered(core)
    core.on_message(dispatch(jobs.job(jobs.task("w", 3), minAvailable=1)))
    out = core.tick()
    (st,) = statuses(out)
    uids = {p.pod: p.uid for p in st.placements}
    assert all(uids.values())  # every reported pod carries its incarnation's uid
    assert core.on_message(_evict("u1", 2, uids["job-w-2"])) == []  # another generation's: ignored
    assert len(core.sim.backend.pods()) == 3
    core.on_message(_evict("u1", 1, uids["job-w-2"]))
    (st,) = statuses(core.tick())
    assert "job-w-2" not in {p.pod for p in st.placements if p.uid == uids["job-w-2"]}
    assert any(e.reason == "PodEvicted" and "preempted" in e.message for e in st.events)
    # No policy: the job syncs and creates a new incarnation of the pod; a re-sent Evict names
    # the old one and changes nothing.
    now = {p.pod: p.uid for p in st.placements}
    assert now["job-w-2"] != uids["job-w-2"]
    core.on_message(_evict("u1", 1, uids["job-w-2"]))
    assert {p.uid for p in statuses(core.tick()) for p in p.placements} <= set(now.values())
    assert len(core.sim.backend.pods()) == 3


def test_evict_with_restart_job_policy_restarts_the_run_in_place(core: Any, jobs: Any) -> None:
    registered(core)
    policy = [{"event": "PodEvicted", "action": "RestartJob"}]
    core.on_message(dispatch(jobs.job(jobs.task("w", 3), minAvailable=1, policies=policy)))
    (st,) = statuses(core.tick())
    uids = [p.uid for p in st.placements]
    core.on_message(_evict("u1", 1, uids[1], uids[2]))  # the first eviction's RestartJob takes all
    core.tick()
    run = core.runs["u1"]
    assert run.retry_count == 1 and run.generation == 1
    assert not set(uids) & {m.uid for m in run.pods.values()}


@pytest.mark.parametrize("policy", ["", "Never"])
def test_the_dispatched_preemption_policy_reaches_the_scheduler(core: Any, jobs: Any, policy: str) -> None:
    registered(core)
    msg = dispatch(jobs.job(jobs.task("w", 1)))
    msg.dispatch.preemption_policy = policy
    core.on_message(msg)
    (spec,) = job_specs(core)
    assert spec.preemption_policy == (policy or "PreemptLowerPriority")


@pytest.mark.parametrize(("other", "policy"), [("Never", "Never"), (None, "PreemptLowerPriority")])
def test_pod_template_preemption_policies_hold_for_the_job(
    core: Any, jobs: Any, other: str | None, policy: str
) -> None:
    """Never when every task's template says so; a task that says nothing may preempt."""
    registered(core)
    patient, x = jobs.task("w", 1), jobs.task("x", 1)
    patient["template"]["spec"]["preemptionPolicy"] = "Never"
    if other is not None:
        x["template"]["spec"]["preemptionPolicy"] = other
    core.on_message(dispatch(jobs.job(patient, x)))
    (spec,) = job_specs(core)
    assert spec.preemption_policy == policy


def test_a_task_with_its_own_priority_class_gets_its_value(core: Any, jobs: Any) -> None:
    registered(core)
    msg = dispatch(jobs.job(jobs.task("w", 1), jobs.task("ps", 1)))
    msg.dispatch.priority = 10
    msg.dispatch.task_priorities["ps"] = 1000
    core.on_message(msg)
    (spec,) = job_specs(core)
    assert sorted((t.role, t.priority) for t in spec.tasks) == [("ps", 1000), ("w", 10)]


def job_specs(core: Core) -> list[Any]:
    return [job_spec(r) for r in core.runtime.controller.runs.values()]


def test_a_dispatch_of_the_same_run_with_a_higher_spec_generation_changes_it_in_place(
    core: Any, jobs: Any
) -> None:
    registered(core)
    first = dispatch(jobs.job(jobs.task("w", 2)))
    first.dispatch.spec_generation = 1
    core.on_message(first)
    st = statuses(core.tick())[-1]
    assert st.tasks[0].running == 2 and st.observed_generation == 1
    names = sorted(p.uid for p in st.placements)
    more = dispatch(jobs.job(jobs.task("w", 3)))
    more.dispatch.spec_generation = 2
    assert core.on_message(more) == []  # no accept: the run is the same
    st = statuses(core.tick())[-1]
    assert st.generation == 1 and st.observed_generation == 2 and st.tasks[0].running == 3
    assert set(names) <= {p.uid for p in st.placements}  # the first pods kept running
    fewer = dispatch(jobs.job(jobs.task("w", 1)))
    fewer.dispatch.spec_generation = 3
    core.on_message(fewer)
    st = statuses(core.tick())[-1]
    assert [p.pod for p in st.placements] == ["job-w-0"] and st.observed_generation == 3
    core.on_message(more)  # a late one of an older generation changes nothing
    assert not statuses(core.tick())
