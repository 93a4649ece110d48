"""Kubeflow's PyTorchJob (``kubeflow.org/v1``): ``master`` and ``worker`` tasks, all their replicas
one gang unless the run policy says fewer (``replica_specs.py``); runs to its end."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vglobal.model.kinds.reading import Tasks, WorkloadManifest, workload_reader
from vglobal.model.kinds.record import WorkloadKind
from vglobal.model.kinds.replica_specs import read_replica_specs

REPLICA_TYPES = ("Master", "Worker")


def _read(tasks: Tasks, base: str, spec: Mapping[str, Any], annotations: Mapping[str, str]) -> None:
    read_replica_specs(tasks, base, spec, "pytorchReplicaSpecs", REPLICA_TYPES)


KIND = WorkloadKind(
    "kubeflow.org/v1",
    "PyTorchJob",
    "pytorchjobs",
    "pytorchjob.kubeflow.org",
    workload_reader(_read),
    WorkloadManifest,
    order=17,
)
