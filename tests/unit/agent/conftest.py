"""A small simulated cluster driven by a virtual clock, for job controller and agent tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from vglobal.agent.backends.sim import SimBackend
from vglobal.agent.backends.sim_cluster import parse_sim_cluster
from vglobal.agent.run import JobRun
from vglobal.agent.runtime import ClusterRuntime
from vglobal.clock import VirtualClock
from vglobal.model.job import Job, parse_job


def sim_cluster_doc(nodes: int = 2, cpu: str = "8", gpus: int = 0, name: str = "test") -> dict[str, Any]:
    alloc: dict[str, str] = {"cpu": cpu, "memory": "32Gi", "pods": "110"}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    return {
        "apiVersion": "vglobal.io/v1alpha1",
        "kind": "SimCluster",
        "metadata": {"name": name, "labels": {"region": "test"}},
        "spec": {"nodeGroups": [{"name": "n", "count": nodes, "allocatable": alloc}]},
    }


def task(
    name: str,
    replicas: int = 1,
    *,
    cpu: str = "1",
    duration: str | None = None,
    exit_code: int | None = None,
    policies: list[dict[str, Any]] | None = None,
    min_available: int | None = None,
    env: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    annotations: dict[str, str] = {}
    if duration is not None:
        annotations["vglobal.io/sim-duration"] = duration
    if exit_code is not None:
        annotations["vglobal.io/sim-exit-code"] = str(exit_code)
    container: dict[str, Any] = {"name": name, "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    if env:
        container["env"] = env
    out: dict[str, Any] = {
        "name": name,
        "replicas": replicas,
        "template": {"metadata": {"annotations": annotations}, "spec": {"containers": [container]}},
    }
    if policies is not None:
        out["policies"] = policies
    if min_available is not None:
        out["minAvailable"] = min_available
    return out


def job_doc(*tasks: dict[str, Any], name: str = "job", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {**spec, "tasks": list(tasks)},
    }


@dataclass
class Sim:
    """One cluster runtime on a virtual clock; ``run_until`` jumps from event to event."""

    runtime: ClusterRuntime
    clock: VirtualClock
    backend: SimBackend
    hooks: dict[float, Callable[[Sim], None]] = field(default_factory=dict)

    def start(self, doc: dict[str, Any], uid: str = "uid-1", generation: int = 1) -> JobRun:
        job: Job = parse_job(doc)
        self.runtime.controller.start(uid, generation, job, queue=job.queue)
        self.runtime.step()
        return self.runtime.runs[uid]

    def at(self, when: float, hook: Callable[[Sim], None]) -> None:
        self.hooks[when] = hook

    def run_until(self, until: float) -> None:
        while True:
            self.runtime.step()
            times = [t for t in (self.runtime.next_event_time(), *self.hooks) if t is not None]
            nxt = min(times) if times else None
            if nxt is None or nxt > until:
                self.clock.advance_to(max(until, self.clock.now()))
                self.runtime.step()
                return
            self.clock.advance_to(nxt)
            hook = self.hooks.pop(nxt, None)
            if hook is not None:
                self.runtime.step()
                hook(self)


@pytest.fixture
def make_sim() -> Callable[..., Sim]:
    def make(nodes: int = 2, cpu: str = "8", bind_timeout: float | None = None) -> Sim:
        clock = VirtualClock()
        backend = SimBackend(parse_sim_cluster(sim_cluster_doc(nodes, cpu)))
        return Sim(ClusterRuntime(backend, clock, bind_timeout=bind_timeout), clock, backend)

    return make


@pytest.fixture
def sim(make_sim: Callable[..., Sim]) -> Sim:
    return make_sim()


# helpers used by several test files, exposed as fixtures because tests import in importlib mode
@pytest.fixture
def jobs() -> Any:
    class Builders:
        task = staticmethod(task)
        job = staticmethod(job_doc)

    return Builders
