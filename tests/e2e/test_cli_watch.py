"""`vglobal get jobs -w` and `vglobal describe job NAME -w` as a user runs them: each printed change
is read as it comes, up to the phase change the test waits for."""

from __future__ import annotations

import json

import pytest

from tests.e2e.harness import System, sim_cluster, wait_for
from tests.e2e.streams import Stream

pytestmark = pytest.mark.e2e

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: %(name)s
  labels: {team: %(team)s}
  annotations: {vglobal.io/sim-duration: 2s}
spec:
  minAvailable: 1
  tasks:
  - name: main
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""


def _apply(system: System, name: str, team: str = "a") -> None:
    path = system.tmp / f"{name}.yaml"
    path.write_text(JOB % {"name": name, "team": team})
    assert f"{name} created" in system.cli("apply", "-f", str(path)).stdout


def _json_row(name: str, event: str, phase: str):  # type: ignore[no-untyped-def]
    def match(line: str) -> bool:
        if not line.startswith("{"):
            return False
        row = json.loads(line)
        return bool(row["name"] == name and row["event"] == event and row["phase"] == phase)

    return match


def test_get_jobs_watch_lists_then_prints_each_change_until_interrupted(system: System) -> None:
    # No agent yet: the job waits Pending, so the watch sees it listed and then every phase change.
    system.start_hub()
    _apply(system, "first")
    with Stream(system.target, "get", "jobs", "-w", "-o", "json") as watch:
        watch.expect(_json_row("first", "LISTED", "Pending"), "first listed Pending")
        _apply(system, "second")
        watch.expect(_json_row("second", "ADDED", "Pending"), "second added")
        system.start_agent("east", sim_cluster("east", nodes=1))
        watch.expect(_json_row("first", "MODIFIED", "Running"), "first Running")
        watch.expect(_json_row("first", "MODIFIED", "Completed"), "first Completed")
        watch.expect(_json_row("second", "MODIFIED", "Completed"), "second Completed")
        assert watch.interrupt() == 0
    revisions = [json.loads(line)["revision"] for line in watch.lines if line.startswith("{")]
    assert revisions == sorted(revisions), "changes are printed in revision order"


def test_get_jobs_watch_as_a_table_and_by_label(system: System) -> None:
    system.start_hub()
    system.start_agent("east", sim_cluster("east", nodes=1))
    wait_for(lambda: len(system.get_json("clusters")) == 1, 60, "east registered", system)
    with Stream(system.target, "get", "jobs", "-w", "-l", "team=b") as watch:
        header = watch.expect(lambda line: line.startswith("EVENT"), "the header")
        assert "NAME" in header and "PHASE" in header
        _apply(system, "other-team", team="a")
        _apply(system, "ours", team="b")
        done = watch.expect(lambda line: "ours" in line and "Completed" in line, "ours Completed")
        assert done.split()[0] == "MODIFIED"
        assert watch.interrupt() == 0
    assert not any("other-team" in line for line in watch.lines), "the selector keeps other jobs out"


def test_describe_job_watch_follows_the_job_until_it_is_deleted(system: System) -> None:
    system.start_hub()
    _apply(system, "followed")
    with Stream(system.target, "describe", "job", "followed", "-w") as follow:
        follow.expect(lambda line: line.startswith("Following"), "the description, then following")
        assert any("followed" in line for line in follow.lines), "describe printed the job first"
        system.start_agent("east", sim_cluster("east", nodes=1))
        running = follow.expect(lambda line: "phase Running" in line, "phase Running")
        assert "on east (generation 1)" in running
        follow.expect(lambda line: "phase Completed" in line, "phase Completed")
        system.cli("delete", "job", "followed")
        follow.expect(lambda line: "DELETED" in line, "the deletion")
        assert follow.wait() == 0, "the follow ends by itself once the job is deleted"
    events = [line for line in follow.lines if " event " in line]
    assert any("Dispatched" in line for line in events), follow.lines


def test_watching_what_cannot_be_watched_is_refused(system: System) -> None:
    system.start_hub()
    res = system.cli("get", "priorityclasses", "-w", check=False)
    assert res.returncode == 1 and "--watch: only lists of jobs, hyperjobs, queues and clusters" in res.stderr
    res = system.cli("describe", "jobflow", "x", "-w", check=False)
    assert res.returncode == 1 and "--watch: only a job or a hyperjob can be followed" in res.stderr
    res = system.cli("describe", "job", "missing", "-w", check=False)
    assert res.returncode == 1 and "not found" in res.stderr
