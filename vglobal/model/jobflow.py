"""Volcano's workflow kinds (``flow.volcano.sh/v1alpha1``): JobTemplate and JobFlow.

A JobTemplate holds a Job spec, validated exactly as a submitted Job's. A JobFlow lists
``flows``: each names a JobTemplate and may depend on other flows of the same JobFlow; the
flow's Job, named ``<jobflow>-<flow>``, is made once its dependencies are met. Whether the
dependencies form a DAG is checked here; whether the templates exist needs the store, so
``check_flow_templates`` takes them as an argument.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import Field, StrictStr

from vglobal.model.errors import ManifestError, Problems
from vglobal.model.job import JOB_SPEC, Job, spec_queue
from vglobal.model.job_template import check_namespace, job_document, parse_embedded_job
from vglobal.model.k8s import DNS1123_LABEL, OBJECT_FIELDS, Metadata, Model, check_name, validate_model

__all__ = [
    "POD_PHASES",
    "Flow",
    "JobFlow",
    "JobTemplate",
    "RetainPolicy",
    "TaskStatusCheck",
    "check_flow_templates",
    "flow_job",
    "parse_job_flow",
    "parse_job_template",
]

API_VERSION = "flow.volcano.sh/v1alpha1"
TEMPLATE_KIND = "JobTemplate"
FLOW_KIND = "JobFlow"
CREATED_BY_TEMPLATE = "volcano.sh/createdByJobTemplate"
CREATED_BY_FLOW = "volcano.sh/createdByJobFlow"
# A taskStatus probe names the phase of a task's pods.
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed")


class RetainPolicy(StrEnum):
    retain = "retain"
    delete = "delete"  # delete the flow's Jobs once the JobFlow has succeeded


@dataclass(frozen=True, kw_only=True)
class JobTemplate:
    name: str
    namespace: str = "default"
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    job_spec: dict[str, Any] = field(default_factory=dict)
    task_names: tuple[str, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def queue(self) -> str:
        """The queue its Jobs go to (what a caller must be allowed to submit to)."""
        return spec_queue(self.job_spec)


@dataclass(frozen=True, kw_only=True)
class TaskStatusCheck:
    """Met when every pod of task ``task_name`` in a target's Job is in ``phase``."""

    task_name: str
    phase: str


@dataclass(frozen=True, kw_only=True)
class Flow:
    name: str  # and the JobTemplate's
    depends_on: tuple[str, ...] = ()
    probe: tuple[TaskStatusCheck, ...] = ()


@dataclass(frozen=True, kw_only=True)
class JobFlow:
    name: str
    namespace: str = "default"
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    flows: tuple[Flow, ...] = ()
    job_retain_policy: RetainPolicy = RetainPolicy.retain
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def job_name(self, flow: str) -> str:
        return f"{self.name}-{flow}"


# --- wire schema ---


class _TaskStatus(Model):
    task_name: StrictStr = ""
    phase: StrictStr = ""


class _Probe(Model):
    http_get_list: list[Any] | None = None
    tcp_socket_list: list[Any] | None = None
    task_status_list: list[_TaskStatus] = Field(default_factory=list)


class _DependsOn(Model):
    targets: list[StrictStr] = Field(default_factory=list)
    probe: _Probe | None = None


class _Patch(Model):
    shapes = {"spec": JOB_SPEC}


class _Flow(Model):
    shapes = {"patch": (_Patch, False)}
    name: StrictStr = ""
    depends_on: _DependsOn | None = None
    patch: Any = None


class _JobFlowSpec(Model):
    flows: list[_Flow] = Field(default_factory=list)
    job_retain_policy: StrictStr = ""


class JobFlowManifest(Model):
    passthrough = OBJECT_FIELDS
    metadata: Metadata = Field(default_factory=Metadata)
    spec: _JobFlowSpec = Field(default_factory=_JobFlowSpec)


class JobTemplateManifest(Model):
    passthrough = OBJECT_FIELDS
    shapes = {"spec": JOB_SPEC}
    metadata: Metadata = Field(default_factory=Metadata)


# --- JobTemplate ---


def parse_job_template(doc: Mapping[str, Any]) -> JobTemplate:
    """Validate one JobTemplate; its ``spec`` is a Job spec, checked as a submitted Job's."""
    meta = validate_model(JobTemplateManifest, doc).metadata
    p = Problems()
    check_name(p, "metadata.name", meta.name, label=True)
    namespace = check_namespace(p, meta)
    spec = doc.get("spec")
    sample = meta.name if DNS1123_LABEL.match(meta.name) else "template"
    made = parse_embedded_job(p, job_document(name=sample, namespace="default", spec=spec), spec_at="spec")
    p.raise_if_any()
    assert made is not None
    return JobTemplate(
        name=meta.name,
        namespace=namespace,
        labels=dict(meta.labels),
        annotations=dict(meta.annotations),
        job_spec=copy.deepcopy(dict(spec)) if isinstance(spec, Mapping) else {},
        task_names=tuple(t.name for t in made.tasks),
        raw=copy.deepcopy(dict(doc)),
    )


# --- JobFlow ---


def _probe(p: Problems, base: str, probe: _Probe | None, has_targets: bool) -> tuple[TaskStatusCheck, ...]:
    if probe is None:
        return ()
    for key, value in (("httpGetList", probe.http_get_list), ("tcpSocketList", probe.tcp_socket_list)):
        if value:
            p.add(f"{base}.{key}", "not supported: a flow can wait on task status only (taskStatusList)")
    if probe.task_status_list and not has_targets:
        p.add(f"{base}.taskStatusList", "a probe needs dependsOn.targets whose tasks it watches")
    checks = []
    for k, check in enumerate(probe.task_status_list):
        where = f"{base}.taskStatusList[{k}]"
        check_name(p, f"{where}.taskName", check.task_name, label=True)
        if check.phase not in POD_PHASES:
            p.add(f"{where}.phase", f'must be one of {", ".join(POD_PHASES)}, not "{check.phase}"')
        checks.append(TaskStatusCheck(task_name=check.task_name, phase=check.phase))
    return tuple(checks)


def _flow(p: Problems, i: int, spec: _Flow, names: Sequence[str], jobflow: str) -> Flow:
    base = f"spec.flows[{i}]"
    check_name(p, f"{base}.name", spec.name, label=True)
    if spec.name and jobflow and len(f"{jobflow}-{spec.name}") > 63:
        p.add(f"{base}.name", f'the Job name "{jobflow}-{spec.name}" would be longer than 63 characters')
    if names.count(spec.name) > 1 and names.index(spec.name) < i:
        p.add(f"{base}.name", f'duplicate flow "{spec.name}"')
    if spec.patch is not None:
        p.add(f"{base}.patch", "not supported: make a JobTemplate for each variant")
    depends = spec.depends_on or _DependsOn()
    targets: list[str] = []
    for j, target in enumerate(depends.targets):
        if target not in names:
            known = ", ".join(n for n in names if n) or "none"
            p.add(f"{base}.dependsOn.targets[{j}]", f'unknown flow "{target}" (flows: {known})')
        elif target not in targets:
            targets.append(target)
    probe = _probe(p, f"{base}.dependsOn.probe", depends.probe, bool(targets))
    return Flow(name=spec.name, depends_on=tuple(targets), probe=probe)


def _cycle(flows: Sequence[Flow]) -> tuple[int, list[str]] | None:
    """The first dependency cycle, as (index of the flow that closes it, the path round it).

    A depth-first walk with its own stack, so a long chain of flows needs no deep recursion.
    """
    index = {f.name: i for i, f in enumerate(flows)}
    done: set[str] = set()
    for root in flows:
        if root.name in done:
            continue
        path, on_path = [root.name], {root.name}
        stack = [iter(root.depends_on)]
        while stack:
            target = next(stack[-1], None)
            if target is None:
                on_path.discard(name := path.pop())
                done.add(name)
                stack.pop()
            elif target in on_path:
                return index[path[-1]], [*path[path.index(target) :], target]
            elif target not in done:
                path.append(target)
                on_path.add(target)
                stack.append(iter(flows[index[target]].depends_on))
    return None


def parse_job_flow(doc: Mapping[str, Any]) -> JobFlow:
    """Validate one JobFlow: names, targets, probes and that the dependencies form a DAG."""
    m = validate_model(JobFlowManifest, doc)
    p = Problems()
    meta, spec = m.metadata, m.spec
    check_name(p, "metadata.name", meta.name, label=True)
    namespace = check_namespace(p, meta)
    if not spec.flows:
        p.add("spec.flows", "at least one flow is required")
    names = [f.name for f in spec.flows]
    flows = tuple(_flow(p, i, f, names, meta.name) for i, f in enumerate(spec.flows))
    if not p and (cycle := _cycle(flows)) is not None:
        i, path = cycle
        shown = path if len(path) <= 8 else [*path[:4], "...", *path[-3:]]
        size = f" ({len(path) - 1} flows)" if len(path) > 8 else ""
        p.add(f"spec.flows[{i}].dependsOn.targets", "dependency cycle: " + " -> ".join(shown) + size)
    policy = RetainPolicy.retain
    if spec.job_retain_policy:
        try:
            policy = RetainPolicy(spec.job_retain_policy)
        except ValueError:
            p.add("spec.jobRetainPolicy", f'must be "retain" or "delete", not "{spec.job_retain_policy}"')
    p.raise_if_any()
    return JobFlow(
        name=meta.name,
        namespace=namespace,
        labels=dict(meta.labels),
        annotations=dict(meta.annotations),
        flows=flows,
        job_retain_policy=policy,
        raw=copy.deepcopy(dict(doc)),
    )


def flow_job(jobflow: JobFlow, flow: str, template: JobTemplate) -> Job:
    """The Job of one flow, made from its JobTemplate as Volcano makes it; raises ManifestError."""
    marks = {
        CREATED_BY_TEMPLATE: f"{jobflow.namespace}.{flow}",
        CREATED_BY_FLOW: f"{jobflow.namespace}.{jobflow.name}",
    }
    owner = {"apiVersion": API_VERSION, "kind": FLOW_KIND, "name": jobflow.name, "controller": True}
    doc = job_document(
        name=jobflow.job_name(flow),
        namespace=jobflow.namespace,
        spec=template.job_spec,
        labels=marks,
        annotations=marks,
        owner=owner,
    )
    p = Problems()
    made = parse_embedded_job(p, doc, spec_at="spec")
    if made is None:
        raise ManifestError(p.items)
    return made


def check_flow_templates(jobflow: JobFlow, templates: Mapping[str, JobTemplate]) -> None:
    """Refuse a JobFlow whose flows name no JobTemplate of ``templates`` (its namespace's), whose
    Jobs would be invalid, or whose probes watch tasks its targets do not have."""
    p = Problems()
    for i, f in enumerate(jobflow.flows):
        template = templates.get(f.name)
        if template is None:
            missing = f'JobTemplate "{f.name}" not found in namespace "{jobflow.namespace}"'
            p.add(f"spec.flows[{i}].name", missing)
            continue
        try:
            flow_job(jobflow, f.name, template)
        except ManifestError as exc:
            p.add(f"spec.flows[{i}].name", f'the Job "{jobflow.job_name(f.name)}" would be invalid: {exc}')
        tasks = {t for target in f.depends_on if target in templates for t in templates[target].task_names}
        for k, check in enumerate(f.probe):
            if check.task_name not in tasks:
                p.add(
                    f"spec.flows[{i}].dependsOn.probe.taskStatusList[{k}].taskName",
                    f'no task "{check.task_name}" in the JobTemplates of {", ".join(f.depends_on)}',
                )
    p.raise_if_any()
