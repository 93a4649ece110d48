"""Invariants over random job mixes on the sim backend: nodes are never over-committed, a gang
is all or nothing, and the same input gives the same outcome."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from vglobal.agent.backends.sim import SimBackend
from vglobal.agent.backends.sim_cluster import parse_sim_cluster
from vglobal.agent.runtime import ClusterRuntime
from vglobal.clock import VirtualClock
from vglobal.model.job import parse_job

CLUSTER = {
    "apiVersion": "vglobal.io/v1alpha1",
    "kind": "SimCluster",
    "metadata": {"name": "p"},
    "spec": {
        "nodeGroups": [{"name": "n", "count": 3, "allocatable": {"cpu": "8", "memory": "8Gi", "pods": "4"}}]
    },
}

job_shapes = st.lists(
    st.tuples(
        st.integers(1, 4),  # replicas
        st.integers(1, 8),  # cpu per pod
        st.integers(1, 30),  # duration seconds
        st.sampled_from([0, 0, 1]),  # exit code
    ),
    min_size=1,
    max_size=6,
)


def doc(i: int, replicas: int, cpu: int, duration: int, code: int) -> dict[str, Any]:
    annotations = {"vglobal.io/sim-duration": f"{duration}s", "vglobal.io/sim-exit-code": str(code)}
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": str(cpu), "memory": "1Gi"}}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": f"j{i}", "annotations": annotations},
        "spec": {
            "policies": [{"event": "PodFailed", "action": "RestartJob"}],
            "maxRetry": 2,
            "tasks": [{"name": "w", "replicas": replicas, "template": {"spec": {"containers": [container]}}}],
        },
    }


def simulate(shapes: list[tuple[int, int, int, int]]) -> list[tuple[str, int, tuple[Any, ...]]]:
    clock = VirtualClock()
    backend = SimBackend(parse_sim_cluster(CLUSTER))
    rt = ClusterRuntime(backend, clock)
    for i, shape in enumerate(shapes):
        rt.controller.start(f"u{i}", 1, parse_job(doc(i, *shape)))
    for _ in range(500):
        rt.step()
        for free in backend.free().values():
            assert all(v >= 0 for v in free.values()), free
        for run in rt.runs.values():
            if not run.finished:  # RestartJob restarts whole gangs, so partial gangs never exist
                placed = sum(1 for s in run.status.values() if s.node is not None)
                assert not 0 < placed < run.job.min_available, run.placements()
        nxt = rt.next_event_time()
        if nxt is None:
            break
        clock.advance_to(nxt)
    return [(str(r.phase), r.retry_count, tuple(r.placements())) for r in rt.runs.values()]


@settings(max_examples=25, deadline=None)
@given(job_shapes)
def test_no_overcommit_and_gangs_all_or_nothing(shapes: list[tuple[int, int, int, int]]) -> None:
    outcome = simulate(shapes)
    for phase, _, _ in outcome:
        # every pod ends (finite durations), so every job ends or waits for a gang that never fits
        assert phase in ("Completed", "Failed", "Pending")


@settings(max_examples=10, deadline=None)
@given(job_shapes)
def test_deterministic(shapes: list[tuple[int, int, int, int]]) -> None:
    assert simulate(shapes) == simulate(shapes)
