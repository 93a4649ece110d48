"""Volcano's PodGroup (``scheduling.volcano.sh/v1beta1``) with the plain Pods that name it
(annotation ``scheduling.k8s.io/group-name``): a file holding both is one job. The pods travel
with the PodGroup in its ``PODS_ANNOTATION`` (``carry``, as DRA claims travel with their jobs);
pods alike (same template, same ``volcano.sh/task-spec``) are one task, named by that annotation
or by its first pod. The gang is ``spec.minMember`` (Volcano's zero value, absent, is 1) and
``spec.minTaskMember`` per task; queue and priority class come from the spec. Runs to its end."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from vglobal.model.errors import Problems, key_path
from vglobal.model.k8s import parse_resources
from vglobal.model.kinds.reading import Tasks, WorkloadManifest, count, whole_gang, workload_reader
from vglobal.model.kinds.record import WorkloadKind

API_VERSION, KIND_NAME = "scheduling.volcano.sh/v1beta1", "PodGroup"
GROUP_NAME = "scheduling.k8s.io/group-name"
TASK_SPEC = "volcano.sh/task-spec"
PODS_ANNOTATION = "vglobal.io/pods"
PODS_AT = key_path("metadata.annotations", PODS_ANNOTATION)


def _meta(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = doc.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _namespace(doc: Mapping[str, Any]) -> str:
    return str(_meta(doc).get("namespace") or "default")


def group_named(doc: Mapping[str, Any]) -> str | None:
    """The PodGroup a v1 Pod names, if it names one."""
    if doc.get("apiVersion") != "v1" or doc.get("kind") != "Pod":
        return None
    annotations = _meta(doc).get("annotations")
    value = annotations.get(GROUP_NAME) if isinstance(annotations, Mapping) else None
    return str(value) if value else None


def is_pod_group(doc: Any) -> bool:
    return isinstance(doc, Mapping) and doc.get("apiVersion") == API_VERSION and doc.get("kind") == KIND_NAME


def members(docs: list[dict[str, Any]]) -> set[int]:
    """The positions of the pods that name a PodGroup of the same namespace among ``docs``."""
    groups = {(_namespace(d), str(_meta(d).get("name", ""))) for d in docs if is_pod_group(d)}
    named = [group_named(d) if isinstance(d, Mapping) else None for d in docs]
    return {i for i, (d, n) in enumerate(zip(docs, named, strict=True)) if n and (_namespace(d), n) in groups}


def carry(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The documents with each PodGroup carrying the pods of its namespace that name it (those pods
    leave the list); a pod naming a PodGroup the documents lack stays, and its reader refuses it."""
    taken = members(docs)
    pods: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for i in sorted(taken):
        pods.setdefault((_namespace(docs[i]), str(group_named(docs[i]))), []).append(docs[i])
    out: list[dict[str, Any]] = []
    for i, doc in enumerate(docs):
        if i in taken:
            continue
        if is_pod_group(doc) and (mine := pods.get((_namespace(doc), str(_meta(doc).get("name", ""))))):
            meta = dict(_meta(doc))
            meta["annotations"] = {**(meta.get("annotations") or {}), PODS_ANNOTATION: json.dumps(mine)}
            doc = {**doc, "metadata": meta}
        out.append(doc)
    return out


def carried_pods(p: Problems | None, annotations: Mapping[str, str]) -> list[Mapping[str, Any]]:
    """The pods a PodGroup carries (``p``: where to say what is wrong with them, None: pass over)."""
    text = annotations.get(PODS_ANNOTATION)
    try:
        pods = json.loads(text) if text is not None else []
    except ValueError:
        pods = None
    if not isinstance(pods, list) or not all(isinstance(d, Mapping) for d in pods):
        if p is not None:
            p.add(PODS_AT, "must be a JSON list of v1 Pods")
        return []
    return pods


def task_names(pods: list[Mapping[str, Any]]) -> list[str]:
    """Each pod's task: pods alike (same template and task-spec) are one, named by the task-spec
    annotation or by its first pod's name."""
    names: dict[str, str] = {}
    out: list[str] = []
    for pod in pods:
        meta = _meta(pod)
        annotations = meta.get("annotations") if isinstance(meta.get("annotations"), Mapping) else {}
        spec_name = str((annotations or {}).get(TASK_SPEC) or "")
        alike = json.dumps(
            [spec_name, meta.get("labels"), annotations, pod.get("spec")], sort_keys=True, default=str
        )
        if alike not in names:
            name = spec_name or str(meta.get("name") or "")
            if name in names.values():
                name = f"{name}-{meta.get('name')}"
            names[alike] = name
        out.append(names[alike])
    return out


def _read(tasks: Tasks, base: str, spec: Mapping[str, Any], annotations: Mapping[str, str]) -> None:
    pods = carried_pods(tasks.p, annotations)
    if not pods:
        if not tasks.p:
            tasks.p.add("metadata.name", f"no pod names this PodGroup: apply it with its pods ({GROUP_NAME})")
        return
    names = task_names(pods)
    for name in dict.fromkeys(names):
        first = names.index(name)
        meta = _meta(pods[first])
        template = {
            "metadata": {k: meta[k] for k in ("labels", "annotations") if isinstance(meta.get(k), Mapping)},
            "spec": pods[first].get("spec"),
        }
        n = names.count(name)
        tasks.add(name, f"{PODS_AT}[{first}]", template, n, n, gang_from=f"{base}.minMember")
    least = count(tasks.p, f"{base}.minMember", spec.get("minMember"), 1)
    whole_gang(tasks, f"{base}.minMember", max(least, 1))
    parse_resources(tasks.p, f"{base}.minResources", spec.get("minResources"))
    _min_task_member(tasks, base, spec.get("minTaskMember"))
    if isinstance(spec.get("queue"), str) and spec["queue"]:
        tasks.queue, tasks.queue_at = spec["queue"], f"{base}.queue"
    if isinstance(spec.get("priorityClassName"), str) and spec["priorityClassName"]:
        tasks.priority = spec["priorityClassName"]


def _min_task_member(tasks: Tasks, base: str, given: Any) -> None:
    """Volcano's per-task gang: at least this many pods of each named task start together."""
    if given is None:
        return
    where = f"{base}.minTaskMember"
    if not isinstance(given, Mapping):
        tasks.p.add(where, "must be a mapping of task name to count")
        return
    by_name = {t.name: i for i, t in enumerate(tasks.tasks)}
    for name, value in given.items():
        at = f"{where}.{name}"
        if name not in by_name:
            tasks.p.add(at, f"no task {name!r}: the tasks are {', '.join(by_name)}")
            continue
        task = tasks.tasks[by_name[name]]
        least = count(tasks.p, at, value, 0)
        if least > task.replicas:
            tasks.p.add(at, f"{least} is more than the task's {task.replicas} pods")
            continue
        tasks.tasks[by_name[name]] = dataclasses.replace(task, min_available=least, gang_from=at)


KIND = WorkloadKind(
    API_VERSION,
    KIND_NAME,
    "podgroups",
    "podgroup.scheduling.volcano.sh",
    workload_reader(_read),
    WorkloadManifest,
    order=22,
)
