"""A job's manifest facts (``jobs.facts``) are written once when it is stored, by every way a job is
submitted, and migration 0017 gives the jobs stored before it the very same facts: a job that came
through the upgrade is decided exactly as one submitted after it."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import sqlalchemy as sa

from tests.integration.test_hyperjob_sdk import CHILDREN, HYPERJOB
from tests.integration.test_preemptable_reads import _job as stored_job
from vglobal.client import Client
from vglobal.model.pod_anti_affinity import AntiTerm
from vglobal.model.static_facts import manifest_facts
from vglobal.store import migrate
from vglobal.store.engine import make_engine, make_sessionmaker, session_scope
from vglobal.store.repo import jobs as jobs_repo

KEY = "volcano.sh/preemptable"
TERM = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
ANTI = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}}}


def _task(
    name: str, meta: dict[str, Any] | None = None, spec: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {"name": name, "replicas": 1, "template": {"metadata": meta or {}, "spec": spec or {}}}


def _job(*tasks: Any, meta: dict[str, Any] | None = None, kind: str = "Job") -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": kind,
        "metadata": {"name": "x", **(meta or {})},
        "spec": {"tasks": list(tasks)},
    }


# Each fact, and shapes the paths read leniently (a lone task object, null labels, no tasks).
MANIFESTS: dict[str, dict[str, Any]] = {
    "plain": _job(_task("a")),
    "flags": _job(
        _task("a", {"annotations": {KEY: "false"}}),
        _task("b", {"labels": {KEY: "F", "app": "b"}}),
        _task("c", {"annotations": {KEY: "true"}, "labels": {KEY: "0"}}),
    ),
    "job flags": _job(_task("a"), _task("b"), meta={"annotations": {KEY: "no"}, "labels": {KEY: "1"}}),
    "policies, terms, classes": _job(
        _task("a", {"labels": {"app": "db"}}, {"preemptionPolicy": "Never", "priorityClassName": "high"}),
        _task("b", spec={**ANTI, "priorityClassName": "missing"}),
        _task("c", spec={"priorityClassName": "low"}),
    ),
    "deployment": {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x", "annotations": {KEY: "true"}},
        "spec": {"replicas": 1, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {}}},
    },
    "long-running without a value": {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "x"},
    },
    "lone task object": {
        "metadata": {"name": "x"},
        "spec": {
            "tasks": {"name": "a", "template": {"metadata": {"labels": None, "annotations": {KEY: "x"}}}}
        },
    },
    "no spec": {"metadata": {"name": "x"}},
    "tasks not an array": {"metadata": {"name": "x"}, "spec": {"tasks": "a"}},
}


def _tasks_of(manifest: dict[str, Any]) -> list[str]:
    tasks = manifest.get("spec", {}).get("tasks")
    tasks = tasks if isinstance(tasks, list) else [tasks] if isinstance(tasks, dict) else []
    return [t["name"] for t in tasks] or ["pod"]


def _new(uid: str, manifest: dict[str, Any]) -> jobs_repo.NewJob:
    return replace(
        stored_job(uid, [], {}),
        priority_class_name="high",
        pod_requests={t: {"cpu": 1} for t in _tasks_of(manifest)},
        manifest=manifest,
    )


def _classes(conn: sa.Connection) -> None:
    for name, value, policy in (("high", 100, "Never"), ("low", 1, "PreemptLowerPriority")):
        conn.execute(
            sa.text(
                "INSERT INTO priority_classes (name, value, preemption_policy, manifest) "
                "VALUES (:n, :v, :p, '{}')"
            ),
            {"n": name, "v": value, "p": policy},
        )


def _statics(engine: sa.Engine, uids: list[str]) -> dict[str, jobs_repo.JobStatic]:
    with session_scope(make_sessionmaker(engine)) as session:
        return {s.uid: s for s in jobs_repo.statics(uids, session=session)}


def test_jobs_stored_before_0017_are_decided_as_jobs_submitted_after(empty_database_url: str) -> None:
    engine = make_engine(empty_database_url, pool_size=1)
    try:
        migrate.upgrade(engine, "0016")
        with engine.begin() as conn:
            _classes(conn)
            for k, manifest in enumerate(MANIFESTS.values()):
                new = _new(f"old-{k}", manifest)
                conn.execute(
                    sa.text(
                        "INSERT INTO jobs (uid, namespace, name, queue, priority_class_name, min_available, "
                        "request, gang, pod_requests, manifest) VALUES (:u, 'ns', :u, 'default', 'high', 1, "
                        "CAST(:r AS jsonb), CAST(:g AS jsonb), CAST(:p AS jsonb), CAST(:m AS jsonb))"
                    ),
                    {
                        "u": new.uid,
                        "r": json.dumps(new.request),
                        "g": json.dumps(new.gang.to_json()),
                        "p": json.dumps(new.pod_requests),
                        "m": json.dumps(manifest),
                    },
                )
        migrate.upgrade(engine)
        with session_scope(make_sessionmaker(engine)) as session:
            jobs_repo.insert_jobs(
                [_new(f"new-{k}", m) for k, m in enumerate(MANIFESTS.values())], session=session
            )
        with engine.connect() as conn:
            facts = dict(conn.execute(sa.text("SELECT uid, facts FROM jobs")).all())
        upgraded = _statics(engine, [f"old-{k}" for k in range(len(MANIFESTS))])
        fresh = _statics(engine, [f"new-{k}" for k in range(len(MANIFESTS))])
        for k, (case, manifest) in enumerate(MANIFESTS.items()):
            assert facts[f"old-{k}"] == facts[f"new-{k}"] == manifest_facts(manifest), case
            old, new = upgraded[f"old-{k}"], fresh[f"new-{k}"]
            assert replace(old, uid=new.uid, name=new.name, created_at=new.created_at) == new, case
        # What the facts decide, for the cases that have something to decide.
        flags = fresh[f"new-{list(MANIFESTS).index('flags')}"]
        assert flags.unpreemptable == {"a", "b"}
        job_flags = fresh[f"new-{list(MANIFESTS).index('job flags')}"]
        assert job_flags.unpreemptable == {"a", "b"}  # the job's annotation over its label
        classes = fresh[f"new-{list(MANIFESTS).index('policies, terms, classes')}"]
        assert classes.task_priorities == {"a": 100, "c": 1}
        assert classes.preemption_policy == "Never"
        assert classes.anti_affinity == (AntiTerm.of(TERM),)
        assert classes.template_labels == {"a": {"app": "db"}}
        assert fresh[f"new-{list(MANIFESTS).index('deployment')}"].unpreemptable == frozenset()
        assert fresh[f"new-{list(MANIFESTS).index('long-running without a value')}"].unpreemptable == {"pod"}
        # The classes' values are read when the job is, not when it was stored.
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE priority_classes SET value = 7 WHERE name = 'low'"))
        assert _statics(engine, [classes.uid])[classes.uid].task_priorities == {"a": 100, "c": 7}
        migrate.downgrade(engine, "0016")
        with engine.connect() as conn:
            columns = {c["name"] for c in sa.inspect(conn).get_columns("jobs")}
        assert "facts" not in columns
    finally:
        engine.dispose()


FLAGGED = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: %s}
spec:
  tasks:
  - name: pinned
    replicas: 1
    template:
      metadata: {annotations: {volcano.sh/preemptable: "false"}, labels: {app: db}}
      spec:
        preemptionPolicy: Never
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
  - name: free
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def test_every_submit_path_stores_the_facts_of_the_stored_manifest(client: Client, database_url: str) -> None:
    client.submit_job(FLAGGED % "one", request_id="one")
    client.submit_jobs([(FLAGGED % "b1", "b1"), (FLAGGED % "b2", "b2")])
    client.submit_job(HYPERJOB % "llm", request_id="llm")
    engine = make_engine(database_url, pool_size=1)
    try:
        with engine.connect() as conn:
            rows = {n: (m, f) for n, m, f in conn.execute(sa.text("SELECT name, manifest, facts FROM jobs"))}
    finally:
        engine.dispose()
    assert set(rows) == {"one", "b1", "b2", *CHILDREN}
    for name, (manifest, facts) in rows.items():
        assert facts == manifest_facts(manifest), name
    for name in ("one", "b1", "b2"):
        facts = rows[name][1]
        assert (facts["a"], facts["av"], facts["pp"]) == (["pinned"], ["false"], ["Never"])
        assert (facts["ln"], facts["lt"]) == (["pinned"], [{"app": "db"}])
    assert all(rows[c][1]["kind"] == "Job" for c in CHILDREN)
