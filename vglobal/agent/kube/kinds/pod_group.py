"""Volcano's PodGroup with its plain pods: the agent writes the PodGroup (without the pods it
carries) and then each pod, labelled with the run and its task as role, owned by the run's owner
ConfigMap and set to the agent's scheduler, which binds them as the gang it planned. No controller
makes pods here; the run ends as its pods do (the PodGroup's phase is the Volcano scheduler's,
which does not schedule these pods), ``Completed`` if one set it."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.agent.kube import paths
from vglobal.agent.kube.bodies import JobRef, owner_reference
from vglobal.agent.kube.kinds.base import Extra, Template, Workload
from vglobal.agent.kube.records import ROLE_LABEL
from vglobal.model.kinds import pod_group


def _annotations(raw: Mapping[str, Any]) -> dict[str, str]:
    meta = raw.get("metadata")
    got = meta.get("annotations") if isinstance(meta, Mapping) else None
    return {str(k): str(v) for k, v in (got or {}).items()}


@dataclass(frozen=True, slots=True)
class PodGroup(Workload):
    def templates(self, obj: dict[str, Any]) -> list[Template]:
        return []  # its pods are written one by one (``extras``)

    def roles_of(self, raw: Mapping[str, Any]) -> list[str]:
        return list(dict.fromkeys(pod_group.task_names(pod_group.carried_pods(None, _annotations(raw)))))

    def body(
        self, raw: Mapping[str, Any], ref: JobRef, owner_uid: str, scheduler_name: str
    ) -> dict[str, Any]:
        obj = Workload.body(self, raw, ref, owner_uid, scheduler_name)
        obj["metadata"]["annotations"].pop(pod_group.PODS_ANNOTATION, None)
        return obj

    def extras(
        self, raw: Mapping[str, Any], ref: JobRef, owner_uid: str, scheduler_name: str
    ) -> list[Extra]:
        pods = pod_group.carried_pods(None, _annotations(raw))
        out = []
        for pod, role in zip(pods, pod_group.task_names(pods), strict=True):
            body = copy.deepcopy(dict(pod))
            body.pop("status", None)
            meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
            assert isinstance(meta, dict)
            name = str(meta.get("name") or "")
            body["metadata"] = {
                "name": name,
                "namespace": ref.namespace,
                "labels": {**(meta.get("labels") or {}), **ref.labels(), ROLE_LABEL: role},
                "annotations": {**(meta.get("annotations") or {}), pod_group.GROUP_NAME: ref.name},
                "ownerReferences": [owner_reference(ref, owner_uid)],
            }
            spec = body.setdefault("spec", {})
            spec["schedulerName"] = scheduler_name
            spec.pop("nodeName", None)
            out.append(Extra(paths.pods(ref.namespace), paths.pod(ref.namespace, name), body))
        return out

    def phase(self, obj: Mapping[str, Any]) -> tuple[str, str]:
        status = obj.get("status") or {}
        return ("Succeeded" if status.get("phase") == "Completed" else "Pending"), ""


ADAPTER = PodGroup(pod_group.KIND, "Volcano's PodGroup CRD (scheduling.volcano.sh/v1beta1; no controller)")
