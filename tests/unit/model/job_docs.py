"""Building Volcano Job documents for the manifest tests: a valid base job and ways to change it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from vglobal.model.job import Job, parse_job
from vglobal.model.resources import ResourceVector

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "manifests"


def rv(q: dict[str, str]) -> ResourceVector:
    return ResourceVector.from_quantities(q)


def container(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "main", "image": "busybox", "resources": resources}


def base_doc() -> dict[str, Any]:
    """A two-task job of 8 pods: 2 ps (1 cpu) and 6 workers (2 cpu, 1 GPU)."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "team-a"},
        "spec": {
            "tasks": [
                {
                    "name": "ps",
                    "replicas": 2,
                    "template": {"spec": {"containers": [container({"cpu": "1", "memory": "2Gi"})]}},
                },
                {
                    "name": "worker",
                    "replicas": 6,
                    "template": {
                        "spec": {"containers": [container({"cpu": "2"}, {"cpu": "2", "nvidia.com/gpu": "1"})]}
                    },
                },
            ]
        },
    }


def parse(mutate: Callable[[dict[str, Any]], None] | None = None) -> Job:
    doc = base_doc()
    if mutate:
        mutate(doc)
    return parse_job(doc)


def spec(doc: dict[str, Any]) -> dict[str, Any]:
    s: dict[str, Any] = doc["spec"]
    return s


def task(doc: dict[str, Any], i: int) -> dict[str, Any]:
    t: dict[str, Any] = doc["spec"]["tasks"][i]
    return t


def pod(doc: dict[str, Any], i: int) -> dict[str, Any]:
    p: dict[str, Any] = doc["spec"]["tasks"][i]["template"]["spec"]
    return p
