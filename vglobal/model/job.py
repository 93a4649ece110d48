"""A Volcano Job (``batch.volcano.sh/v1alpha1``), validated and defaulted as Volcano's webhook does."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field, StrictStr

from vglobal.model import dra
from vglobal.model.dra_shared import charge_once
from vglobal.model.duration import parse_duration
from vglobal.model.errors import Problems, key_path
from vglobal.model.k8s import OBJECT_FIELDS, Int32, Metadata, Model, check_name, pod_request, validate_model
from vglobal.model.network_topology import NetworkTopology, NetworkTopologySpec, build_network_topology
from vglobal.model.partition import (
    PartitionPolicy,
    PartitionPolicySpec,
    SubGroupPolicy,
    build_partition_policy,
    default_min_available,
    group_policy,
    sub_group_policy,
)
from vglobal.model.placement_prefs import NO_PREFS, PlacementPrefs, read_prefs
from vglobal.model.pod_fields import POD_SPEC_FIELDS, PodSpecFields
from vglobal.model.policy import Policy, PolicySpec, build_policies
from vglobal.model.queue_tuning import checkpoint_interval
from vglobal.model.resources import EMPTY, ResourceVector
from vglobal.model.tree_copy import copy_tree

__all__ = ["Job", "NetworkTopology", "PartitionPolicy", "Policy", "Task", "parse_job"]

API_VERSION = "batch.volcano.sh/v1alpha1"
KIND = "Job"

DEFAULT_QUEUE = "default"
DEFAULT_MAX_RETRY = 3
DEFAULT_SCHEDULER = "volcano"
# Job plugins Volcano's controller has builders for; the webhook refuses any other name.
KNOWN_PLUGINS = frozenset({"env", "svc", "ssh", "tensorflow", "mpi", "pytorch", "ray", "hcclrank"})

CLUSTERS_ANNOTATION = "vglobal.io/clusters"
# Clusters in the order the job prefers them (soft): it goes to the first that holds it now
PREFERENCE_ANNOTATION = "vglobal.io/cluster-preference"
CLUSTER_SELECTOR_ANNOTATION = "vglobal.io/cluster-selector"
SIM_DURATION_ANNOTATION = "vglobal.io/sim-duration"
SIM_EXIT_CODE_ANNOTATION = "vglobal.io/sim-exit-code"


@dataclass(frozen=True, kw_only=True)
class Task:
    name: str
    replicas: int
    min_available: int
    max_retry: int | None = None
    policies: tuple[Policy, ...] = ()
    template: dict[str, Any] = field(default_factory=dict)
    pod_request: ResourceVector = EMPTY
    annotations: Mapping[str, str] = field(default_factory=dict)
    priority_class_name: str | None = None
    partition_policy: PartitionPolicy | None = None
    # The manifest field its gang count was read from, for ``describe`` ("" : not said).
    gang_from: str = ""
    # Pods of this task in each of the job's groups (a LeaderWorkerSet's: each group is placed whole,
    # ``GROUP_INDEX_LABEL`` on its pods); 0 when the task is not grouped.
    group_pods: int = 0
    # DRA: the ResourceClaims its pods name directly (one allocation each, on one node), and the
    # devices of those no earlier task names, carried by its first pod (model/dra_shared.py).
    shared_claims: tuple[str, ...] = ()
    first_pod_extra: ResourceVector = EMPTY

    def request_of(self, index: int) -> ResourceVector:
        """Pod ``index``'s request: the first pod also carries the shared claims' devices."""
        if index == 0 and self.first_pod_extra:
            return self.pod_request + self.first_pod_extra
        return self.pod_request


@dataclass(frozen=True, kw_only=True)
class Job:
    name: str
    namespace: str = "default"
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    queue: str = DEFAULT_QUEUE
    # The manifest field the queue was named in; "" when the job names none (the hub then takes
    # its Namespace's queue annotation, else ``default``).
    queue_from: str = ""
    priority_class_name: str | None = None
    min_available: int = 0
    max_retry: int = DEFAULT_MAX_RETRY
    min_success: int | None = None
    scheduler_name: str | None = DEFAULT_SCHEDULER
    network_topology: NetworkTopology | None = None
    policies: tuple[Policy, ...] = ()
    plugins: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    tasks: tuple[Task, ...] = ()
    allowed_clusters: frozenset[str] | None = None
    cluster_selector: Mapping[str, str] = field(default_factory=dict)
    preferred_clusters: tuple[str, ...] = ()
    # tolerations, datasets, preference wait, binpack/spread (placement_prefs.py)
    placement_prefs: PlacementPrefs = NO_PREFS
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def total_pods(self) -> int:
        return sum(t.replicas for t in self.tasks)

    def total_request(self) -> ResourceVector:
        """Σ over every task of replicas x per-pod request (a shared claim's devices once)."""
        out = EMPTY
        for t in self.tasks:
            out = out + t.pod_request.scale(t.replicas) + (t.first_pod_extra if t.replicas else EMPTY)
        return out

    def gang(self) -> tuple[tuple[str, ResourceVector, int], ...]:
        """The ``min_available`` pods that must start together, as (task, pod request, count).

        Each task contributes its own ``min_available``, taken in task order until the job's
        ``min_available`` is reached; if that is more than the tasks' minimums, the remaining
        replicas are added in task order. Tasks contributing no pod are left out. A partitioned
        task contributes whole partitions only, since a partition is placed whole or not at all,
        and at least its minPartitions: the job is ready only with that many partitions ready
        besides its minAvailable pods (Volcano's two gang levels).
        """
        counts = [0] * len(self.tasks)
        budget = self.min_available
        for i, t in enumerate(self.tasks):
            counts[i] = min(t.min_available, budget)
            budget -= counts[i]
        for i, t in enumerate(self.tasks):
            extra = min(t.replicas - counts[i], budget)
            counts[i] += extra
            budget -= extra
        for i, t in enumerate(self.tasks):
            if t.partition_policy is not None and t.partition_policy.partition_size > 0:
                size = t.partition_policy.partition_size
                least = t.partition_policy.min_partitions * size
                counts[i] = min(t.replicas, max(-(-counts[i] // size) * size, least))
        return tuple((t.name, t.pod_request, n) for t, n in zip(self.tasks, counts, strict=True) if n > 0)

    def gang_partitions(self) -> tuple[tuple[Task, int], ...]:
        """(task, partitions) of the gang's pods that come in whole partitions, in task order."""
        counts = {name: n for name, _, n in self.gang()}
        return tuple(
            (t, counts.get(t.name, 0) // t.partition_policy.partition_size)
            for t in self.tasks
            if t.partition_policy is not None and t.partition_policy.partition_size > 0 and counts.get(t.name)
        )

    def group_size(self) -> int:
        """Pods in each of the job's groups (a LeaderWorkerSet's); 0 when it has none."""
        return sum(t.group_pods for t in self.tasks)

    def sub_group_policies(self) -> tuple[SubGroupPolicy, ...]:
        """The PodGroup's subGroupPolicy: one entry per task with a partitionPolicy, and one for the
        job's groups when it has them (each placed whole, at least one)."""
        size = self.group_size()
        return tuple(
            sub_group_policy(t.name, t.partition_policy) for t in self.tasks if t.partition_policy is not None
        ) + ((group_policy(size),) if size else ())

    def gang_shapes(self) -> tuple[tuple[str, ResourceVector, int], ...]:
        """``gang()`` with a task's first pod apart when it carries shared claims' devices, so
        they are fitted and charged once."""
        extra = {t.name: t.first_pod_extra for t in self.tasks if t.first_pod_extra}
        if not extra:
            return self.gang()
        out: list[tuple[str, ResourceVector, int]] = []
        for name, request, count in self.gang():
            if name in extra:
                out.append((name, request + extra[name], 1))
                if count > 1:
                    out.append((name, request, count - 1))
            else:
                out.append((name, request, count))
        return tuple(out)

    def gang_request(self) -> ResourceVector:
        out = EMPTY
        for _, request, count in self.gang_shapes():
            out = out + request.scale(count)
        return out


# --- wire schema (shape and types only; rules are checked below with field paths) ---


class _TemplateSpec(Model):
    passthrough = POD_SPEC_FIELDS
    shapes = PodSpecFields.shapes
    priority_class_name: StrictStr | None = None


class _Template(Model):
    metadata: Metadata = Field(default_factory=Metadata)
    spec: _TemplateSpec = Field(default_factory=_TemplateSpec)


class _TaskSpec(Model):
    passthrough = frozenset({"topologyPolicy", "dependsOn"})
    name: StrictStr = ""
    replicas: Int32 = 0
    min_available: Int32 | None = None
    max_retry: Int32 | None = None
    policies: list[PolicySpec] = Field(default_factory=list)
    template: _Template = Field(default_factory=_Template)
    partition_policy: PartitionPolicySpec | None = None


class _JobSpec(Model):
    passthrough = frozenset({"volumes", "ttlSecondsAfterFinished", "runningEstimate"})
    min_available: Int32 = 0
    queue: StrictStr = ""
    priority_class_name: StrictStr | None = None
    max_retry: Int32 = 0
    min_success: Int32 | None = None
    scheduler_name: StrictStr | None = None
    network_topology: NetworkTopologySpec | None = None
    policies: list[PolicySpec] = Field(default_factory=list)
    plugins: dict[StrictStr, list[StrictStr] | None] | None = None
    tasks: list[_TaskSpec] = Field(default_factory=list)


# A Job's spec where another kind embeds one (a CronJob's jobTemplate, a JobTemplate).
JOB_SPEC: tuple[type[Model], bool] = (_JobSpec, False)


class JobManifest(Model):
    """A Job's schema (``fields.unknown_fields`` checks a manifest against it)."""

    passthrough = OBJECT_FIELDS
    metadata: Metadata = Field(default_factory=Metadata)
    spec: _JobSpec = Field(default_factory=_JobSpec)


# --- parsing ---


def spec_queue(spec: Mapping[str, Any]) -> str:
    """The queue a Job spec names (unchecked; the Job parser checks it), or the default one."""
    queue = spec.get("queue")
    return queue if isinstance(queue, str) and queue else DEFAULT_QUEUE


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _check_sim_annotations(p: Problems, base: str, annotations: Mapping[str, str]) -> None:
    if (text := annotations.get(SIM_DURATION_ANNOTATION)) is not None:
        try:
            parse_duration(text)
        except ValueError:
            p.add(
                key_path(base, SIM_DURATION_ANNOTATION),
                f'invalid duration "{text}" (use Go form like "3s", "2m")',
            )
    if (code := annotations.get(SIM_EXIT_CODE_ANNOTATION)) is not None:
        try:
            int(code)
        except ValueError:
            p.add(key_path(base, SIM_EXIT_CODE_ANNOTATION), f'invalid exit code "{code}"')


def _allowed_clusters(p: Problems, annotations: Mapping[str, str]) -> frozenset[str] | None:
    text = annotations.get(CLUSTERS_ANNOTATION)
    if text is None or not text.strip():
        return None
    where = key_path("metadata.annotations", CLUSTERS_ANNOTATION)
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        check_name(p, where, n, label=False)
    return frozenset(names)


def _preferred_clusters(p: Problems, annotations: Mapping[str, str]) -> tuple[str, ...]:
    text = annotations.get(PREFERENCE_ANNOTATION) or ""
    where = key_path("metadata.annotations", PREFERENCE_ANNOTATION)
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        check_name(p, where, n, label=False)
    if len(set(names)) != len(names):
        p.add(where, "a cluster is named twice")
    return tuple(names)


def _cluster_selector(p: Problems, annotations: Mapping[str, str]) -> dict[str, str]:
    text = annotations.get(CLUSTER_SELECTOR_ANNOTATION, "")
    where = key_path("metadata.annotations", CLUSTER_SELECTOR_ANNOTATION)
    out: dict[str, str] = {}
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            p.add(where, f'"{item}" is not a label requirement of the form key=value')
            continue
        out[key.strip()] = value.strip()
    return out


def _plugins(p: Problems, plugins: dict[str, list[str] | None] | None) -> dict[str, tuple[str, ...]]:
    if plugins is None:
        return {}
    out = {name: tuple(args or ()) for name, args in plugins.items()}
    for name in sorted(out):
        if name not in KNOWN_PLUGINS:
            p.add(
                key_path("spec.plugins", name),
                f'unknown job plugin "{name}" (known: {", ".join(sorted(KNOWN_PLUGINS))})',
            )
    # Volcano's webhook adds the plugins these depend on.
    if ("tensorflow" in out or "mpi" in out) and "svc" not in out:
        out["svc"] = ()
    if "mpi" in out and "ssh" not in out:
        out["ssh"] = ()
    return out


def _task(
    p: Problems, job_name: str, index: int, spec: _TaskSpec, raw: Mapping[str, Any], claims: dra.Sources
) -> Task:
    base = f"spec.tasks[{index}]"
    # Volcano names an unnamed task "default<index>".
    name = spec.name or f"default{index}"
    check_name(p, f"{base}.name", name, label=True)
    if spec.replicas < 0:
        p.add(f"{base}.replicas", "must be >= 0")
    replicas = max(spec.replicas, 0)
    partitions = build_partition_policy(p, base, spec.partition_policy, replicas, spec.min_available)
    if spec.min_available is None:
        min_available = default_min_available(replicas, partitions)
    else:
        min_available = spec.min_available
        if min_available < 0:
            p.add(f"{base}.minAvailable", "must be >= 0")
        elif min_available > replicas:
            p.add(
                f"{base}.minAvailable",
                f"minAvailable {min_available} is more than the {replicas} replicas of the task",
            )
    if spec.max_retry is not None and spec.max_retry < 0:
        p.add(f"{base}.maxRetry", "must be >= 0")
    if job_name and replicas > 0:
        # Pods are named <job>-<task>-<index>; Volcano refuses a job whose pod names are too long.
        pod = f"{job_name}-{name}-{replicas - 1}"
        if len(pod) > 63:
            p.add(f"{base}.name", f'pod name "{pod}" would be longer than 63 characters')
    raw_template = _mapping(raw.get("template"))
    pod_spec = raw_template.get("spec") or {}
    request = pod_request(p, f"{base}.template.spec", pod_spec)
    request = request + dra.pod_claims(p, f"{base}.template.spec", pod_spec, claims)
    annotations = dict(spec.template.metadata.annotations)
    _check_sim_annotations(p, f"{base}.template.metadata.annotations", annotations)
    if spec.template.spec.priority_class_name:
        check_name(
            p, f"{base}.template.spec.priorityClassName", spec.template.spec.priority_class_name, label=False
        )
    return Task(
        name=name,
        replicas=replicas,
        min_available=max(min_available, 0),
        # Volcano's webhook turns an unset (zero) task maxRetry into 3, like the job's.
        max_retry=spec.max_retry or DEFAULT_MAX_RETRY,
        policies=build_policies(p, f"{base}.policies", spec.policies),
        template=copy_tree(dict(raw_template)),
        pod_request=request,
        annotations=annotations,
        priority_class_name=spec.template.spec.priority_class_name or None,
        partition_policy=partitions,
        gang_from=f"{base}.minAvailable"
        if spec.min_available is not None
        else f"{base}.partitionPolicy.minPartitions"
        if partitions is not None and partitions.min_partitions > 0
        else f"{base}.replicas",
    )


def parse_job(doc: Mapping[str, Any]) -> Job:
    """Validate and default one Job document; raises ManifestError naming every bad field."""
    m = validate_model(JobManifest, doc)
    p = Problems()
    meta, spec = m.metadata, m.spec
    check_name(p, "metadata.name", meta.name, label=True)
    namespace = meta.namespace or "default"
    check_name(p, "metadata.namespace", namespace, label=True)
    _check_sim_annotations(p, "metadata.annotations", meta.annotations)

    raw_tasks = _mapping(doc.get("spec")).get("tasks") or []
    if not spec.tasks:
        p.add("spec.tasks", "at least one task is required")

    tasks: list[Task] = []
    seen: set[str] = set()
    claims = dra.claim_sources(p, meta.annotations)
    for i, task_spec in enumerate(spec.tasks):
        task = _task(p, meta.name, i, task_spec, raw_tasks[i], claims)
        if task.name in seen:
            p.add(f"spec.tasks[{i}].name", f'duplicate task name "{task.name}"')
        seen.add(task.name)
        tasks.append(task)

    total = sum(t.replicas for t in tasks)
    if tasks and total == 0 and all(t.replicas >= 0 for t in spec.tasks):
        # A job of no pod would neither run nor finish.
        p.add("spec.tasks", "the tasks have 0 replicas in all: at least one pod is required")
    min_available = spec.min_available
    if min_available < 0:
        p.add("spec.minAvailable", "must be >= 0")
    elif min_available > total:
        p.add("spec.minAvailable", f"minAvailable {min_available} is more than the {total} pods of the job")
    if min_available <= 0:
        # Volcano's webhook treats 0 as unset: Σ task minAvailable.
        min_available = sum(t.min_available for t in tasks)
    if spec.max_retry < 0:
        p.add("spec.maxRetry", "must be >= 0")
    if spec.min_success is not None and not 1 <= spec.min_success <= total:
        p.add(
            "spec.minSuccess",
            f"minSuccess {spec.min_success} must be between 1 and the {total} pods of the job",
        )
    queue = spec.queue or DEFAULT_QUEUE
    check_name(p, "spec.queue", queue, label=False)
    if spec.priority_class_name:
        check_name(p, "spec.priorityClassName", spec.priority_class_name, label=False)

    job = Job(
        name=meta.name,
        namespace=namespace,
        labels=dict(meta.labels),
        annotations=dict(meta.annotations),
        queue=queue,
        queue_from="spec.queue" if spec.queue else "",
        priority_class_name=spec.priority_class_name or None,
        min_available=min_available,
        max_retry=spec.max_retry or DEFAULT_MAX_RETRY,
        min_success=spec.min_success,
        scheduler_name=spec.scheduler_name or DEFAULT_SCHEDULER,
        network_topology=build_network_topology(p, "spec.networkTopology", spec.network_topology),
        policies=build_policies(p, "spec.policies", spec.policies),
        plugins=_plugins(p, spec.plugins),
        tasks=charge_once(tuple(tasks), claims, place=True),
        allowed_clusters=_allowed_clusters(p, meta.annotations),
        cluster_selector=_cluster_selector(p, meta.annotations),
        preferred_clusters=_preferred_clusters(p, meta.annotations),
        placement_prefs=read_prefs(p, meta.annotations),
        raw=copy_tree(dict(doc)),
    )
    checkpoint_interval(p, meta.annotations)  # read by admission from the stored manifest
    p.raise_if_any()
    return job
