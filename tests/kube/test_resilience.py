"""The agent against an unreliable API server: expired watches, cut watches, 429s, a server that stops
answering. Nothing is lost, nothing crashes, and the agent says when it cannot reach the server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.kube.harness import Agent, Cluster, dispatch, job_yaml


def test_an_expired_watch_lists_again_and_sees_what_changed_meanwhile(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str, emulator: Any
) -> None:
    agent = make_agent()
    agent.send(dispatch("uid-a", 1, job_yaml("a", ns, replicas=2, duration=None)))
    agent.until(lambda: agent.run("uid-a").phase == "Running", 20, "a running")
    lists = emulator.counts().get("list pods", 0)
    # the agent's pod watch cannot reconnect while a pod goes and the history is forgotten
    emulator.fail(500, count=None, path="^/api/v1/pods$")
    emulator.drop_watches()
    cluster.core.delete_namespaced_pod("a-main-0", ns, grace_period_seconds=0)
    emulator.compact()
    emulator.clear_faults()
    agent.until(lambda: emulator.counts().get("list pods", 0) > lists, 15, "a fresh list after 410")
    agent.until(
        lambda: any("a-main-0 was evicted" in e for e in agent.events("uid-a")), 10, "the deletion noticed"
    )


def test_a_cut_watch_resumes_without_losing_events(
    make_agent: Callable[..., Agent], ns: str, emulator: Any
) -> None:
    agent = make_agent()
    agent.send(dispatch("uid-b", 1, job_yaml("b", ns, replicas=2, duration="2s")))
    agent.until(lambda: agent.run("uid-b").phase == "Running", 20, "b running")
    # read once every pod informer has listed (the Pod kind's own starts without being waited for)
    lists = emulator.counts().get("list pods", 0)
    emulator.drop_watches(abort=True)
    run = agent.until(lambda: agent.finished("uid-b"), 20, "b to complete across the cut")
    assert run.phase == "Completed"
    assert emulator.counts().get("list pods", 0) == lists  # resumed from its version: no relist


def test_429_and_500_answers_are_tried_again_with_back_off(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str, emulator: Any
) -> None:
    agent = make_agent()
    emulator.fail(429, count=4, path="/pods$", method="POST", retry_after=1)
    emulator.fail(500, count=2, path="/binding$")
    agent.send(dispatch("uid-c", 1, job_yaml("c", ns, replicas=2, duration="1s")))
    run = agent.until(lambda: agent.finished("uid-c"), 30, "c to complete despite the refusals")
    assert run.phase == "Completed"
    refused = emulator.requests(code=429)
    assert len(refused) == 4 and all(r["method"] == "POST" for r in refused)
    assert len(emulator.requests(code=500)) == 2
    assert len(cluster.pods(ns)) == 2  # no duplicate from a retried create


def test_an_unreachable_api_server_keeps_the_jobs_and_is_reported(
    make_agent: Callable[..., Agent], ns: str, emulator: Any
) -> None:
    agent = make_agent()
    agent.backend.probe.interval = 0.2
    agent.send(dispatch("uid-d", 1, job_yaml("d", ns, replicas=1, duration=None)))
    agent.until(lambda: agent.run("uid-d").phase == "Running", 20, "d running")
    emulator.pause()
    try:
        problem = agent.until(agent.backend.api_problem, 15, "the API counted unreachable")
        assert problem
        seen = len(agent.out)
        agent.until(
            lambda: any(
                m.heartbeat.api_unreachable for m in agent.out[seen:] if m.WhichOneof("body") == "heartbeat"
            ),
            10,
            "a heartbeat saying so",
        )
        assert agent.run("uid-d").phase == "Running" and not agent.run("uid-d").finished
    finally:
        emulator.resume()
    agent.until(lambda: not agent.backend.api_problem(), 15, "reachable again")
    assert agent.run("uid-d").phase == "Running"
