"""Kubeflow Trainer's TrainJob (``trainer.kubeflow.org/v1alpha1``): one ``node`` task of
``trainer.numNodes`` pods (its runtime's ``mlPolicy.numNodes`` when unset), all one gang as Trainer's
Volcano pod-group policy makes it; each pod the runtime's node template with the trainer's image,
command and ``resourcesPerNode``. Only runtimes the hub knows (``runtimes.py``) give defaults; a
TrainJob on another runtime must say its ``numNodes``. Runs to its end."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from vglobal.model.kinds.reading import Tasks, WorkloadManifest, count, dig, workload_reader
from vglobal.model.kinds.record import WorkloadKind
from vglobal.model.kinds.runtimes import CLUSTER_RUNTIMES, NODE

RUNTIME_KINDS = ("ClusterTrainingRuntime", "TrainingRuntime")


def node_template(runtime: Mapping[str, Any] | None, trainer: Mapping[str, Any]) -> dict[str, Any]:
    """The pod template of one node: the runtime's (a bare ``node`` container without one) with the
    trainer's image, command, args, env and resources on its ``node`` container."""
    template: dict[str, Any] = {"spec": {"containers": [{"name": NODE}]}}
    for rj in dig(runtime, "template", "spec", "replicatedJobs") or []:
        if isinstance(rj, Mapping) and rj.get("name") == NODE:
            found = dig(rj, "template", "spec", "template")
            if isinstance(found, Mapping):
                template = copy.deepcopy(dict(found))
    containers = dig(template, "spec", "containers") or []
    node = next((c for c in containers if isinstance(c, dict) and c.get("name") == NODE), None)
    if node is None:
        node = {"name": NODE}
        template.setdefault("spec", {}).setdefault("containers", []).append(node)
    for field in ("image", "command", "args", "env"):
        if field in trainer:
            node[field] = copy.deepcopy(trainer[field])
    if isinstance(trainer.get("resourcesPerNode"), Mapping):
        node["resources"] = copy.deepcopy(dict(trainer["resourcesPerNode"]))
    return template


def runtime_of(tasks: Tasks, base: str, spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The runtime's spec when the hub knows it; None (said nowhere) when it does not."""
    ref = spec.get("runtimeRef")
    if not isinstance(ref, Mapping) or not ref.get("name"):
        tasks.p.add(f"{base}.runtimeRef.name", "required")
        return None
    kind = ref.get("kind", RUNTIME_KINDS[0])
    if kind not in RUNTIME_KINDS:
        tasks.p.add(f"{base}.runtimeRef.kind", f'"{kind}": one of {", ".join(RUNTIME_KINDS)}')
        return None
    return CLUSTER_RUNTIMES.get(str(ref["name"])) if kind == RUNTIME_KINDS[0] else None


def _read(tasks: Tasks, base: str, spec: Mapping[str, Any], annotations: Mapping[str, str]) -> None:
    runtime = runtime_of(tasks, base, spec)
    if tasks.p:
        return
    trainer = spec.get("trainer") if isinstance(spec.get("trainer"), Mapping) else {}
    assert isinstance(trainer, Mapping)
    name = dig(spec, "runtimeRef", "name")
    if "numNodes" in trainer:
        nodes = count(tasks.p, f"{base}.trainer.numNodes", trainer.get("numNodes"), 1)
        source = f"{base}.trainer.numNodes"
    elif runtime is not None:
        nodes = count(tasks.p, "runtime mlPolicy.numNodes", dig(runtime, "mlPolicy", "numNodes"), 1)
        source = f"mlPolicy.numNodes of the {name} runtime"
    else:
        tasks.p.add(
            f"{base}.trainer.numNodes",
            f'required: the hub does not know the runtime "{name}" (it knows {", ".join(CLUSTER_RUNTIMES)})',
        )
        return
    tasks.add(NODE, f"{base}.trainer", node_template(runtime, trainer), nodes, nodes, gang_from=source)


KIND = WorkloadKind(
    "trainer.kubeflow.org/v1alpha1",
    "TrainJob",
    "trainjobs",
    "trainjob.trainer.kubeflow.org",
    workload_reader(_read),
    WorkloadManifest,
    order=19,
)
