"""What the agent does with a workload kind, behind one small protocol: the object it writes for a
run (``body``), the pod templates the kind's controller makes pods from (``templates``), which
group a pod of a task is placed with (``group``), and what the object's status says of the run
(``phase``). ``Workload`` holds the defaults (one ``main`` template, ready replicas); a kind's
module overrides what differs, over its record in ``vglobal.model.kinds``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from vglobal.agent.kube.bodies import JobRef, owner_reference
from vglobal.agent.kube.records import JOB_UID_LABEL, ROLE_LABEL
from vglobal.model.kinds import WorkloadKind

Template = tuple[str, dict[str, Any]]  # (role, pod template)


@dataclass(frozen=True, slots=True)
class Extra:
    """An object written beside a workload's own: where it is created, its path, its body."""

    collection: str
    item: str
    body: dict[str, Any]


def dig(obj: Any, *keys: str) -> Any:
    for k in keys:
        obj = obj.get(k) if isinstance(obj, dict) else None
    return obj


def spec_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


@dataclass(frozen=True, slots=True)
class Workload:
    record: WorkloadKind
    needs: str  # what must be installed in the member cluster for the kind to be served
    builtin: bool = False  # every API server serves it (no CustomResourceDefinition to look for)

    # ---- where it lives in the API

    @property
    def api_version(self) -> str:
        return self.record.api_version

    @property
    def kind(self) -> str:
        return self.record.kind

    @property
    def plural(self) -> str:
        return self.record.plural

    @property
    def group(self) -> str:
        return self.record.group

    @property
    def resource(self) -> str:
        """``<plural>.<group>``, as model/served.py names it."""
        return self.record.resource

    @property
    def crd(self) -> str:
        """Its CustomResourceDefinition ("" for a kind every API server has)."""
        return "" if self.builtin else self.record.resource

    @property
    def api_path(self) -> str:
        return f"/apis/{self.api_version}"

    @property
    def selector(self) -> str:
        """The label selector of the informer over its objects: those the agent wrote."""
        return JOB_UID_LABEL

    @property
    def all_namespaces(self) -> str:
        return f"{self.api_path}/{self.plural}"

    def collection(self, namespace: str) -> str:
        return f"{self.api_path}/namespaces/{quote(namespace, safe='')}/{self.plural}"

    def item(self, namespace: str, name: str) -> str:
        return f"{self.collection(namespace)}/{quote(name, safe='')}"

    # ---- the protocol

    def templates(self, obj: dict[str, Any]) -> list[Template]:
        """(role, pod template) of each template the kind's controller makes pods from, in manifest
        order; the templates are those inside ``obj`` (changing them changes ``obj``)."""
        tmpl = spec_of(obj).get("template")
        return [("main", tmpl)] if isinstance(tmpl, dict) else []

    def roles(self, spec: Mapping[str, Any]) -> list[str]:
        """The roles of the pods a manifest's spec makes, in order."""
        return [role for role, _ in self.templates({"spec": dict(spec)})]

    def roles_of(self, raw: Mapping[str, Any]) -> list[str]:
        """The roles of the pods a manifest makes, in order (most kinds: its spec's)."""
        spec = raw.get("spec")
        return self.roles(spec if isinstance(spec, Mapping) else {})

    def extras(
        self, raw: Mapping[str, Any], ref: JobRef, owner_uid: str, scheduler_name: str
    ) -> list[Extra]:
        """What the agent writes beside the object, after it (a PodGroup's pods): none for most."""
        return []

    def group_of(self, role: str, index: int, raw: Mapping[str, Any]) -> int:
        """The group placed whole that pod ``index`` of ``role`` belongs to (-1: none)."""
        return -1

    def phase(self, obj: Mapping[str, Any]) -> tuple[str, str]:
        """(phase, message) the object's status says: Running when the controller reports it
        ready, Succeeded / Failed when it ended, else Pending."""
        want = spec_of(obj).get("replicas")
        want = 1 if want is None else int(want)
        ready = int((obj.get("status") or {}).get("readyReplicas") or 0)
        return ("Running" if ready >= want else "Pending"), ""

    def scale_patch(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON merge patch that brings the object to a manifest applied anew: its labels and
        annotations (added or changed), and its ``spec.replicas`` where it has them."""
        meta = raw.get("metadata") if isinstance(raw.get("metadata"), Mapping) else {}
        assert isinstance(meta, Mapping)
        patch: dict[str, Any] = {
            "metadata": {
                "labels": dict(meta.get("labels") or {}),
                "annotations": dict(meta.get("annotations") or {}),
            }
        }
        replicas = spec_of(raw).get("replicas")
        if isinstance(replicas, int):
            patch["spec"] = {"replicas": replicas}
        return patch

    def body(
        self, raw: Mapping[str, Any], ref: JobRef, owner_uid: str, scheduler_name: str
    ) -> dict[str, Any]:
        """The object to create: the manifest, owned by the run's owner ConfigMap (so deleting that
        removes everything), labelled with the run, each pod template set to the agent's scheduler."""
        obj = copy.deepcopy(dict(raw))
        obj.pop("status", None)
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        assert isinstance(meta, dict)
        obj["metadata"] = {
            "name": ref.name,
            "namespace": ref.namespace,
            "labels": {**(meta.get("labels") or {}), **ref.labels()},
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [owner_reference(ref, owner_uid)],
        }
        for role, tmpl in self.templates(obj):
            tmeta = tmpl.setdefault("metadata", {})
            tmeta["labels"] = {**(tmeta.get("labels") or {}), **ref.labels(), ROLE_LABEL: role}
            tmpl.setdefault("spec", {})["schedulerName"] = scheduler_name
        return obj


def conditions(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The status's conditions that hold, by type."""
    return {
        str(c.get("type")): c
        for c in status.get("conditions") or []
        if isinstance(c, Mapping) and c.get("status") == "True"
    }
