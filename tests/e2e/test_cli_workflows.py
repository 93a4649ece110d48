"""The CronJob, JobTemplate and JobFlow commands as a user runs them: apply, get, describe,
cronjob suspend|resume, create job --from, delete (with --cascade), through the console script."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.harness import System, sim_cluster, wait_for

pytestmark = pytest.mark.e2e

TASKS = """
  tasks:
  - name: main
    replicas: 1
    template:
      metadata: {annotations: {vglobal.io/sim-duration: 1s}}
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""
# Due once a year at midnight on the first of January: no run of its own falls into the test.
CRON = """
apiVersion: batch.volcano.sh/v1alpha1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 0 1 1 *"
  timeZone: Europe/Berlin
  jobTemplate:
    spec:
      minAvailable: 1
""" + "\n".join("    " + line for line in TASKS.splitlines())


def _template(name: str) -> str:
    head = f"apiVersion: flow.volcano.sh/v1alpha1\nkind: JobTemplate\nmetadata: {{name: {name}}}\n"
    return head + "spec:\n  minAvailable: 1" + TASKS


FLOW = f"""{_template("step-a")}
---
{_template("step-b")}
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {{name: chain}}
spec:
  jobRetainPolicy: retain
  flows:
  - name: step-a
  - name: step-b
    dependsOn: {{targets: [step-a]}}
"""


def _one(system: System, kind: str, name: str) -> dict[str, Any] | None:
    return next((x for x in system.get_json(kind) if x["name"] == name), None)


def _phase(system: System, kind: str, name: str) -> str | None:
    row = _one(system, kind, name)
    return None if row is None else str(row["phase"])


def test_cronjob_commands(system: System) -> None:
    system.start_hub()
    system.start_agent("east", sim_cluster("east", nodes=1))
    path = system.tmp / "cron.yaml"
    path.write_text(CRON)
    assert (
        system.cli("apply", "-f", str(path)).stdout.strip()
        == "cronjob.batch.volcano.sh/default/nightly created"
    )
    assert "nightly unchanged" in system.cli("apply", "-f", str(path)).stdout
    table = system.cli("get", "cronjobs").stdout
    assert "NAME" in table and "nightly" in table and "0 0 1 1 *" in table and "Europe/Berlin" in table
    assert [(c["name"], c["suspend"]) for c in system.get_json("cj")] == [("nightly", False)]

    said = system.cli("cronjob", "suspend", "nightly").stdout.strip()
    assert said == "cronjob.batch.volcano.sh/default/nightly suspended"
    assert _one(system, "cronjob", "nightly")["suspend"] is True  # type: ignore[index]
    assert "Suspend:" in (described := system.cli("describe", "cj", "nightly").stdout)
    assert any(line.split() == ["Suspend:", "True"] for line in described.splitlines()), described
    said = system.cli("cronjob", "resume", "nightly").stdout.strip()
    assert said == "cronjob.batch.volcano.sh/default/nightly resumed"
    assert _one(system, "cronjob", "nightly")["suspend"] is False  # type: ignore[index]

    said = system.cli("create", "job", "by-hand", "--from", "cronjob/nightly").stdout.strip()
    assert said == "job.batch.volcano.sh/default/by-hand created"
    wait_for(lambda: _phase(system, "jobs", "by-hand") == "Completed", 120, "by-hand Completed", system)
    described = system.cli("describe", "cronjob", "nightly").stdout
    for field in ("Name:", "Schedule:", "Concurrency policy:", "History limits:", "Jobs:", "Events:"):
        assert field in described, described
    assert "0 0 1 1 * (Europe/Berlin)" in described

    bad = system.cli("create", "job", "x", "--from", "job/by-hand", check=False)
    assert bad.returncode == 1 and '--from: expected cronjob/NAME, got "job/by-hand"' in bad.stderr
    bad = system.cli("create", "job", "x", "--from", "cronjob/missing", check=False)
    assert bad.returncode == 1 and "not found" in bad.stderr
    bad = system.cli("cronjob", "suspend", "missing", check=False)
    assert bad.returncode == 1 and "not found" in bad.stderr
    bad = system.cli("delete", "job", "by-hand", "--cascade", check=False)
    assert bad.returncode == 1 and "--cascade: only for a cronjob" in bad.stderr

    out = system.cli("delete", "cronjob", "nightly", "--cascade").stdout.splitlines()
    assert out[0] == "cronjob.batch.volcano.sh/default/nightly deleted"
    assert system.get_json("cronjobs") == []
    jobs_gone = set(out[1:])
    assert jobs_gone <= {"job.batch.volcano.sh/default/by-hand deleted"}
    assert (_one(system, "jobs", "by-hand") is None) == bool(jobs_gone), "what it says it deleted is gone"


def test_jobflow_and_jobtemplate_commands(system: System) -> None:
    system.start_hub()
    system.start_agent("east", sim_cluster("east", nodes=1))
    path = system.tmp / "flow.yaml"
    path.write_text(FLOW)
    out = system.cli("apply", "-f", str(path)).stdout.splitlines()
    assert out == [
        "jobtemplate.flow.volcano.sh/default/step-a created",
        "jobtemplate.flow.volcano.sh/default/step-b created",
        "jobflow.flow.volcano.sh/default/chain created",
    ]
    assert sorted(t["name"] for t in system.get_json("jobtemplates")) == ["step-a", "step-b"]
    assert "step-a" in system.cli("get", "jobtemplate").stdout
    assert "chain" in system.cli("get", "jobflows").stdout

    wait_for(lambda: _phase(system, "jobflows", "chain") == "Succeed", 180, "the flow to succeed", system)
    flow = _one(system, "jobflow", "chain")
    assert flow is not None and flow["completed"] == "2/2"
    assert [(s["name"], s["phase"], s["dependsOn"]) for s in flow["steps"]] == [
        ("step-a", "Completed", []),
        ("step-b", "Completed", ["step-a"]),
    ]
    described = system.cli("describe", "jobflow", "chain").stdout
    lines = [line.strip() for line in described.splitlines()]
    dag = lines[lines.index("DAG:") + 1 : lines.index("Steps:")]
    assert dag == ["step-a [done]", "└─> step-b [done]"], described
    assert any(line.split()[:2] == ["Phase:", "Succeed"] for line in lines), described
    jobs = {j["name"]: j["phase"] for j in json.loads(system.cli("get", "jobs", "-o", "json").stdout)}
    assert jobs == {"chain-step-a": "Completed", "chain-step-b": "Completed"}

    bad = system.cli("delete", "jobflow", "chain", "--cascade", check=False)
    assert bad.returncode == 1 and "a jobflow's jobs always go with it" in bad.stderr
    out = system.cli("delete", "jobflow", "chain").stdout.splitlines()
    assert out[0] == "jobflow.flow.volcano.sh/default/chain deleted"
    assert sorted(out[1:]) == [
        "job.batch.volcano.sh/default/chain-step-a deleted",
        "job.batch.volcano.sh/default/chain-step-b deleted",
    ]
    assert system.get_json("jobflows") == [] and system.get_json("jobs") == []
    said = system.cli("delete", "jobtemplate", "step-a").stdout.strip()
    assert said == "jobtemplate.flow.volcano.sh/default/step-a deleted"
    assert [t["name"] for t in system.get_json("jobtemplates")] == ["step-b"]
    bad = system.cli("describe", "jobflow", "chain", check=False)
    assert bad.returncode == 1 and "not found" in bad.stderr
