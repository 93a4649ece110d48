"""What the workload kinds a controller in the member cluster runs have in common: their tasks, read
each from a pod template at a field path, and the ``Job`` made of them with queue, priority class
and network topology from the labels Volcano's integrations read.

Each kind's module (beside this one) reads its own tasks; ``raw`` keeps the manifest unchanged,
since the agent writes the object from it.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import Field

from vglobal.model import dra
from vglobal.model.dra_shared import charge_once
from vglobal.model.errors import Problems, key_path
from vglobal.model.job import (
    DEFAULT_MAX_RETRY,
    DEFAULT_QUEUE,
    DEFAULT_SCHEDULER,
    Job,
    Task,
    _allowed_clusters,
    _check_sim_annotations,
    _cluster_selector,
    _preferred_clusters,
)
from vglobal.model.k8s import OBJECT_FIELDS, Metadata, Model, check_name, pod_request, validate_model
from vglobal.model.network_topology import NetworkTopology, NetworkTopologySpec, build_network_topology
from vglobal.model.placement_prefs import read_prefs

# Volcano's label and annotation, then Kueue's label (its LocalQueue's name read as the queue's).
QUEUE_LABELS = ("volcano.sh/queue-name", "scheduling.volcano.sh/queue-name", "kueue.x-k8s.io/queue-name")
PRIORITY_LABEL = "ray.io/priority-class-name"
TOPOLOGY_MODE_LABEL = "volcano.sh/network-topology-mode"
TOPOLOGY_TIER_LABEL = "volcano.sh/network-topology-highest-tier-allowed"
GROUP_MIN_MEMBER = "scheduling.volcano.sh/group-min-member"
SUBMITTER = "submitter"


class WorkloadManifest(Model):
    """Field validation of these kinds stops at the object's own fields: their specs belong to
    their controllers' schemas, which the member cluster's API server checks."""

    passthrough = OBJECT_FIELDS | {"spec"}
    metadata: Metadata = Field(default_factory=Metadata)


def default_submitter(cluster_spec: Any) -> dict[str, Any]:
    """KubeRay's default submitter pod template (its head's image, 500m CPU / 200Mi)."""
    containers = dig(cluster_spec, "headGroupSpec", "template", "spec", "containers") or [{}]
    first = containers[0] if isinstance(containers[0], Mapping) else {}
    return {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "ray-job-submitter",
                    "image": first.get("image", ""),
                    "resources": {
                        "limits": {"cpu": "1", "memory": "1Gi"},
                        "requests": {"cpu": "500m", "memory": "200Mi"},
                    },
                }
            ],
        }
    }


def dig(obj: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(k)
    return obj


def count(p: Problems, where: str, value: Any, default: int) -> int:
    """A count field: absent is ``default``; otherwise a whole number >= 0."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        p.add(where, f"must be a whole number, not {value!r}")
        return default
    if value < 0:
        p.add(where, "must be >= 0")
        return 0
    return value


class Tasks:
    """The tasks being read, each from a pod template at a field path."""

    def __init__(self, p: Problems, claims: dra.Sources | None = None) -> None:
        self.p = p
        self.claims: dra.Sources = claims or {}
        self.tasks: list[Task] = []
        # Set by a kind whose gang is one count over all its tasks (Volcano's group-min-member, a
        # runPolicy's minAvailable): the job's minAvailable, the tasks' own minimums then 0.
        self.gang: int | None = None
        self.queue: str | None = None  # the queue a kind names in its spec (a runPolicy's)
        self.queue_at = "spec.runPolicy.schedulingPolicy.queue"  # the field it is named in
        self.priority: str | None = None  # the priority class a kind names in its spec
        self.topology: NetworkTopology | None = None  # the network topology a kind names in its spec

    def add(
        self,
        name: str,
        where: str,
        template: Any,
        replicas: int,
        min_available: int,
        *,
        name_at: str | None = None,
        gang_from: str = "",
        group_pods: int = 0,
    ) -> None:
        """``name_at``: the field the name was read from (None: the kind fixes the name);
        ``gang_from``: what the gang count was read from, as ``describe`` says it."""
        if not isinstance(template, Mapping):
            self.p.add(where, "required: a pod template")
            return
        spec = template.get("spec")
        if not isinstance(spec, Mapping) or not spec.get("containers"):
            self.p.add(key_path(where, "spec.containers"), "required: at least one container")
            return
        if any(t.name == name for t in self.tasks):
            self.p.add(name_at or where, f'duplicate pod template name "{name}"')
        if name_at is not None:
            check_name(self.p, name_at, name, label=True)
        meta = template.get("metadata") if isinstance(template.get("metadata"), Mapping) else {}
        assert isinstance(meta, Mapping)
        annotations = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
        own_class = spec.get("priorityClassName")
        self.tasks.append(
            Task(
                name=name,
                replicas=replicas,
                min_available=min(min_available, replicas),
                max_retry=DEFAULT_MAX_RETRY,
                template=copy.deepcopy(dict(template)),
                pod_request=pod_request(self.p, key_path(where, "spec"), spec)
                + dra.pod_claims(self.p, key_path(where, "spec"), spec, self.claims),
                annotations=annotations,
                priority_class_name=own_class if isinstance(own_class, str) and own_class else None,
                gang_from=gang_from,
                group_pods=group_pods,
            )
        )


MIN_MEMBER_AT = key_path("metadata.annotations", GROUP_MIN_MEMBER)


def min_member(p: Problems, annotations: Mapping[str, str], default: int) -> int:
    text = annotations.get(GROUP_MIN_MEMBER)
    if text is None:
        return default
    where = key_path("metadata.annotations", GROUP_MIN_MEMBER)
    if not text.isdigit() or int(text) < 1:
        p.add(where, f'must be a whole number >= 1, not "{text}"')
        return default
    return int(text)


def whole_gang(tasks: Tasks, where: str, gang: int | None) -> None:
    """A gang of ``gang`` pods over all the tasks read (None: each task's own minimum stands):
    the tasks' minimums give way to it, and it may not be more than their pods."""
    if gang is None:
        return
    total = sum(t.replicas for t in tasks.tasks)
    if gang > total:
        tasks.p.add(where, f"{gang} is more than the {total} pods of all the tasks")
        return
    tasks.gang = gang
    tasks.tasks = [dataclasses.replace(t, min_available=0) for t in tasks.tasks]


def topology(p: Problems, labels: Mapping[str, str]) -> NetworkTopology | None:
    mode = labels.get(TOPOLOGY_MODE_LABEL)
    tier = labels.get(TOPOLOGY_TIER_LABEL)
    if mode is None and tier is None:
        return None
    highest: int | None = None
    if tier is not None:
        if not tier.isdigit():
            p.add(key_path("metadata.labels", TOPOLOGY_TIER_LABEL), f'must be a whole number, not "{tier}"')
        else:
            highest = int(tier)
    where = key_path("metadata.labels", TOPOLOGY_MODE_LABEL)
    return build_network_topology(
        p, where, NetworkTopologySpec(mode=mode or "hard", highest_tier_allowed=highest)
    )


# Reads a kind's tasks into ``Tasks``: (tasks, the spec's field path, the spec, the annotations).
TaskReader = Callable[["Tasks", str, Mapping[str, Any], Mapping[str, str]], None]


def workload_reader(read_tasks: TaskReader) -> Callable[[Mapping[str, Any]], Job]:
    """The reader of a kind whose tasks ``read_tasks`` reads."""

    def read(doc: Mapping[str, Any]) -> Job:
        return read_workload(doc, read_tasks)

    return read


def read_workload(doc: Mapping[str, Any], read_tasks: TaskReader) -> Job:
    """Validate one manifest of a workload kind; raises ManifestError naming every bad field."""
    m = validate_model(WorkloadManifest, doc)
    p = Problems()
    meta = m.metadata
    check_name(p, "metadata.name", meta.name, label=True)
    namespace = meta.namespace or "default"
    check_name(p, "metadata.namespace", namespace, label=True)
    labels, annotations = dict(meta.labels), dict(meta.annotations)
    spec = doc.get("spec")
    if not isinstance(spec, Mapping):
        p.add("spec", "required")
        p.raise_if_any()
    assert isinstance(spec, Mapping)
    tasks = Tasks(p, dra.claim_sources(p, annotations))
    read_tasks(tasks, "spec", spec, annotations)
    if not p and not tasks.tasks:
        p.add("spec", "no pod template to run")
    if not p and sum(t.replicas for t in tasks.tasks) == 0:
        p.add("spec", "0 pods in all: at least one pod is required")
    meta_maps = (("metadata.labels", labels), ("metadata.annotations", annotations))
    named = next((key_path(w, k) for k in QUEUE_LABELS for w, m in meta_maps if m.get(k)), "")
    if tasks.queue:
        named = tasks.queue_at
    queue = tasks.queue or next(
        (v for k in QUEUE_LABELS if (v := labels.get(k) or annotations.get(k))), DEFAULT_QUEUE
    )
    check_name(p, key_path("metadata.labels", QUEUE_LABELS[0]), queue, label=False)
    priority = tasks.priority or labels.get(PRIORITY_LABEL) or None
    if priority:
        check_name(p, key_path("metadata.labels", PRIORITY_LABEL), priority, label=False)
    _check_sim_annotations(p, "metadata.annotations", annotations)
    network = tasks.topology or topology(p, labels)
    allowed, selector = _allowed_clusters(p, annotations), _cluster_selector(p, annotations)
    preferred = _preferred_clusters(p, annotations)
    prefs = read_prefs(p, annotations)
    p.raise_if_any()
    return Job(
        name=meta.name,
        namespace=namespace,
        labels=labels,
        annotations=annotations,
        queue=queue,
        queue_from=named,
        priority_class_name=priority,
        min_available=sum(t.min_available for t in tasks.tasks) if tasks.gang is None else tasks.gang,
        max_retry=DEFAULT_MAX_RETRY,
        scheduler_name=DEFAULT_SCHEDULER,
        network_topology=network,
        tasks=charge_once(tuple(tasks.tasks), tasks.claims, place=False),
        allowed_clusters=allowed,
        cluster_selector=selector,
        preferred_clusters=preferred,
        placement_prefs=prefs,
        raw=copy.deepcopy(dict(doc)),
    )
