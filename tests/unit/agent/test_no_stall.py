"""An agent never stalls: with free room and a job that fits it, the job is placed within two
sessions, whatever came before (jobs placed, jobs finished), also with proportion or capacity in
the conf, which count a PodGroup's phase."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vglobal.agent.backends.sim import SimBackend
from vglobal.agent.backends.sim_cluster import parse_sim_cluster
from vglobal.agent.runtime import ClusterRuntime
from vglobal.clock import VirtualClock
from vglobal.model.job import parse_job
from vglobal.scheduler import DEFAULT_AGENT_CONF, SchedulerConf, parse_conf

CPU_PER_NODE = 8
NODES = 2


def cluster() -> dict[str, Any]:
    alloc = {"cpu": str(CPU_PER_NODE), "memory": "64Gi", "pods": "110"}
    return {
        "apiVersion": "vglobal.io/v1alpha1",
        "kind": "SimCluster",
        "metadata": {"name": "s"},
        "spec": {"nodeGroups": [{"name": "n", "count": NODES, "allocatable": alloc}]},
    }


def doc(i: int, replicas: int, min_available: int, duration: int | None) -> dict[str, Any]:
    annotations = {"vglobal.io/sim-duration": f"{duration}s"} if duration else {}
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": f"j{i}", "annotations": annotations},
        "spec": {
            "queue": "q",
            "minAvailable": min_available,
            "tasks": [{"name": "w", "replicas": replicas, "template": {"spec": {"containers": [container]}}}],
        },
    }


def conf(plugin: str) -> SchedulerConf:
    if not plugin:
        return DEFAULT_AGENT_CONF
    return parse_conf(
        'actions: "enqueue, allocate, backfill"\n'
        "tiers:\n- plugins: [{name: priority}, {name: gang}, {name: conformance}]\n"
        f"- plugins: [{{name: drf}}, {{name: predicates}}, {{name: {plugin}}}, {{name: nodeorder}}]\n"
    )


# (replicas, minAvailable as a fraction of them, seconds it runs or None for ever)
shapes = st.lists(
    st.tuples(st.integers(1, 6), st.integers(0, 6), st.sampled_from([None, None, 5, 20])),
    min_size=2,
    max_size=6,
)


def placed(rt: ClusterRuntime, uid: str) -> int:
    return sum(1 for s in rt.runs[uid].status.values() if s.node)


def run_jobs(plugin: str, jobs: list[tuple[int, int, int | None]]) -> None:
    clock = VirtualClock()
    backend = SimBackend(parse_sim_cluster(cluster()))
    rt = ClusterRuntime(backend, clock, conf(plugin))
    for i, (replicas, frac, duration) in enumerate(jobs):
        free = sum(v["cpu"] for v in backend.free().values()) // 1000
        if replicas > free:
            clock.advance_to(clock.now() + 30)  # the timed jobs end, then try again
            rt.step()
            free = sum(v["cpu"] for v in backend.free().values()) // 1000
            if replicas > free:
                continue
        uid = f"u{i}"
        rt.controller.start(uid, 1, parse_job(doc(i, replicas, min(frac, replicas), duration)))
        rt.step()
        rt.step()  # two sessions at most
        assert placed(rt, uid) == replicas, (plugin, i, rt.runs[uid].message)


@pytest.mark.parametrize("plugin", ["proportion", "capacity", ""])
@settings(max_examples=25, deadline=None)
@given(jobs=shapes)
def test_a_job_that_fits_free_room_is_placed_within_two_sessions(
    plugin: str, jobs: list[tuple[int, int, int | None]]
) -> None:
    run_jobs(plugin, jobs)


@pytest.mark.parametrize("plugin", ["proportion", "capacity"])
def test_the_job_after_a_placed_gang_is_placed(plugin: str) -> None:
    """The issue's case: a's pods bind, nothing waits, b comes: b was refused for ever."""
    run_jobs(plugin, [(8, 8, None), (8, 8, None)])
