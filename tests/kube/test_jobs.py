"""A job's pods in the cluster: their shape, the gang bind, policies on exit codes, cancel, and what
the API server refuses (422, 403, a missing namespace)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.kube.harness import Agent, Cluster, cancel, dispatch, job_yaml, kinds, wait_for


def test_a_gang_is_created_named_labelled_owned_and_bound_then_completes(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str
) -> None:
    agent = make_agent()
    manifest = job_yaml("train", ns, replicas=3, duration="1s", annotations="team.example.com/owner: ml")
    assert kinds(agent.send(dispatch("uid-train", 1, manifest))) == ["accepted"]
    agent.until(lambda: agent.finished("uid-train"), 30, "train to finish")
    assert agent.run("uid-train").phase == "Completed"
    pods = cluster.pods(ns, "volcano.sh/job-name=train")
    assert [p.metadata.name for p in pods] == ["train-main-0", "train-main-1", "train-main-2"]
    for i, p in enumerate(pods):
        labels, notes = p.metadata.labels, p.metadata.annotations
        assert labels["vglobal.io/job-uid"] == "uid-train" and labels["vglobal.io/generation"] == "1"
        assert labels["volcano.sh/job-name"] == "train" and labels["volcano.sh/task-spec"] == "main"
        assert notes["volcano.sh/task-index"] == str(i) and notes["volcano.sh/queue-name"] == "default"
        assert notes["scheduling.k8s.io/group-name"] == "train"
        assert notes["team.example.com/owner"] == "ml"  # the template's annotations pass through
        assert p.spec.scheduler_name == "vglobal" and p.spec.node_name
        (owner,) = p.metadata.owner_references
        assert (owner.kind, owner.name) == ("ConfigMap", "train-vglobal") and not owner.block_owner_deletion
        assert p.status.phase == "Succeeded"
    assert "train-vglobal" in cluster.configmaps(ns)


def test_a_gang_that_does_not_fit_whole_binds_nothing(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str, emulator: Any
) -> None:
    agent = make_agent()
    # 4 nodes x 8 cpu: five 7-cpu pods cannot all start, so none is bound
    agent.send(dispatch("uid-big", 1, job_yaml("big", ns, replicas=5, cpu="7", duration=None)))
    agent.until(lambda: len(cluster.pods(ns)) == 5, 15, "the five pods created")
    agent.until(lambda: agent.run("uid-big").message, 10, "a reason why the gang waits")
    for _ in range(10):
        agent.step()
    assert emulator.counts().get("create pods/binding", 0) == 0
    assert all(p.spec.node_name is None for p in cluster.pods(ns))
    assert (
        "5/5 tasks in gang unschedulable" in agent.run("uid-big").message
        or "gang" in agent.run("uid-big").message
    )


def test_an_exit_code_policy_restarts_the_task_then_the_job_fails(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str
) -> None:
    agent = make_agent()
    spec = "\n  maxRetry: 1\n  policies: [{exitCode: 3, action: RestartTask}]"
    agent.send(
        dispatch("uid-exit", 1, job_yaml("exit", ns, replicas=1, duration="1s", exit_code=3, extra_spec=spec))
    )
    run = agent.until(lambda: agent.finished("uid-exit"), 40, "the job to end")
    assert run.phase == "Failed" and run.retry_count == 1
    text = "\n".join(agent.events("uid-exit"))
    assert "exit code 3" in text and "RestartTask" in text


def test_cancel_removes_every_object_of_the_job(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str
) -> None:
    agent = make_agent()
    manifest = job_yaml("svcjob", ns, replicas=2, duration=None, extra_spec="\n  plugins: {svc: []}")
    agent.send(dispatch("uid-svc", 1, manifest))
    agent.until(lambda: agent.run("uid-svc").phase == "Running", 20, "svcjob running")
    assert cluster.services(ns) == ["svcjob"] and {"svcjob-svc", "svcjob-vglobal"} <= set(
        cluster.configmaps(ns)
    )
    agent.send(cancel("uid-svc", 1))
    agent.until(lambda: agent.finished("uid-svc"), 10, "the run to stop")
    assert agent.run("uid-svc").phase == "Aborted"
    agent.until(
        lambda: (
            not cluster.pods(ns)
            and not cluster.services(ns)
            and not [c for c in cluster.configmaps(ns) if "svcjob" in c]
        ),
        30,
        "every pod, service and config map of the job gone",
    )


def test_a_pod_the_server_refuses_fails_the_job_with_its_message(
    make_agent: Callable[..., Agent], ns: str
) -> None:
    agent = make_agent()
    manifest = job_yaml("bad", ns, replicas=1).replace(
        "- name: main\n          image", "- name: Main_Container\n          image"
    )
    agent.send(dispatch("uid-bad", 1, manifest))
    run = agent.until(lambda: agent.finished("uid-bad"), 15, "the job to fail")
    assert run.phase == "Failed"
    assert any("Main_Container" in e for e in agent.events("uid-bad")), agent.events("uid-bad")


def test_forbidden_binding_names_the_missing_rbac_rule(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str, emulator: Any
) -> None:
    agent = make_agent()
    emulator.fail(403, count=None, path="/binding$")
    agent.send(dispatch("uid-rbac", 1, job_yaml("rbac", ns, replicas=1, duration=None)))
    rule = 'apiGroups [""], resources [pods/binding], verbs [create]'
    agent.until(lambda: any(rule in e for e in agent.events("uid-rbac")), 15, "the rule in the job's events")
    wait_for(lambda: any(rule in e for e in cluster.events(ns)), 10, "the rule in the cluster's events")
    emulator.clear_faults()
    agent.until(lambda: agent.run("uid-rbac").phase == "Running", 20, "running once RBAC allows it")


def test_a_missing_namespace_hands_the_job_back_unless_the_agent_may_create_it(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str
) -> None:
    agent = make_agent()
    out = agent.send(dispatch("uid-nons", 1, job_yaml("nons", f"{ns}-missing", replicas=1)))
    assert kinds(out) == ["rejected"]
    assert "does not exist" in out[0].rejected.reason
    limited = make_agent(namespaces=frozenset({"elsewhere"}))
    (msg,) = limited.send(dispatch("uid-other", 1, job_yaml("other", ns, replicas=1)))
    assert "--namespaces elsewhere" in msg.rejected.reason
    creating = make_agent(create_namespaces=True)
    created = f"{ns}-made"
    try:
        (ok,) = creating.send(dispatch("uid-made", 1, job_yaml("made", created, replicas=1, duration="1s")))
        assert ok.WhichOneof("body") == "accepted"
        creating.until(lambda: creating.finished("uid-made"), 30, "the job in the new namespace")
    finally:
        cluster.delete_namespace(created)


def test_evictions_lost_nodes_and_oom_kills_reach_the_job(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str, emulator: Any
) -> None:
    agent = make_agent()
    spec = "\n  maxRetry: 2\n  policies: [{event: PodEvicted, action: RestartJob}]"
    agent.send(dispatch("uid-ev", 1, job_yaml("ev", ns, replicas=2, duration=None, extra_spec=spec)))
    agent.until(lambda: agent.run("uid-ev").phase == "Running", 20, "ev running")
    # the kubelet evicts under node pressure: Failed, reason Evicted -> the PodEvicted policy
    emulator.evict_node(cluster.pods(ns)[0].spec.node_name)
    agent.until(lambda: agent.run("uid-ev").retry_count == 1, 15, "a restart by the PodEvicted policy")
    assert any("was evicted (Evicted)" in e for e in agent.events("uid-ev"))
    agent.until(
        lambda: agent.run("uid-ev").phase == "Running" and len(cluster.live_pods(ns)) == 2, 30, "again"
    )
    # a node that stops being Ready: the job is told its pod there may be lost
    node = cluster.live_pods(ns)[0].spec.node_name
    emulator.set_node_ready(node, False)
    agent.until(
        lambda: any(e.startswith("NodeNotReady") and node in e for e in agent.events("uid-ev")), 10, "told"
    )
    emulator.set_node_ready(node, True)
    # an OOM kill is a failure with its exit code and reason
    emulator.oom_kill(ns, cluster.live_pods(ns)[1].metadata.name)
    agent.until(
        lambda: any("exit code 137 (OOMKilled)" in e for e in agent.events("uid-ev")), 10, "the OOM kill"
    )
