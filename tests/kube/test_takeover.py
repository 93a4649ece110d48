"""An agent that dies and one that takes over: runs rebuilt from the pods the agent labelled, no
duplicate pod, fenced generations deleted, and one active replica through a Lease."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.kube.harness import Agent, Cluster, dispatch, job_yaml, kinds, wait_for
from vglobal.agent.kube.api import KubeApi, connect
from vglobal.agent.kube.lease import LeaderElector


def test_a_new_agent_resumes_the_runs_it_finds_without_a_duplicate_pod(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str
) -> None:
    first = make_agent()
    spec = "\n  maxRetry: 3\n  policies: [{exitCode: 3, action: RestartJob}]"
    first.send(dispatch("uid-r", 4, job_yaml("r", ns, replicas=2, duration="3s", extra_spec=spec)))
    first.until(lambda: first.run("uid-r").phase == "Running", 20, "r running")
    uids = {p.metadata.uid for p in cluster.pods(ns)}
    first.abandon()  # as a kill -9: nothing is cleaned up

    second = make_agent()
    assert second.recover() == ["uid-r"]
    run = second.run("uid-r")
    assert run.generation == 4 and len(run.pods) == 2
    # the hub's dispatch of the same generation is the run it already has
    assert kinds(
        second.send(dispatch("uid-r", 4, job_yaml("r", ns, replicas=2, duration="3s", extra_spec=spec)))
    ) == [
        "accepted",
        "status",
    ]
    second.until(lambda: second.finished("uid-r"), 30, "r to complete")
    assert run.phase == "Completed"
    assert {p.metadata.uid for p in cluster.pods(ns)} == uids, "a pod was created twice"
    assert any(e.startswith("Recovered") for e in second.events("uid-r"))


def test_a_newer_generation_replaces_the_old_pods_of_the_same_names(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str
) -> None:
    agent = make_agent()
    manifest = job_yaml("g", ns, replicas=2, duration=None)
    agent.send(dispatch("uid-g", 1, manifest))
    agent.until(lambda: agent.run("uid-g").phase == "Running", 20, "gen 1 running")
    old = {p.metadata.uid for p in cluster.pods(ns)}
    agent.send(dispatch("uid-g", 2, manifest))  # the hub failed it over and back: gen 1 is fenced

    def only_gen_2() -> bool:
        pods = cluster.live_pods(ns)
        return len(pods) == 2 and all(p.metadata.labels["vglobal.io/generation"] == "2" for p in pods)

    agent.until(only_gen_2, 30, "gen 2's pods only")
    assert not old & {p.metadata.uid for p in cluster.pods(ns)}
    agent.until(lambda: agent.run("uid-g").phase == "Running", 20, "gen 2 running")


def test_recovery_deletes_pods_of_an_older_generation(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str
) -> None:
    first = make_agent()
    first.send(dispatch("uid-f", 1, job_yaml("f", ns, replicas=1, duration=None)))
    first.until(lambda: first.run("uid-f").phase == "Running", 20, "gen 1 running")
    # a second run made to look like an older generation of the same job
    other = ns + "-b"
    cluster.create_namespace(other)
    try:
        first.send(dispatch("uid-f2", 1, job_yaml("f", other, replicas=1, duration=None)))
        first.until(lambda: first.run("uid-f2").phase == "Running", 20, "the other run")
        first.abandon()
        pod = cluster.pods(other)[0]
        cluster.core.patch_namespaced_pod(
            pod.metadata.name,
            other,
            {"metadata": {"labels": {"vglobal.io/job-uid": "uid-f", "vglobal.io/generation": "0"}}},
        )
        second = make_agent()
        assert second.recover() == ["uid-f"]
        wait_for(lambda: not cluster.live_pods(other), 15, "the older generation's pod deleted")
        assert len(cluster.live_pods(ns)) == 1
    finally:
        cluster.delete_namespace(other)


def test_one_replica_holds_the_lease_and_the_standby_takes_over(kubeconfig: Path, emulator: Any) -> None:
    # The standby judges expiry by its own clock: a hand-moved one, so "not before the Lease's
    # duration, at once after it" holds however slow the machine.
    now = [0.0]

    def elector(who: str, clock: Callable[[], float] = time.monotonic) -> tuple[LeaderElector, KubeApi]:
        api = KubeApi(connect(kubeconfig=str(kubeconfig)).client, qps=0)
        return LeaderElector(
            api, namespace="default", name="vglobal-agent-x", identity=who, duration=2.0, clock=clock
        ), api

    (a, api_a), (b, api_b) = elector("agent-a_1"), elector("agent-b_1", lambda: now[0])

    def renewed_at() -> str:
        return str(b.api.request("GET", b.path)["spec"]["renewTime"])

    try:
        assert a.try_acquire_or_renew() and not b.try_acquire_or_renew()
        a.start_renewing()
        first = renewed_at()
        wait_for(lambda: renewed_at() != first, 10, "a to renew its Lease")
        now[0] += 2.0 + 1.0  # past what b last saw: but a renewed since
        assert not b.try_acquire_or_renew(), "the standby took a Lease that was being renewed"
        a._stop.set()  # a dies: no more renewals, the Lease is not given up
        a._thread.join(10)
        assert not a._thread.is_alive()
        b.try_acquire_or_renew()  # b sees a's last renewal (if it had not yet)
        now[0] += 2.0 - 0.01
        assert not b.try_acquire_or_renew(), "the standby took the Lease before it expired"
        now[0] += 0.02
        assert b.try_acquire_or_renew(), "the standby did not take the expired Lease"
        lease = b.api.request("GET", b.path)["spec"]
        assert lease["holderIdentity"] == "agent-b_1" and lease["leaseTransitions"] == 1
        # a clean stop gives the Lease up: the next candidate takes it at once
        b.start_renewing()
        b.release()
        c, api_c = elector("agent-c_1")
        assert c.try_acquire_or_renew()
        api_c.close()
    finally:
        api_a.close()
        api_b.close()
