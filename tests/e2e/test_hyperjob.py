"""HyperJobs through a real hub and simulated clusters' agents: a gang across clusters, waiting
whole with a reason, the auto split, and a lost cluster that moves only its child."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Callable

import pytest

from tests.e2e.harness import System, sim_cluster, wait_for
from tests.e2e.streams import Stream
from vglobal.aio import AsyncClient

pytestmark = pytest.mark.e2e

HELD = "1000h"  # runs until stopped

HYPERJOB = """
apiVersion: training.volcano.sh/v1alpha1
kind: HyperJob
metadata: {name: llm}
spec:
  replicatedJobs:
  - name: trainer
    replicas: 3
    templateSpec:
      tasks:
      - name: worker
        replicas: 4
        template:
          metadata: {annotations: {vglobal.io/sim-duration: %s}}
          spec:
            containers: [{name: c, image: x, resources: {requests: {cpu: "1", nvidia.com/gpu: "8"}}}]
"""

BLOCKER = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: blocker, annotations: {vglobal.io/clusters: c3, vglobal.io/sim-duration: 1000h}}
spec:
  tasks:
  - name: t
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1", nvidia.com/gpu: "8"}}}]
"""

AUTO = """
apiVersion: training.volcano.sh/v1alpha1
kind: HyperJob
metadata: {name: auto}
spec:
  replicatedJobs:
  - name: part
    splitPolicy: {mode: auto, accelerators: 80}
    templateSpec:
      tasks:
      - name: worker
        replicas: 1
        template:
          metadata: {annotations: {vglobal.io/sim-duration: 1000h}}
          spec:
            containers: [{name: c, image: x, resources: {requests: {cpu: "1", nvidia.com/gpu: "8"}}}]
"""

CHILDREN = ["llm-trainer-0", "llm-trainer-1", "llm-trainer-2"]


def _clusters(system: System, n: int) -> None:
    wait_for(
        lambda: sum(c["state"] == "Ready" for c in system.get_json("clusters")) == n,
        60,
        f"{n} clusters",
        system,
    )


def test_three_children_wait_whole_then_start_whole_one_per_cluster_and_failover_moves_one(
    system: System,
) -> None:
    system.start_hub("--cluster-timeout", "2s", "--failover-after", "1s")
    for name in ("c1", "c2", "c3"):
        system.start_agent(name, sim_cluster(name, nodes=4))
    _clusters(system, 3)
    system.apply_text("blocker", BLOCKER)
    with system.client() as c:
        wait_for(lambda: c.get_job("blocker").phase == "Running", 60, "the blocker runs on c3", system)
        out = system.apply_text("hj", HYPERJOB % HELD).stdout
        assert "hyperjob.training.volcano.sh/default/llm created (3 children" in out
        # c3 has 24 of its 32 GPUs free: no child may start, and the reason names c3.
        reason = wait_for(
            lambda: "c3" in (r := c.explain_job("llm-trainer-2").reason) and r,
            60,
            "a reason naming c3",
            system,
        )
        assert "waits whole" in reason
        for name in CHILDREN:
            assert c.get_job(name).binding_phase == "Suspended"
        described = system.cli("describe", "hyperjob", "llm").stdout
        assert "Phase:         Pending" in described and "c3" in described
        waiting = c.get_hyperjob("llm")
        assert waiting.phase == "Pending" and waiting.running_children == 0 and "c3" in waiting.waiting_reason
        assert [k.name for k in waiting.children] == CHILDREN and [k.index for k in waiting.children] == [
            0,
            1,
            2,
        ]
        c.cancel_job("blocker")
        wait_for(
            lambda: all(c.get_job(n).phase == "Running" for n in CHILDREN),
            90,
            "all three children run",
            system,
        )
        placed = {n: c.get_job(n).cluster for n in CHILDREN}
        assert sorted(placed.values()) == ["c1", "c2", "c3"]
        wait_for(
            lambda: sum(k.running for k in c.get_hyperjob("llm").children) == 12,
            60,
            "12 pods running",
            system,
        )
        running = c.get_hyperjob("llm")
        assert running.phase == "Running" and running.running_children == 3 and running.min_available == 3
        assert {k.name: k.cluster for k in running.children} == placed
        assert [h.name for h in c.list_hyperjobs()] == ["llm"]
        listed = system.cli("get", "hyperjobs").stdout
        assert "llm" in listed and "Running" in listed and "3/3" in listed
        got = c.get_job("llm-trainer-1")
        env = got.manifest
        assert "VGLOBAL_HYPERJOB_RANK_OFFSET" in env and '"4"' in env.replace(" ", "")

        # A fourth cluster joins; the cluster of child 1 is lost: only that child moves, once.
        system.start_agent("c4", sim_cluster("c4", nodes=4))
        _clusters(system, 4)
        lost = placed["llm-trainer-1"]
        system.kill(f"agent-{lost}", signal.SIGKILL)
        wait_for(
            lambda: (j := c.get_job("llm-trainer-1")).cluster == "c4" and j.phase == "Running",
            90,
            "child 1 to move to c4",
            system,
        )
        for name in CHILDREN:
            history = [(d.generation, d.cluster, d.fenced) for d in c.job_dispatches(name)]
            if name == "llm-trainer-1":
                assert history == [(1, lost, True), (2, "c4", False)]
            else:
                assert history == [(1, placed[name], False)]
                assert c.get_job(name).phase == "Running"
        # A child goes only with its HyperJob; the generic verbs take the HyperJob itself.
        for verb in ("delete", "cancel"):
            alone = system.cli(verb, "job", "llm-trainer-0", check=False)
            assert alone.returncode != 0 and (
                "FAILED_PRECONDITION: job default/llm-trainer-0 belongs to hyperjob default/llm: "
                "delete or cancel the hyperjob"
            ) in " ".join((alone.stdout + alone.stderr).split())
        assert c.get_job("llm-trainer-0").phase == "Running"
        assert "llm" in system.cli("get", "hyperjob", "llm").stdout
        out = system.cli("cancel", "hyperjob", "llm").stdout
        assert "cancelled (3 children)" in out
        wait_for(
            lambda: all(c.get_job(n).phase == "Aborted" for n in CHILDREN), 60, "every child aborted", system
        )
        assert "Aborted" in system.cli("describe", "hyperjob", "llm").stdout
        assert c.get_hyperjob("llm").phase == "Aborted"
        out = system.cli("delete", "hyperjob", "llm").stdout
        assert "deleted (3 children)" in out
        assert c.list_hyperjobs() == [] and c.list_jobs(labels={"volcano.sh/hyperjob-name": "llm"}) == []
        missing = system.cli("describe", "hyperjob", "llm", check=False)
        assert missing.returncode != 0 and "not found" in missing.stdout + missing.stderr


def test_auto_split_divides_80_gpus_as_32_32_16(system: System) -> None:
    system.start_hub()
    system.start_agent("a", sim_cluster("a", nodes=4))
    system.start_agent("b", sim_cluster("b", nodes=4))
    system.start_agent("c", sim_cluster("c", nodes=2))
    _clusters(system, 3)
    out = system.apply_text("auto", AUTO).stdout
    assert "3 children" in out
    with system.client() as c:
        names = ["auto-part-0", "auto-part-1", "auto-part-2"]
        wait_for(
            lambda: all(c.get_job(n).phase == "Running" for n in names), 90, "the three parts run", system
        )
        shares = sorted(
            (c.get_job(n).cluster, sum(t.replicas for t in c.get_job(n).tasks) * 8) for n in names
        )
    assert shares == [("a", 32), ("b", 32), ("c", 16)]


FAILING = """
apiVersion: training.volcano.sh/v1alpha1
kind: HyperJob
metadata: {name: flaky}
spec:
  %s
  replicatedJobs:
  - name: bad
    templateSpec:
      tasks:
      - name: w
        replicas: 1
        template:
          metadata: {annotations: {vglobal.io/sim-duration: 1s, vglobal.io/sim-exit-code: "1"}}
          spec:
            containers: [{name: c, image: x, resources: {requests: {cpu: "1", nvidia.com/gpu: "8"}}}]
  - name: good
    templateSpec:
      tasks:
      - name: w
        replicas: 1
        template:
          metadata: {annotations: {vglobal.io/sim-duration: 1000h}}
          spec:
            containers: [{name: c, image: x, resources: {requests: {cpu: "1", nvidia.com/gpu: "8"}}}]
"""


def _three_small_clusters(system: System) -> None:
    system.start_hub()
    for name in ("c1", "c2", "c3"):
        system.start_agent(name, sim_cluster(name, nodes=1))
    _clusters(system, 3)


def test_a_failed_child_restarts_on_its_cluster_until_its_restarts_run_out(system: System) -> None:
    _three_small_clusters(system)
    system.apply_text("flaky", FAILING % "minAvailable: 2")  # failurePolicy: RestartChild by default
    with system.client() as c:
        wait_for(
            lambda: c.get_job("flaky-bad-0").phase == "Failed", 120, "the bad child to fail at last", system
        )
        runs = [(d.generation, d.cluster) for d in c.job_dispatches("flaky-bad-0")]
        first = runs[0][1]
        assert runs == [(g, first) for g in (1, 2, 3, 4)]  # three restarts, all in place
        good = c.job_dispatches("flaky-good-0")
        assert [d.generation for d in good] == [1] and good[0].cluster != first
        assert c.get_job("flaky-good-0").phase == "Running"
        reasons = [
            e.message for e in c.explain_job("flaky-bad-0").events if e.reason == "HyperJobFailurePolicy"
        ]
        assert len(reasons) == 3 and all("RestartChild" in r for r in reasons)
        assert "Phase:         Failed" in system.cli("describe", "hyperjob", "flaky").stdout


def test_move_child_moves_only_the_failed_child_to_another_cluster(system: System) -> None:
    _three_small_clusters(system)
    system.apply_text("flaky", FAILING % "failurePolicy: MoveChild")
    with system.client() as c:
        # It fails on one cluster, moves to the one free cluster left, fails there too, and then
        # waits: both are skipped for a while (the third runs the good child).
        wait_for(
            lambda: (
                len(c.job_dispatches("flaky-bad-0")) == 2
                and c.get_job("flaky-bad-0").binding_phase == "Suspended"
            ),
            120,
            "the bad child to fail on two clusters",
            system,
        )
        bad = [d.cluster for d in c.job_dispatches("flaky-bad-0")]
        good = c.job_dispatches("flaky-good-0")
        assert len(set(bad)) == 2 and good[0].cluster not in bad
        assert [d.generation for d in good] == [1] and c.get_job("flaky-good-0").phase == "Running"
        reasons = [
            e.message for e in c.explain_job("flaky-bad-0").events if e.reason == "HyperJobFailurePolicy"
        ]
        assert len(reasons) == 2 and all("MoveChild" in r for r in reasons)


def test_restart_all_restarts_every_child_and_fences_their_old_runs(system: System) -> None:
    _three_small_clusters(system)
    system.apply_text("flaky", FAILING % "failurePolicy: RestartAll")
    with system.client() as c:
        wait_for(
            lambda: c.get_job("flaky-bad-0").phase == "Failed", 120, "the bad child to fail at last", system
        )
        assert [d.generation for d in c.job_dispatches("flaky-bad-0")] == [1, 2, 3, 4]
        good = c.job_dispatches("flaky-good-0")
        # The good child was started anew with each restart; only its last run is current.
        assert [(d.generation, d.fenced) for d in good] == [(1, True), (2, True), (3, True), (4, False)]
        wait_for(
            lambda: c.get_job("flaky-good-0").phase == "Running", 60, "the good child to run again", system
        )


PAIR = """
apiVersion: training.volcano.sh/v1alpha1
kind: HyperJob
metadata: {name: pair}
spec:
  replicatedJobs:
  - name: w
    replicas: 2
    templateSpec:
      tasks:
      - name: w
        replicas: 1
        template:
          metadata: {annotations: {vglobal.io/sim-duration: 1000h}}
          spec:
            containers: [{name: c, image: x, resources: {requests: {cpu: "1", nvidia.com/gpu: "8"}}}]
"""


def _hyperjob_row(name: str, event: str, phase: str):  # type: ignore[no-untyped-def]
    def match(line: str) -> bool:
        if not line.startswith("{"):
            return False
        row = json.loads(line)
        return bool(row["name"] == name and row["event"] == event and row["phase"] == phase)

    return match


async def _async_phases(target: str) -> tuple[str, list[str]]:
    async with AsyncClient(target) as ac:
        one = await ac.get_hyperjob("pair")
        return one.phase, [h.phase for h in await ac.list_hyperjobs("default")]


def test_get_hyperjobs_watch_prints_each_change_of_its_status(system: System) -> None:
    # No cluster yet: the HyperJob waits, listed Pending; every later line is a change of its status.
    system.start_hub()
    system.apply_text("pair", PAIR)
    with Stream(system.target, "get", "hyperjobs", "-w", "-o", "json") as watch:
        watch.expect(_hyperjob_row("pair", "LISTED", "Pending"), "pair listed Pending")
        system.start_agent("solo", sim_cluster("solo", nodes=2))  # room for both children
        watch.expect(_hyperjob_row("pair", "MODIFIED", "Running"), "pair Running")
        assert asyncio.run(_async_phases(system.target)) == ("Running", ["Running"])
        system.cli("hyperjob", "cancel", "pair")
        watch.expect(_hyperjob_row("pair", "MODIFIED", "Aborted"), "pair Aborted")
        system.cli("hyperjob", "delete", "pair")
        watch.expect(
            lambda line: line.startswith("{") and json.loads(line)["event"] == "DELETED", "pair deleted"
        )
        assert watch.interrupt() == 0
    rows = [json.loads(x) for x in watch.lines if x.startswith("{")]
    running = [r for r in rows if r["phase"] == "Running"]
    assert running and all(k["cluster"] == "solo" for k in running[-1]["children"])


BOTH_FAIL = """
apiVersion: training.volcano.sh/v1alpha1
kind: HyperJob
metadata: {name: both}
spec:
  failurePolicy: RestartAll
  replicatedJobs:
  - name: w
    replicas: 2
    templateSpec:
      tasks:
      - name: w
        replicas: 1
        template:
          metadata: {annotations: {vglobal.io/sim-duration: 1s, vglobal.io/sim-exit-code: "1"}}
          spec:
            containers: [{name: c, image: x, resources: {requests: {cpu: "1", nvidia.com/gpu: "8"}}}]
"""


def test_two_children_failing_at_once_on_two_agents_restart_the_hyperjob_once_each_time(
    system: System,
) -> None:
    # Both children start in one cycle on two clusters and fail a second later, each reported by
    # its own agent: every such double failure is one restart of the whole HyperJob.
    system.start_hub()
    for name in ("c1", "c2"):
        system.start_agent(name, sim_cluster(name, nodes=1))
    _clusters(system, 2)
    system.apply_text("both", BOTH_FAIL)
    names = ["both-w-0", "both-w-1"]
    with system.client() as c:
        wait_for(
            lambda: all(c.get_job(n).phase == "Failed" for n in names),
            180,
            "both children to fail at last",
            system,
        )
        for name in names:
            runs = c.job_dispatches(name)
            # Three restarts, no more: one run per generation, on one cluster each, all but the
            # last fenced; never two runs of one generation.
            assert [d.generation for d in runs] == [1, 2, 3, 4]
            assert [d.fenced for d in runs] == [True, True, True, False]
            said = [e.message for e in c.explain_job(name).events if e.reason == "HyperJobFailurePolicy"]
            assert len(said) == 3 and all("RestartAll" in m for m in said)
        assert c.get_hyperjob("both").phase == "Failed"


def _seen(stream: Stream, match: Callable[[str], bool], what: str) -> str:
    """A line printed so far that matches, else the next one."""
    return next((line for line in stream.lines if match(line)), None) or stream.expect(match, what)


def test_describe_hyperjob_shows_why_each_child_waits_and_events_and_follows_it(system: System) -> None:
    # No cluster yet: both children wait, each with its reason; then they run, are cancelled and
    # deleted while `describe hyperjob -w` follows, which ends by itself once they are gone.
    system.start_hub()
    system.apply_text("pair", PAIR)
    with system.client() as c:
        wait_for(lambda: c.get_hyperjob("pair").waiting_reason, 60, "a waiting reason", system)
    described = system.cli("describe", "hyperjob", "pair").stdout
    lines = described.splitlines()
    for child in ("pair-w-0", "pair-w-1"):
        at = next(i for i, line in enumerate(lines) if line.strip().startswith(child))
        assert "HyperJob default/pair waits whole" in lines[at + 1], described
    events = lines[lines.index("Events:") + 1 :]
    assert sum("Submitted" in line for line in events) == 2, described
    with Stream(system.target, "describe", "hyperjob", "pair", "-w") as follow:
        follow.expect(lambda line: line.startswith("Following"), "the description, then following")
        system.start_agent("solo", sim_cluster("solo", nodes=2))
        follow.expect(lambda line: line.startswith("HyperJob default/pair Running: 2/2"), "pair Running")
        # Each child's own changes and events come too (the HyperJob's line may come first: it is
        # read when a child changes, and may already show what the next change will say).
        running = _seen(follow, lambda line: "pair-w-0: phase Running" in line, "child 0 Running")
        assert "on solo (generation 1)" in running
        _seen(follow, lambda line: "pair-w-1" in line and "Dispatched" in line, "child 1's Dispatched event")
        system.cli("hyperjob", "cancel", "pair")
        follow.expect(lambda line: line.startswith("HyperJob default/pair Aborted"), "pair Aborted")
        system.cli("hyperjob", "delete", "pair")
        follow.expect(lambda line: line == "HyperJob default/pair deleted", "pair deleted")
        assert follow.wait() == 0, "the follow ends by itself once the HyperJob is deleted"


def test_apply_refuses_a_bad_hyperjob_naming_each_field_and_stores_nothing(system: System) -> None:
    system.start_hub()
    typo = PAIR.replace("replicas: 2", "replica: 2")
    bad_policy = PAIR.replace("spec:\n  replicatedJobs:", "spec:\n  failurePolicy: Retry\n  replicatedJobs:")
    for text, field in ((typo, "spec.replicatedJobs[0].replica"), (bad_policy, "spec.failurePolicy")):
        res = system.apply_text("bad", text, check=False)
        assert res.returncode == 1 and "INVALID_ARGUMENT" in res.stderr and field in res.stderr, res.stderr
    # Pinned to a cluster the hub does not know: it could never run.
    pinned = PAIR.replace("    replicas: 2\n", "    replicas: 2\n    clusterNames: [nowhere]\n")
    res = system.apply_text("pinned", pinned, check=False)
    told = 'spec.replicatedJobs[0].clusterNames[0]: cluster "nowhere" does not exist (clusters: none registered yet)'
    assert res.returncode == 1 and told in " ".join(res.stderr.split()), res.stderr
    assert system.cli("get", "hyperjobs", "-o", "json").stdout.strip() in ("[]", "")
    assert system.cli("get", "jobs", "-o", "name").stdout.strip() == ""
    # kubectl's --validate=warn: taken, with the same words as a warning.
    res = system.cli("apply", "-f", str(system.tmp / "pinned.yaml"), "--validate", "warn")
    assert f"Warning: {system.tmp / 'pinned.yaml'}" in res.stderr and told in " ".join(res.stderr.split())
    assert "pair" in system.cli("get", "hyperjobs").stdout


def test_a_hyperjob_whose_children_all_complete_is_completed(system: System) -> None:
    system.start_hub()
    system.start_agent("solo", sim_cluster("solo", nodes=2))
    _clusters(system, 1)
    system.apply_text("pair", PAIR.replace("1000h", "1s"))
    with system.client() as c:
        wait_for(lambda: c.get_hyperjob("pair").phase == "Completed", 90, "pair Completed", system)
        done = c.get_hyperjob("pair")
        assert [(k.phase, k.succeeded) for k in done.children] == [("Completed", 1), ("Completed", 1)]
    assert "Completed" in system.cli("get", "hyperjobs").stdout
