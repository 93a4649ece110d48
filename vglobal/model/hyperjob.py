"""A HyperJob (``training.volcano.sh/v1alpha1``): one training job made of child Volcano Jobs that
run on several clusters at once.

Each ``spec.replicatedJobs[i]`` makes ``replicas`` children from its ``templateSpec``, named
``{hyperjob}-{replicatedJob}-{index}`` and labelled as Volcano Global labels them. A replicated job
with ``splitPolicy.mode: auto`` instead makes one child per cluster share of ``accelerators``; the
hub chooses the shares when it accepts the HyperJob (``children(shares=...)``).

What admission needs of the group travels on every child as annotations (``vglobal.io/hyperjob-*``):
the HyperJob's minAvailable, its number of children, the child's index and the failure policy.
Each child's pods get the HyperJob's name, the child's index, the number of children and the
child's rank offset (the pods of the children before it) as environment variables.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field, StrictStr

from vglobal.model import job
from vglobal.model.errors import Problems
from vglobal.model.job import CLUSTERS_ANNOTATION, Job, spec_queue
from vglobal.model.job_template import check_namespace, job_document, parse_embedded_job
from vglobal.model.k8s import OBJECT_FIELDS, Int32, Metadata, Model, check_name, validate_model

__all__ = [
    "API_VERSION",
    "FAILURE_POLICIES",
    "KIND",
    "HyperJob",
    "HyperJobManifest",
    "ReplicatedJob",
    "SplitPolicy",
    "parse_hyper_job",
]

API_VERSION = "training.volcano.sh/v1alpha1"
KIND = "HyperJob"

HYPERJOB_LABEL = "volcano.sh/hyperjob-name"
REPLICATED_JOB_LABEL = "volcano.sh/replicatedjob-name"
MIN_AVAILABLE_ANNOTATION = "vglobal.io/hyperjob-min-available"
CHILDREN_ANNOTATION = "vglobal.io/hyperjob-children"
INDEX_ANNOTATION = "vglobal.io/hyperjob-index"
FAILURE_POLICY_ANNOTATION = "vglobal.io/hyperjob-failure-policy"

# The environment of every container of a child's pods.
ENV_NAME = "VGLOBAL_HYPERJOB_NAME"
ENV_INDEX = "VGLOBAL_HYPERJOB_CHILD_INDEX"
ENV_CHILDREN = "VGLOBAL_HYPERJOB_CHILDREN"
ENV_RANK_OFFSET = "VGLOBAL_HYPERJOB_RANK_OFFSET"

# What happens when a child fails: start it again on its cluster, start it again on another cluster,
# or stop every child and start the whole HyperJob again (our field: Volcano Global has none).
RESTART_CHILD, MOVE_CHILD, RESTART_ALL = "RestartChild", "MoveChild", "RestartAll"
FAILURE_POLICIES = (RESTART_CHILD, MOVE_CHILD, RESTART_ALL)
DEFAULT_FAILURE_POLICY = RESTART_CHILD
DEFAULT_ACCELERATOR = "nvidia.com/gpu"
MAX_CHILDREN = 1000


@dataclass(frozen=True, kw_only=True)
class SplitPolicy:
    mode: str = "static"
    accelerators: int | None = None
    accelerator_type: str = DEFAULT_ACCELERATOR


@dataclass(frozen=True, kw_only=True)
class ReplicatedJob:
    name: str
    replicas: int
    cluster_names: tuple[str, ...] = ()
    split: SplitPolicy = field(default_factory=SplitPolicy)
    template_spec: dict[str, Any] = field(default_factory=dict)
    template: Job | None = None  # the template parsed as a Job (for its requests)

    @property
    def auto(self) -> bool:
        return self.split.mode == "auto"

    def split_task(self) -> tuple[int, int]:
        """(task index, accelerators per pod) of the template's task that asks for the accelerator."""
        assert self.template is not None
        for i, t in enumerate(self.template.tasks):
            per_pod = t.pod_request.get(self.split.accelerator_type)
            if per_pod:
                return i, per_pod
        raise ValueError("no task requests the accelerator")


@dataclass(frozen=True, kw_only=True)
class HyperJob:
    name: str
    namespace: str = "default"
    labels: Mapping[str, str] = field(default_factory=dict)
    queue: str = job.DEFAULT_QUEUE
    min_available: int | None = None  # None: every child
    max_domains: int | None = None
    failure_policy: str = DEFAULT_FAILURE_POLICY
    replicated: tuple[ReplicatedJob, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def needs_split(self) -> bool:
        return any(r.auto for r in self.replicated)

    def children(self, shares: Mapping[str, Sequence[tuple[str, int]]] | None = None) -> tuple[Job, ...]:
        """The child Jobs, in order. ``shares`` gives each auto replicated job its (cluster,
        accelerators) shares; each share becomes one child pinned to its cluster."""
        plan: list[tuple[ReplicatedJob, dict[str, Any], str | None]] = []
        for rj in self.replicated:
            if rj.auto:
                task, per_pod = rj.split_task()
                for cluster, amount in (shares or {}).get(rj.name, ()):
                    spec = copy.deepcopy(rj.template_spec)
                    pods = amount // per_pod
                    t = spec["tasks"][task]
                    t["replicas"] = pods
                    t.pop("minAvailable", None)
                    spec.pop("minAvailable", None)
                    plan.append((rj, spec, cluster))
            else:
                names = ",".join(rj.cluster_names) or None
                plan.extend((rj, copy.deepcopy(rj.template_spec), names) for _ in range(rj.replicas))
        count = len(plan)
        min_available = count if self.min_available is None else min(self.min_available, count)
        out: list[Job] = []
        offset = 0
        per_rj: dict[str, int] = {}
        for index, (rj, spec, clusters) in enumerate(plan):
            i = per_rj[rj.name] = per_rj.get(rj.name, -1) + 1
            env = {
                ENV_NAME: self.name,
                ENV_INDEX: str(index),
                ENV_CHILDREN: str(count),
                ENV_RANK_OFFSET: str(offset),
            }
            for t in spec.get("tasks") or []:
                _add_env(t, env)
                offset += int(t.get("replicas") or 0)
            annotations = {
                MIN_AVAILABLE_ANNOTATION: str(min_available),
                CHILDREN_ANNOTATION: str(count),
                INDEX_ANNOTATION: str(index),
                FAILURE_POLICY_ANNOTATION: self.failure_policy,
            }
            if clusters:
                annotations[CLUSTERS_ANNOTATION] = clusters
            labels = {**self.labels, HYPERJOB_LABEL: self.name, REPLICATED_JOB_LABEL: rj.name}
            doc = job_document(
                name=f"{self.name}-{rj.name}-{i}",
                namespace=self.namespace,
                spec=spec,
                labels=labels,
                annotations=annotations,
            )
            p = Problems()
            child = parse_embedded_job(p, doc, spec_at=f"spec.replicatedJobs[{rj.name}].templateSpec")
            p.raise_if_any()
            assert child is not None
            out.append(child)
        return tuple(out)


def _add_env(task: dict[str, Any], env: Mapping[str, str]) -> None:
    pod = task.setdefault("template", {}).setdefault("spec", {})
    for key in ("containers", "initContainers"):
        for c in pod.get(key) or []:
            if not isinstance(c, dict):
                continue
            items = [e for e in c.get("env") or [] if not (isinstance(e, dict) and e.get("name") in env)]
            c["env"] = items + [{"name": k, "value": v} for k, v in env.items()]


# --- wire schema (shape and types; rules are checked below with field paths) ---


class _SplitPolicySpec(Model):
    mode: StrictStr = "static"
    accelerators: Int32 | None = None
    accelerator_type: StrictStr | None = None


class _ReplicatedJobSpec(Model):
    shapes = {"templateSpec": job.JOB_SPEC}
    name: StrictStr = ""
    replicas: Int32 = 1
    cluster_names: list[StrictStr] = Field(default_factory=list)
    split_policy: _SplitPolicySpec | None = None


class _HyperJobSpec(Model):
    passthrough = frozenset({"plugins"})
    replicated_jobs: list[_ReplicatedJobSpec] = Field(default_factory=list)
    min_available: Int32 | None = None
    max_domains: Int32 | None = None
    failure_policy: StrictStr | None = None


class HyperJobManifest(Model):
    passthrough = OBJECT_FIELDS
    metadata: Metadata = Field(default_factory=Metadata)
    spec: _HyperJobSpec = Field(default_factory=_HyperJobSpec)


# --- parsing ---


def _split(p: Problems, base: str, spec: _SplitPolicySpec | None) -> SplitPolicy:
    if spec is None:
        return SplitPolicy()
    if spec.mode not in ("static", "auto"):
        p.add(f"{base}.mode", f'must be "static" or "auto", not "{spec.mode}"')
    if spec.mode == "auto":
        if spec.accelerators is None:
            p.add(f"{base}.accelerators", "required when mode is auto")
        elif spec.accelerators <= 0:
            p.add(f"{base}.accelerators", "must be > 0")
    if spec.accelerator_type is not None and not spec.accelerator_type:
        p.add(f"{base}.acceleratorType", "must not be empty")
    return SplitPolicy(
        mode=spec.mode,
        accelerators=spec.accelerators,
        accelerator_type=spec.accelerator_type or DEFAULT_ACCELERATOR,
    )


def _replicated(
    p: Problems, hj: str, namespace: str, i: int, spec: _ReplicatedJobSpec, raw: Mapping[str, Any]
) -> ReplicatedJob:
    base = f"spec.replicatedJobs[{i}]"
    check_name(p, f"{base}.name", spec.name, label=True)
    if spec.replicas < 0:
        p.add(f"{base}.replicas", "must be >= 0")
    for k, c in enumerate(spec.cluster_names):
        check_name(p, f"{base}.clusterNames[{k}]", c, label=False)
    split = _split(p, f"{base}.splitPolicy", spec.split_policy)
    template_spec = raw.get("templateSpec")
    if not isinstance(template_spec, Mapping):
        p.add(f"{base}.templateSpec", "required")
        return ReplicatedJob(name=spec.name, replicas=spec.replicas, split=split)
    name = f"{hj}-{spec.name}-{max(spec.replicas - 1, 0)}"
    doc = job_document(name=name, namespace=namespace, spec=template_spec)
    template = parse_embedded_job(p, doc, spec_at=f"{base}.templateSpec")
    if template is not None and len(name) > 63:
        p.add(f"{base}.name", f'child name "{name}" would be longer than 63 characters')
    rj = ReplicatedJob(
        name=spec.name,
        replicas=spec.replicas,
        cluster_names=tuple(spec.cluster_names),
        split=split,
        template_spec=copy.deepcopy(dict(template_spec)),
        template=template,
    )
    if split.mode == "auto" and template is not None:
        try:
            rj.split_task()
        except ValueError:
            p.add(
                f"{base}.templateSpec.tasks",
                f"splitPolicy auto needs a task whose pods request {split.accelerator_type}",
            )
    return rj


def parse_hyper_job(doc: Mapping[str, Any]) -> HyperJob:
    """Validate and default one HyperJob document; raises ManifestError naming every bad field."""
    m = validate_model(HyperJobManifest, doc)
    p = Problems()
    meta, spec = m.metadata, m.spec
    check_name(p, "metadata.name", meta.name, label=True)
    namespace = check_namespace(p, meta)
    spec_doc = doc.get("spec")
    raw_spec: Mapping[str, Any] = spec_doc if isinstance(spec_doc, Mapping) else {}
    raw_rjs = raw_spec.get("replicatedJobs") or []
    if not spec.replicated_jobs:
        p.add("spec.replicatedJobs", "at least one replicated job is required")
    replicated: list[ReplicatedJob] = []
    seen: set[str] = set()
    for i, rj_spec in enumerate(spec.replicated_jobs):
        rj = _replicated(p, meta.name, namespace, i, rj_spec, raw_rjs[i])
        if rj.name in seen:
            p.add(f"spec.replicatedJobs[{i}].name", f'duplicate replicated job name "{rj.name}"')
        seen.add(rj.name)
        replicated.append(rj)
    queues = {spec_queue(r.template_spec) for r in replicated if r.template_spec}
    if len(queues) > 1:
        p.add(
            "spec.replicatedJobs[*].templateSpec.queue",
            f"every child must go to one queue (the HyperJob is admitted as one job), got {sorted(queues)}",
        )
    static = sum(r.replicas for r in replicated if not r.auto)
    if static > MAX_CHILDREN:
        p.add("spec.replicatedJobs[*].replicas", f"{static} children, more than {MAX_CHILDREN}")
    if spec.min_available is not None:
        if spec.min_available < 1:
            p.add("spec.minAvailable", "must be >= 1")
        elif not any(r.auto for r in replicated) and spec.min_available > static:
            p.add(
                "spec.minAvailable", f"minAvailable {spec.min_available} is more than the {static} children"
            )
    if spec.max_domains is not None and spec.max_domains < 1:
        p.add("spec.maxDomains", "must be >= 1")
    policy = spec.failure_policy or DEFAULT_FAILURE_POLICY
    if policy not in FAILURE_POLICIES:
        p.add("spec.failurePolicy", f'must be one of {", ".join(FAILURE_POLICIES)}, not "{policy}"')
    p.raise_if_any()
    return HyperJob(
        name=meta.name,
        namespace=namespace,
        labels=dict(meta.labels),
        queue=queues.pop() if queues else job.DEFAULT_QUEUE,
        min_available=spec.min_available,
        max_domains=spec.max_domains,
        failure_policy=policy,
        replicated=tuple(replicated),
        raw=copy.deepcopy(dict(doc)),
    )
