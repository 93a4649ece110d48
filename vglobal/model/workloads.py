"""The workload kinds a controller in the member cluster turns into pods (KubeRay's RayCluster and
RayJob, LeaderWorkerSet, Deployment and StatefulSet with Volcano's gang annotation, batch/v1 Job),
read into the same ``Job`` the hub admits Volcano Jobs as.

Each becomes tasks named as the agent names the object's pod templates (``head``, each worker
group's ``groupName``, ``submitter``; ``leader``, ``worker``; ``main``), with its gang as Volcano
and KubeRay derive it; ``raw`` keeps the manifest unchanged, since the agent writes the object from
it. Queue, priority class and network topology come from the labels Volcano's integrations read.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import Field

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
    parse_job,
)
from vglobal.model.k8s import OBJECT_FIELDS, Metadata, Model, check_name, pod_request, validate_model
from vglobal.model.network_topology import NetworkTopology, NetworkTopologySpec, build_network_topology

QUEUE_LABELS = ("volcano.sh/queue-name", "scheduling.volcano.sh/queue-name")
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
    containers = _dig(cluster_spec, "headGroupSpec", "template", "spec", "containers") or [{}]
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


def _dig(obj: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(k)
    return obj


def _int(p: Problems, where: str, value: Any, default: int) -> int:
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


class _Tasks:
    """The tasks being read, each from a pod template at a field path."""

    def __init__(self, p: Problems) -> None:
        self.p = p
        self.tasks: list[Task] = []

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
                pod_request=pod_request(self.p, f"{where}.spec", spec),
                annotations=annotations,
                priority_class_name=own_class if isinstance(own_class, str) and own_class else None,
                gang_from=gang_from,
                group_pods=group_pods,
            )
        )


def _ray_cluster(tasks: _Tasks, base: str, spec: Any) -> None:
    """Head plus worker groups; with in-tree autoscaling the gang holds each group's minReplicas,
    without it the desired replicas (KubeRay's Volcano integration)."""
    if not isinstance(spec, Mapping):
        tasks.p.add(base, "required")
        return
    tasks.add(
        "head",
        f"{base}.headGroupSpec.template",
        _dig(spec, "headGroupSpec", "template"),
        1,
        1,
        gang_from=f"{base}.headGroupSpec (the head is always in the gang)",
    )
    autoscaling = spec.get("enableInTreeAutoscaling") is True
    groups = spec.get("workerGroupSpecs") or []
    if not isinstance(groups, list):
        tasks.p.add(f"{base}.workerGroupSpecs", "must be a list")
        return
    for i, group in enumerate(groups):
        where = f"{base}.workerGroupSpecs[{i}]"
        if not isinstance(group, Mapping):
            tasks.p.add(where, "must be a mapping")
            continue
        hosts = max(_int(tasks.p, f"{where}.numOfHosts", group.get("numOfHosts"), 1), 1)
        low = _int(tasks.p, f"{where}.minReplicas", group.get("minReplicas"), 0)
        replicas = _int(tasks.p, f"{where}.replicas", group.get("replicas"), low)
        if "maxReplicas" in group:
            high = _int(tasks.p, f"{where}.maxReplicas", group.get("maxReplicas"), replicas)
            if low > high:
                tasks.p.add(f"{where}.minReplicas", f"minReplicas {low} is more than maxReplicas {high}")
        gang = low if autoscaling else replicas
        source = (
            f"{where}.minReplicas (in-tree autoscaling on)"
            if autoscaling
            else f"{where}.replicas (autoscaling off)"
        )
        if hosts > 1:
            source += f" x numOfHosts {hosts}"
        name = group.get("groupName")
        tasks.add(
            str(name or ""),
            f"{where}.template",
            group.get("template"),
            replicas * hosts,
            gang * hosts,
            name_at=f"{where}.groupName",
            gang_from=source,
        )


def _ray_job(tasks: _Tasks, base: str, spec: Mapping[str, Any]) -> None:
    cluster = spec.get("rayClusterSpec")
    if cluster is None and spec.get("clusterSelector"):
        tasks.p.add(f"{base}.clusterSelector", "a RayJob on an existing Ray cluster cannot be federated")
        return
    _ray_cluster(tasks, f"{base}.rayClusterSpec", cluster)
    mode = spec.get("submissionMode", "K8sJobMode")
    if mode == "K8sJobMode":
        given = spec.get("submitterPodTemplate")
        source = f"{base}.submitterPodTemplate" if given else "KubeRay's default submitter pod"
        tasks.add(
            SUBMITTER,
            f"{base}.submitterPodTemplate",
            given or default_submitter(cluster),
            1,
            1,
            gang_from=f"{source} (K8sJobMode)",
        )


def _leader_worker_set(tasks: _Tasks, base: str, spec: Mapping[str, Any]) -> None:
    """``replicas`` groups of ``size`` pods (a leader and size-1 workers), each group a gang of its
    own as Volcano makes it: one whole group starts the set, the others start whole as room allows."""
    groups = _int(tasks.p, f"{base}.replicas", spec.get("replicas"), 1)
    lwt = spec.get("leaderWorkerTemplate")
    if not isinstance(lwt, Mapping):
        tasks.p.add(f"{base}.leaderWorkerTemplate", "required")
        return
    size = _int(tasks.p, f"{base}.leaderWorkerTemplate.size", lwt.get("size"), 1)
    if size < 1:
        tasks.p.add(f"{base}.leaderWorkerTemplate.size", "must be >= 1")
        size = 1
    worker = lwt.get("workerTemplate")
    leader = lwt.get("leaderTemplate", worker)
    each = f"of each of the {base}.replicas groups"
    tasks.add(
        "leader",
        f"{base}.leaderWorkerTemplate.leaderTemplate",
        leader,
        groups,
        1,
        gang_from=f"the leader {each}",
        group_pods=1,
    )
    if size > 1:
        tasks.add(
            "worker",
            f"{base}.leaderWorkerTemplate.workerTemplate",
            worker,
            groups * (size - 1),
            size - 1,
            gang_from=f"{base}.leaderWorkerTemplate.size - 1 workers {each}",
            group_pods=size - 1,
        )


MIN_MEMBER_AT = key_path("metadata.annotations", GROUP_MIN_MEMBER)


def _min_member(p: Problems, annotations: Mapping[str, str], default: int) -> int:
    text = annotations.get(GROUP_MIN_MEMBER)
    if text is None:
        return default
    where = key_path("metadata.annotations", GROUP_MIN_MEMBER)
    if not text.isdigit() or int(text) < 1:
        p.add(where, f'must be a whole number >= 1, not "{text}"')
        return default
    return int(text)


def _replicated(tasks: _Tasks, base: str, spec: Mapping[str, Any], annotations: Mapping[str, str]) -> None:
    """A Deployment or StatefulSet: its replicas, the gang annotation's count of them (1 without)."""
    replicas = _int(tasks.p, f"{base}.replicas", spec.get("replicas"), 1)
    gang = _min_member(tasks.p, annotations, 1)
    if gang > replicas:
        tasks.p.add(
            key_path("metadata.annotations", GROUP_MIN_MEMBER), f"{gang} is more than the {replicas} replicas"
        )
    source = MIN_MEMBER_AT if GROUP_MIN_MEMBER in annotations else f"1 pod (no {GROUP_MIN_MEMBER} annotation)"
    tasks.add("main", f"{base}.template", spec.get("template"), replicas, gang, gang_from=source)


def _batch_job(tasks: _Tasks, base: str, spec: Mapping[str, Any], annotations: Mapping[str, str]) -> None:
    """A batch/v1 Job: its parallelism (at most its completions) runs as one gang unless annotated."""
    parallelism = _int(tasks.p, f"{base}.parallelism", spec.get("parallelism"), 1)
    completions = _int(tasks.p, f"{base}.completions", spec.get("completions"), parallelism)
    pods = min(parallelism, completions) if completions else parallelism
    source = MIN_MEMBER_AT if GROUP_MIN_MEMBER in annotations else f"{base}.parallelism"
    gang = _min_member(tasks.p, annotations, pods)
    tasks.add("main", f"{base}.template", spec.get("template"), pods, gang, gang_from=source)


def _topology(p: Problems, labels: Mapping[str, str]) -> NetworkTopology | None:
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


Reader = Callable[[_Tasks, str, Mapping[str, Any], Mapping[str, str]], None]
READERS: Mapping[tuple[str, str], Reader] = {
    ("ray.io/v1", "RayCluster"): lambda t, b, s, a: _ray_cluster(t, b, s),
    ("ray.io/v1", "RayJob"): lambda t, b, s, a: _ray_job(t, b, s),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): lambda t, b, s, a: _leader_worker_set(t, b, s),
    ("apps/v1", "Deployment"): _replicated,
    ("apps/v1", "StatefulSet"): _replicated,
    ("batch/v1", "Job"): _batch_job,
}
# Kinds whose objects hold their pods until deleted: they run until cancelled or deleted.
LONG_RUNNING = frozenset({"RayCluster", "LeaderWorkerSet", "Deployment", "StatefulSet"})


def long_running(api_version: str | None, kind: str | None) -> bool:
    """A kind whose pods run until it is deleted: not preemptable unless it says so."""
    return kind in LONG_RUNNING and (str(api_version), str(kind)) in READERS


def parse_workload(doc: Mapping[str, Any]) -> Job:
    """Validate one manifest of a kind in READERS; raises ManifestError naming every bad field."""
    m = validate_model(WorkloadManifest, doc)
    reader = READERS[(str(doc.get("apiVersion")), str(doc.get("kind")))]
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
    tasks = _Tasks(p)
    reader(tasks, "spec", spec, annotations)
    if not p and not tasks.tasks:
        p.add("spec", "no pod template to run")
    if not p and sum(t.replicas for t in tasks.tasks) == 0:
        p.add("spec", "0 pods in all: at least one pod is required")
    queue = next((v for k in QUEUE_LABELS if (v := labels.get(k) or annotations.get(k))), DEFAULT_QUEUE)
    check_name(p, key_path("metadata.labels", QUEUE_LABELS[0]), queue, label=False)
    priority = labels.get(PRIORITY_LABEL) or None
    if priority:
        check_name(p, key_path("metadata.labels", PRIORITY_LABEL), priority, label=False)
    _check_sim_annotations(p, "metadata.annotations", annotations)
    topology = _topology(p, labels)
    allowed, selector = _allowed_clusters(p, annotations), _cluster_selector(p, annotations)
    p.raise_if_any()
    return Job(
        name=meta.name,
        namespace=namespace,
        labels=labels,
        annotations=annotations,
        queue=queue,
        priority_class_name=priority,
        min_available=sum(t.min_available for t in tasks.tasks),
        max_retry=DEFAULT_MAX_RETRY,
        scheduler_name=DEFAULT_SCHEDULER,
        network_topology=topology,
        tasks=tuple(tasks.tasks),
        allowed_clusters=allowed,
        cluster_selector=selector,
        raw=copy.deepcopy(dict(doc)),
    )


VOLCANO_JOB = "VolcanoJob"


def kind_name(doc: Mapping[str, Any]) -> str:
    """The kind a job was submitted as, told apart from batch/v1's Job: a Volcano Job is
    ``VolcanoJob`` (so is a HyperJob's child), a workload its own kind."""
    kind = str(doc.get("kind") or "")
    if is_workload(doc):
        return kind
    return VOLCANO_JOB if kind == "Job" else kind


def is_workload(doc: Mapping[str, Any]) -> bool:
    return (str(doc.get("apiVersion")), str(doc.get("kind"))) in READERS


def parse_run(doc: Mapping[str, Any]) -> Job:
    """A dispatched job's manifest, of any kind an agent runs (a Volcano Job or a workload)."""
    return parse_workload(doc) if is_workload(doc) else parse_job(doc)
