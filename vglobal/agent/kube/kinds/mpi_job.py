"""MPIJob: its Launcher and Worker templates (``replica_specs.py``)."""

from __future__ import annotations

from vglobal.agent.kube.kinds.replica_specs import ReplicaSpecs
from vglobal.model.kinds import mpi_job

ADAPTER = ReplicaSpecs(
    mpi_job.KIND,
    "Kubeflow's MPI operator v2 (kubeflow.org/v2beta1 MPIJob)",
    field="mpiReplicaSpecs",
    types=mpi_job.REPLICA_TYPES,
)
