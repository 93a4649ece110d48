"""The objects `vglobal apply` writes, as the hub holds them: one entry per kind (how to read one
live, list those of a namespace with their labels, delete one). `apply` says created / configured /
unchanged from them, `vglobal diff` compares with them and `apply --prune` deletes from them; a new
kind is one entry of ``LIVE``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc

from vglobal.cli.documents import Document
from vglobal.model import apply_rules
from vglobal.model.hyperjob import HYPERJOB_LABEL
from vglobal.model.kinds import KINDS, kind_of
from vglobal.sdk import Client, VGlobalError

Manifest = dict[str, Any]


@dataclass(frozen=True)
class Live:
    """One object the hub holds: its key and what apply compares (its manifest)."""

    kind: str  # the key of LIVE it was listed under
    namespace: str  # "" for a cluster-wide kind
    name: str
    labels: Mapping[str, str]


@dataclass(frozen=True)
class LiveKind:
    resource: str  # as kubectl prints it: "queue.scheduling.volcano.sh"
    scoped: bool  # lives in a namespace
    get: Callable[[Client, str, str], Manifest | None]  # (namespace, name) -> its manifest, None: none
    listing: Callable[[Client, Mapping[str, str]], list[Live]]  # those carrying these labels
    delete: Callable[[Client, str, str], None]


def _missing(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except VGlobalError as exc:
        if exc.code == grpc.StatusCode.NOT_FOUND:
            return None
        raise


def _labels(manifest: Mapping[str, Any]) -> dict[str, str]:
    meta = manifest.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}


def matches(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


# ---- jobs: one entry per kind, all through the jobs API (Job.kind tells them apart)


def _job_kind(shown: str) -> LiveKind:
    def get(c: Client, ns: str, name: str) -> Manifest | None:
        j = _missing(lambda: c.get_job(name, ns or "default"))
        if j is None or j.kind != shown:
            return None
        out: Manifest = json.loads(j.manifest)
        return out

    def listing(c: Client, selector: Mapping[str, str]) -> list[Live]:
        return [
            Live(shown, j.namespace, j.name, dict(j.labels))
            for j in c.list_jobs(labels=dict(selector))
            if j.kind == shown and not j.labels.get(HYPERJOB_LABEL)  # a HyperJob's own
        ]

    printed = next(k.printed for k in KINDS if k.shown == shown)
    return LiveKind(printed, True, get, listing, lambda c, ns, name: _drop(c.delete_job, ns, name))


# ---- the other kinds apply takes


def _queue_get(c: Client, ns: str, name: str) -> Manifest | None:
    q = _missing(lambda: c.get_queue(name))
    return None if q is None else json.loads(q.manifest or "{}")


def _queues(c: Client, selector: Mapping[str, str]) -> list[Live]:
    out = []
    for q in c.list_queues():
        labels = _labels(json.loads(q.manifest or "{}"))
        if matches(labels, selector):
            out.append(Live("Queue", "", q.name, labels))
    return out


def _pc_view(value: int, global_default: bool, policy: str) -> Manifest:
    policy = policy or "PreemptLowerPriority"
    return {"value": value, "globalDefault": global_default, "preemptionPolicy": policy}


def _pc_get(c: Client, ns: str, name: str) -> Manifest | None:
    for pc in c.list_priority_classes():
        if pc.name == name:
            return _pc_view(pc.value, pc.global_default, pc.preemption_policy)
    return None


def _namespace_get(c: Client, ns: str, name: str) -> Manifest | None:
    for n in c.list_namespaces():
        if n.name == name:
            out: Manifest = json.loads(n.manifest or "{}")
            return out
    return None


def _namespaces(c: Client, selector: Mapping[str, str]) -> list[Live]:
    out = []
    for n in c.list_namespaces():
        labels = _labels(json.loads(n.manifest or "{}"))
        if matches(labels, selector):
            out.append(Live("Namespace", "", n.name, labels))
    return out


def _workflow(get_one: str, list_all: str, delete_one: str, field: str, kind: str) -> LiveKind:
    def get(c: Client, ns: str, name: str) -> Manifest | None:
        got = _missing(lambda: getattr(c, get_one)(name, ns or "default"))
        return None if got is None else json.loads(got.manifest or "{}")

    def listing(c: Client, selector: Mapping[str, str]) -> list[Live]:
        out = []
        for o in getattr(c, list_all)():
            labels = _labels(json.loads(o.manifest or "{}"))
            if matches(labels, selector):
                out.append(Live(kind, o.namespace, o.name, labels))
        return out

    return LiveKind(field, True, get, listing, lambda c, ns, name: _drop(getattr(c, delete_one), ns, name))


def _drop(delete: Callable[[str, str], Any], ns: str, name: str) -> None:
    delete(name, ns)


LIVE: dict[str, LiveKind] = {
    **{k.shown: _job_kind(k.shown) for k in KINDS},
    "Queue": LiveKind(
        "queue.scheduling.volcano.sh",
        False,
        _queue_get,
        _queues,
        lambda c, ns, name: _drop(lambda n, _: c.delete_queue(n), ns, name),
    ),
    "PriorityClass": LiveKind(
        "priorityclass.scheduling.k8s.io",
        False,
        _pc_get,
        lambda c, selector: [],  # they carry no labels the hub keeps
        lambda c, ns, name: _drop(lambda n, _: c.delete_priority_class(n), ns, name),
    ),
    "Namespace": LiveKind(
        "namespace",
        False,
        _namespace_get,
        _namespaces,
        lambda c, ns, name: _drop(lambda n, _: c.delete_namespace(n), ns, name),
    ),
    "CronJob": _workflow(
        "get_cron_job", "list_cron_jobs", "delete_cron_job", "cronjob.batch.volcano.sh", "CronJob"
    ),
    "JobTemplate": _workflow(
        "get_job_template",
        "list_job_templates",
        "delete_job_template",
        "jobtemplate.flow.volcano.sh",
        "JobTemplate",
    ),
    "JobFlow": _workflow(
        "get_job_flow", "list_job_flows", "delete_job_flow", "jobflow.flow.volcano.sh", "JobFlow"
    ),
}


def key_of(d: Document) -> str:
    """The entry of LIVE a document is (a job by its kind record: batch/v1 Job is not a Volcano Job)."""
    record = kind_of(d.body)
    return record.shown if record is not None else d.kind


def namespace_of(d: Document) -> str:
    if not LIVE[key_of(d)].scoped:
        return ""
    meta = d.body.get("metadata")
    return str((meta.get("namespace") if isinstance(meta, Mapping) else None) or "default")


def comparable(d: Document) -> Manifest:
    """What of the document the live object is compared with."""
    if d.kind == "PriorityClass":
        b = d.body
        policy = str(b.get("preemptionPolicy", ""))
        return _pc_view(int(b.get("value", 0)), bool(b.get("globalDefault", False)), policy)
    return d.body


def result(live: Manifest | None, d: Document) -> str:
    """kubectl's word for applying ``d`` over ``live``."""
    if live is None:
        return "created"
    return "unchanged" if apply_rules.same(live, comparable(d)) else "configured"


def named(kind: str, namespace: str, name: str) -> str:
    return f"{LIVE[kind].resource}/{namespace + '/' if namespace else ''}{name}"
