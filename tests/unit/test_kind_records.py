"""Every job kind is one record (vglobal/model/kinds/): each table of kinds agrees with the records,
each workload kind has the agent's module, and each record reads a sample of its kind as its
upstream docs write it (tests/fixtures/workloads, tests/fixtures/manifests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vglobal.agent.kube import kinds as agent_kinds
from vglobal.cli import apply_cmd, apply_jobs
from vglobal.model import manifests, served, workloads
from vglobal.model.fields import unknown_fields
from vglobal.model.job import Job
from vglobal.model.kinds import KINDS, WORKLOADS, WorkloadKind, kind_of
from vglobal.model.manifests import gathered, load_documents

FIXTURES = Path(__file__).parents[1] / "fixtures"
SAMPLE_FILES = sorted((FIXTURES / "workloads").glob("*.yaml")) + sorted((FIXTURES / "manifests").glob("*.yaml"))
SAMPLE_FILES += sorted((FIXTURES / "upstream").rglob("*.yaml"))


def samples(kind: WorkloadKind) -> list[dict[str, Any]]:
    docs = [d for path in SAMPLE_FILES for d in gathered(load_documents(path.read_text()))]
    return [d for d in docs if kind_of(d) == kind]


def ids(kind: WorkloadKind) -> str:
    return f"{kind.api_version} {kind.kind}"


def test_each_kind_is_one_record_with_names_of_its_own() -> None:
    assert len({k.key for k in KINDS}) == len(KINDS)
    assert len({k.shown for k in KINDS}) == len(KINDS)  # the KIND column tells every kind apart
    assert len({k.order for k in KINDS}) == len(KINDS)
    assert [k.order for k in KINDS] == sorted(k.order for k in KINDS)
    assert [k for k in KINDS if k.agent_makes_pods] == [KINDS[0]]  # the Volcano Job, first
    for k in KINDS:
        # kubectl's resource.group, and the CRD's <plural>.<group>
        assert k.printed == (f"{k.kind.lower()}.{k.group}" if k.group else k.kind.lower()), ids(k)
        resource = f"{k.plural}.{k.group}" if k.group else k.plural  # a core kind: "pods"
        assert k.resource == ("" if k.agent_makes_pods else resource), ids(k)


def test_the_model_tables_are_the_records() -> None:
    for k in KINDS:
        assert manifests.KINDS[k.key] is k.reader and manifests.SCHEMAS[k.key] is k.schema, ids(k)
    assert dict(workloads.READERS) == {k.key: k.reader for k in WORKLOADS}
    assert {k.kind for k in WORKLOADS if k.long_running} == workloads.LONG_RUNNING
    assert all(workloads.long_running(*k.key) == k.long_running for k in KINDS)
    assert dict(served.RESOURCES) == {k.key: k.resource for k in WORKLOADS}
    assert {k.resource for k in WORKLOADS if k.grouped} == served.GROUPED


def test_the_cli_tables_are_the_records() -> None:
    assert {k.shown: k.printed for k in KINDS} == apply_jobs.JOB_RESOURCES
    assert {k.kind for k in KINDS} <= set(apply_cmd.RESOURCES)
    assert apply_cmd.RESOURCES["Job"] == KINDS[0].printed  # kind Job without batch/v1 is Volcano's
    assert set(apply_cmd.WORKLOADS) | {"Job"} == {k.kind for k in KINDS}
    assert set(apply_cmd.WORKLOADS) <= set(apply_cmd.SERVER_DRY_RUN)


def test_the_names_users_saw_before_the_records_are_kept() -> None:
    """What the tables said when each was written by hand (new kinds may only add to it)."""
    before = {
        "VolcanoJob": "job.batch.volcano.sh",
        "Job": "job.batch",
        "RayCluster": "raycluster.ray.io",
        "RayJob": "rayjob.ray.io",
        "LeaderWorkerSet": "leaderworkerset.leaderworkerset.x-k8s.io",
        "Deployment": "deployment.apps",
        "StatefulSet": "statefulset.apps",
    }
    assert {s: apply_jobs.JOB_RESOURCES[s] for s in before} == before
    resources = {
        ("ray.io/v1", "RayCluster"): "rayclusters.ray.io",
        ("ray.io/v1", "RayJob"): "rayjobs.ray.io",
        ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): "leaderworkersets.leaderworkerset.x-k8s.io",
        ("apps/v1", "Deployment"): "deployments.apps",
        ("apps/v1", "StatefulSet"): "statefulsets.apps",
        ("batch/v1", "Job"): "jobs.batch",
    }
    assert [key for key in served.RESOURCES if key in resources] == list(resources)  # in this order
    assert {key: served.RESOURCES[key] for key in resources} == resources
    assert "leaderworkersets.leaderworkerset.x-k8s.io" in served.GROUPED
    listed = [k for _, k in manifests.KINDS]
    assert listed[:7] == ["Job", "Queue", "PriorityClass", "CronJob", "JobTemplate", "JobFlow", "HyperJob"]
    old = ["RayCluster", "RayJob", "LeaderWorkerSet", "Deployment", "StatefulSet", "Job"]
    assert [k for k in listed[7:] if k in old] == old
    assert [k for k in apply_cmd.WORKLOADS if k in old] == old[:-1]


@pytest.mark.parametrize("kind", WORKLOADS, ids=ids)
def test_each_workload_kind_has_the_agents_module(kind: WorkloadKind) -> None:
    adapter = agent_kinds.ADAPTERS.get(kind.key)
    assert adapter is not None, f"no module in vglobal/agent/kube/kinds/ for {ids(kind)}"
    assert adapter.record is kind and adapter.resource == kind.resource
    assert adapter.crd in ("", kind.resource) and adapter.needs


def test_the_agent_runs_exactly_the_workload_kinds() -> None:
    assert [a.record for a in agent_kinds.KINDS] == list(WORKLOADS)
    assert set(agent_kinds.ADAPTERS) == {k.key for k in WORKLOADS}


@pytest.mark.parametrize("kind", KINDS, ids=ids)
def test_each_kind_reads_a_sample_of_its_own(kind: WorkloadKind) -> None:
    found = samples(kind)
    assert found, f"no sample of {ids(kind)} in {FIXTURES}/workloads or /manifests"
    for doc in found:
        assert unknown_fields(kind.schema, doc) == []
        job = kind.reader(doc)
        assert isinstance(job, Job) and job.tasks
        assert workloads.kind_name(job.raw) == kind.shown
        adapter = agent_kinds.ADAPTERS.get(kind.key)
        if adapter is not None:  # every task is a pod template the agent labels with its role
            roles = adapter.roles_of(job.raw)
            assert {t.name for t in job.tasks} <= set(roles), (doc["metadata"]["name"], roles)
