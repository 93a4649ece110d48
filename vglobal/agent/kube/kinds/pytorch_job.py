"""PyTorchJob: its Master and Worker templates (``replica_specs.py``)."""

from __future__ import annotations

from vglobal.agent.kube.kinds.replica_specs import ReplicaSpecs
from vglobal.model.kinds import pytorch_job

ADAPTER = ReplicaSpecs(
    pytorch_job.KIND,
    "Kubeflow's training operator v1 (kubeflow.org/v1 PyTorchJob)",
    field="pytorchReplicaSpecs",
    types=pytorch_job.REPLICA_TYPES,
)
