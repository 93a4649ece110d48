"""The Kubeflow Trainer runtimes the hub knows by name, as Trainer's manifests install them
(``manifests/base/runtimes/torch_distributed.yaml``): a TrainJob names its runtime and does not
carry it, so its gang is read from the runtime's ``mlPolicy.numNodes`` and its pod template from the
runtime's ``node`` replicated job, unless the TrainJob's ``trainer`` overrides them. The member
cluster must hold the same runtime (Trainer's chart installs it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NODE = "node"  # the replicated job (and container) that runs the trainer

TORCH_DISTRIBUTED: Mapping[str, Any] = {
    "mlPolicy": {"numNodes": 1, "torch": {}},
    "template": {
        "spec": {
            "replicatedJobs": [
                {
                    "name": NODE,
                    "template": {
                        "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                        "spec": {
                            "template": {
                                "spec": {
                                    "containers": [
                                        {
                                            "name": NODE,
                                            "image": "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
                                        }
                                    ]
                                }
                            }
                        },
                    },
                }
            ]
        }
    },
}

# ClusterTrainingRuntime name -> its spec
CLUSTER_RUNTIMES: Mapping[str, Mapping[str, Any]] = {"torch-distributed": TORCH_DISTRIBUTED}
