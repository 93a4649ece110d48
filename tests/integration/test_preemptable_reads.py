"""The store reads ``volcano.sh/preemptable`` as Volcano's pods carry it: the job's annotation and
label over the template's, the annotation before the label, values as Go's strconv.ParseBool."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import sqlalchemy as sa

from vglobal.model.forms import Gang, Placement, PodShape
from vglobal.model.pod_anti_affinity import AntiTerm
from vglobal.model.priority_class import PriorityClass
from vglobal.model.resources import ResourceVector
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo import queues as queues_repo

KEY = "volcano.sh/preemptable"


def _task(name: str, annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> Any:
    meta: dict[str, Any] = {}
    if annotations is not None:
        meta["annotations"] = annotations
    if labels is not None:
        meta["labels"] = labels
    return {"name": name, "replicas": 1, "template": {"metadata": meta, "spec": {}}}


def _job(uid: str, tasks: list[dict[str, Any]], meta: dict[str, Any]) -> jobs_repo.NewJob:
    return jobs_repo.NewJob(
        uid=uid,
        namespace="ns",
        name=uid,
        request_id=None,
        queue="default",
        priority_class_name=None,
        priority=0,
        min_available=1,
        request={"cpu": 1},
        gang=Gang((PodShape(ResourceVector({"cpu": 1}), 1),)),
        pod_requests={t["name"]: {"cpu": 1} for t in tasks},
        placement=Placement(),
        manifest={"metadata": {"name": uid, **meta}, "spec": {"tasks": tasks}},
        tasks=(),
    )


CASES = [
    ("plain", [_task("a")], {}, set()),
    ("template annotation false", [_task("a", {KEY: "false"}), _task("b")], {}, {"a"}),
    (
        "Go spellings",
        [_task("a", {KEY: "F"}), _task("b", {KEY: "0"}), _task("c", {KEY: "T"})],
        {},
        {"a", "b"},
    ),
    ("unparsable is not preemptable", [_task("a", {KEY: "no"})], {}, {"a"}),
    ("template label", [_task("a", labels={KEY: "False"}), _task("b", labels={KEY: "1"})], {}, {"a"}),
    ("annotation before label", [_task("a", {KEY: "true"}, {KEY: "false"})], {}, set()),
    (
        "job annotation over template",
        [_task("a", {KEY: "true"}), _task("b")],
        {"annotations": {KEY: "false"}},
        {"a", "b"},
    ),
    ("job label", [_task("a"), _task("b", {KEY: "true"})], {"labels": {KEY: "false"}}, {"a"}),
]


@pytest.mark.parametrize(("case", "tasks", "meta", "pinned"), CASES, ids=[c[0] for c in CASES])
def test_unpreemptable_tasks_as_volcano_reads_them(
    engine: sa.Engine, case: str, tasks: list[dict[str, Any]], meta: dict[str, Any], pinned: set[str]
) -> None:
    uid = "job-" + case.replace(" ", "-")
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as session:
        jobs_repo.insert_jobs([_job(uid, tasks, meta)], session=session)
    with session_scope(sessions) as session:
        (static,) = list(jobs_repo.statics([uid], session=session))
    assert static.unpreemptable == frozenset(pinned)


def test_a_dispatch_carries_the_priority_class_preemption_policy(engine: sa.Engine) -> None:
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as session:
        queues_repo.upsert_priority_class(
            PriorityClass(name="patient", value=5, preemption_policy="Never"), session=session
        )
        waits = replace(_job("waits", [_task("a")], {}), priority_class_name="patient")
        own = _task("b")
        own["template"]["spec"]["priorityClassName"] = "patient"
        jobs_repo.insert_jobs([waits, _job("takes", [_task("a"), own], {})], session=session)
        session.execute(
            sa.text("UPDATE resource_bindings SET phase = 'Dispatched', cluster = 'c', generation = 1")
        )
    with session_scope(sessions) as session:
        out = bindings_repo.deliveries("c", ["waits", "takes"], session=session)
    assert sorted((d.job_uid, d.preemption_policy, d.task_priorities) for d in out) == [
        ("takes", "PreemptLowerPriority", {"b": 5}),  # task b names its own class
        ("waits", "Never", None),
    ]


def test_admission_reads_each_task_priority_class_value(engine: sa.Engine) -> None:
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as session:
        queues_repo.upsert_priority_class(PriorityClass(name="high", value=900), session=session)
        own = _task("ps")
        own["template"]["spec"]["priorityClassName"] = "high"
        jobs_repo.insert_jobs([_job("mixed", [_task("w"), own], {})], session=session)
    with session_scope(sessions) as session:
        (static,) = list(jobs_repo.statics(["mixed"], session=session))
    assert static.task_priorities == {"ps": 900}  # w keeps the job's priority


KINDS = [
    ("ray.io/v1", "RayCluster", {}, {"head", "workers"}),
    ("ray.io/v1", "RayCluster", {"annotations": {KEY: "true"}}, set()),
    ("apps/v1", "Deployment", {"labels": {KEY: "true"}}, set()),
    ("apps/v1", "StatefulSet", {}, {"head", "workers"}),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", {"labels": {KEY: "no"}}, {"head", "workers"}),
    ("ray.io/v1", "RayJob", {}, set()),  # runs to its end, as a batch job does
    ("batch/v1", "Job", {}, set()),
]


@pytest.mark.parametrize(("api", "kind", "meta", "pinned"), KINDS)
def test_long_running_kinds_are_not_preemptable_unless_they_say_true(
    engine: sa.Engine, api: str, kind: str, meta: dict[str, Any], pinned: set[str]
) -> None:
    uid = f"{kind.lower()}-{len(meta)}-{sorted(meta)[0] if meta else 'none'}"
    new = _job(uid, [_task("head"), _task("workers")], meta)
    new = replace(new, manifest={"apiVersion": api, "kind": kind, **new.manifest, "spec": {}})
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as session:
        jobs_repo.insert_jobs([new], session=session)
    with session_scope(sessions) as session:
        (static,) = list(jobs_repo.statics([uid], session=session))
    assert static.unpreemptable == frozenset(pinned)


def test_admission_reads_a_pod_template_preemption_policy_never(engine: sa.Engine) -> None:
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as session:
        own = _task("w")
        own["template"]["spec"]["preemptionPolicy"] = "Never"
        also = _task("x")
        also["template"]["spec"]["preemptionPolicy"] = "Never"
        plain = _task("w")
        plain["template"]["spec"]["preemptionPolicy"] = "PreemptLowerPriority"
        jobs_repo.insert_jobs(
            [
                _job("patient", [own, also], {}),
                _job("mixed", [own, _task("x")], {}),
                _job("eager", [plain], {}),
            ],
            session=session,
        )
    with session_scope(sessions) as session:
        uids = ["patient", "mixed", "eager"]
        got = {s.uid: s.preemption_policy for s in jobs_repo.statics(uids, session=session)}
    # Volcano skips a pod whose own spec says Never and preempts for the job's other pods
    assert got == {"patient": "Never", "mixed": "PreemptLowerPriority", "eager": "PreemptLowerPriority"}


def test_admission_reads_pod_anti_affinity_terms_and_template_labels(engine: sa.Engine) -> None:
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
    zone = {
        "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
        "topologyKey": "zone",
    }
    spread = _task("w", labels={"app": "db"})
    spread["template"]["spec"]["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    }
    other = _task("x")
    other["template"]["spec"]["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term, zone]}
    }
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as session:
        jobs_repo.insert_jobs(
            [_job("anti", [spread, other], {}), _job("bare", [_task("w")], {})], session=session
        )
    with session_scope(sessions) as session:
        got = {s.uid: s for s in jobs_repo.statics(["anti", "bare"], session=session)}
    assert got["anti"].anti_affinity == (AntiTerm.of(term), AntiTerm.of(zone))  # distinct, in order
    assert got["anti"].template_labels == {"w": {"app": "db"}}
    assert got["bare"].anti_affinity == () and got["bare"].template_labels == {}
