"""What the hub refuses and how the CLI says it, run as the `vglobal` console script: unknown
fields (strict by default, --validate=warn|ignore), a job of no pods, --dry-run=server storing
nothing, and a plaintext client told that the hub speaks TLS."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.cli_run import vglobal
from tests.e2e.harness import System
from tests.e2e.test_security import start_secure
from tests.integration.secure_hub import make_certs

pytestmark = pytest.mark.e2e

TYPO_JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: typo}
spec:
  maxRetries: 2
  tasks:
  - name: w
    replica: 3
    replicas: 1
    template:
      metadata: {labels: {free: map}}
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""

TYPO_QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: typo-queue}
spec: {weigth: 2}
"""

NO_PODS = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: empty}
spec:
  tasks:
  - {name: w, replicas: 0, template: {spec: {containers: [{name: c, image: x}]}}}
"""


def names(system: System, kind: str) -> list[str]:
    res = vglobal("--hub", system.target, "get", kind, "-o", "name")
    assert res.returncode == 0, res.stderr
    return res.stdout.split()


def test_the_hub_refuses_unknown_fields_unless_told_and_stores_nothing_then(system: System) -> None:
    system.start_hub()
    res = vglobal("--hub", system.target, "apply", "-f", "-", stdin=TYPO_JOB + "---" + TYPO_QUEUE)
    assert res.returncode == 1
    assert (
        "INVALID_ARGUMENT: spec.maxRetries: unknown field; spec.tasks[0].replica: unknown field" in res.stderr
    )
    assert "INVALID_ARGUMENT: spec.weigth: unknown field" in res.stderr
    assert "metadata.labels" not in res.stderr
    assert names(system, "jobs") == [] and names(system, "queues") == ["queue.scheduling.volcano.sh/default"]

    res = vglobal("--hub", system.target, "apply", "-f", "-", stdin=NO_PODS)
    assert res.returncode == 1
    assert "spec.tasks: the tasks have 0 replicas in all: at least one pod is required" in res.stderr
    assert names(system, "jobs") == []

    # A server dry run checks references too (a queue that does not exist) and stores nothing.
    res = vglobal("--hub", system.target, "apply", "--dry-run=server", "--validate=ignore", "-f", "-",
                  stdin=TYPO_JOB.replace("spec:\n  maxRetries", "spec:\n  queue: nowhere\n  maxRetries"))  # fmt: skip
    assert res.returncode == 1 and 'queue "nowhere" not found' in res.stderr
    res = vglobal("--hub", system.target, "apply", "--dry-run=server", "--validate=ignore", "-f", "-",
                  stdin=TYPO_JOB + "---" + TYPO_QUEUE)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "job.batch.volcano.sh/default/typo created (server dry run)" in res.stdout
    assert "queue.scheduling.volcano.sh/typo-queue created (server dry run)" in res.stdout
    assert names(system, "jobs") == [] and len(names(system, "queues")) == 1

    # --validate=warn: stored, each unknown field named on stderr; the manifest keeps them.
    res = vglobal("--hub", system.target, "apply", "--validate=warn", "-f", "-", stdin=TYPO_JOB)
    assert res.returncode == 0, res.stderr
    assert "Warning: <stdin>#0 (Job typo): spec.tasks[0].replica: unknown field" in res.stderr
    assert names(system, "jobs") == ["job.batch.volcano.sh/typo"]
    with system.client() as c:
        manifest = json.loads(c.get_job("typo").manifest)
    assert manifest["spec"]["maxRetries"] == 2


def test_a_plaintext_client_is_told_the_hub_speaks_tls(system: System, tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    start_secure(system, certs)
    res = vglobal("--hub", system.target, "get", "queues")
    assert res.returncode == 1
    assert "UNAVAILABLE" in res.stderr
    assert f"the hub at {system.target} speaks TLS" in res.stderr and "--ca-file" in res.stderr
    ok = vglobal(
        "--hub", system.target, "--ca-file", str(certs / "ca.crt"), "--token-file", str(certs / "token-vic"),
        "get", "queues", "-o", "name",
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    # Deleting a priority class is a change a viewer may not make.
    denied = vglobal(
        "--hub", system.target, "--ca-file", str(certs / "ca.crt"), "--token-file", str(certs / "token-vic"),
        "delete", "priorityclass", "any",
    )  # fmt: skip
    assert denied.returncode == 1 and "PERMISSION_DENIED" in denied.stderr
