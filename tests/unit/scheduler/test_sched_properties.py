"""Properties over random clusters: gangs are all-or-nothing, nodes never over-committed, and the
same input (in any order) gives the same output, vectorised or not."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vglobal.model.resources import ResourceVector
from vglobal.scheduler import (
    DEFAULT_AGENT_CONF,
    ClusterSnapshot,
    JobSpec,
    NodeSpec,
    QueueSpec,
    SchedulerConf,
    TaskSpec,
    TaskStatus,
    parse_conf,
    run_cycle,
)

GI = 1024**3
WITH_QUOTAS = parse_conf(
    """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}, {name: binpack}]
"""
)


@st.composite
def clusters(draw: st.DrawFn) -> ClusterSnapshot:
    nodes = tuple(
        NodeSpec(
            f"n{i}",
            ResourceVector(
                {
                    "cpu": draw(st.integers(1, 8)) * 1000,
                    "memory": draw(st.integers(1, 16)) * GI,
                    "pods": draw(st.integers(1, 6)),
                    **({"nvidia.com/gpu": 4000} if draw(st.booleans()) else {}),
                }
            ),
        )
        for i in range(draw(st.integers(1, 6)))
    )
    jobs = []
    for j in range(draw(st.integers(1, 6))):
        uid = f"job{j}"
        size = draw(st.integers(1, 5))
        req = {"cpu": draw(st.integers(1, 8)) * 500, "memory": draw(st.integers(1, 8)) * GI // 2}
        if draw(st.booleans()):
            req["nvidia.com/gpu"] = 1000
        tasks = tuple(
            TaskSpec(f"{uid}-w-{k}", f"{uid}-w-{k}", uid, "w", k, ResourceVector(req)) for k in range(size)
        )
        jobs.append(
            JobSpec(
                uid=uid,
                name=uid,
                namespace="default",
                queue=draw(st.sampled_from(["qa", "qb"])),
                priority=draw(st.integers(0, 2)),
                min_available=draw(st.integers(1, size)),
                task_min_available={},
                creation=j,
                tasks=tasks,
                podgroup_phase=draw(st.sampled_from(["Pending", "Inqueue"])),
            )
        )
    return ClusterSnapshot(nodes, tuple(jobs), (QueueSpec("qa", weight=2), QueueSpec("qb")))


CONFS = st.sampled_from([DEFAULT_AGENT_CONF, WITH_QUOTAS])
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(clusters(), CONFS)
def test_gang_is_all_or_nothing(state: ClusterSnapshot, conf: SchedulerConf) -> None:
    result = run_cycle(state, conf)
    for job in state.jobs:
        bound = sum(1 for t in job.tasks if t.uid in result.binds)
        assert bound == 0 or bound >= job.min_available


@SETTINGS
@given(clusters(), CONFS)
def test_no_node_is_over_committed(state: ClusterSnapshot, conf: SchedulerConf) -> None:
    result = run_cycle(state, conf)
    used: dict[str, ResourceVector] = defaultdict(ResourceVector)
    for job in state.jobs:
        for task in job.tasks:
            where = result.binds.get(task.uid) or result.pipelined.get(task.uid)
            if where is not None:
                used[where] = used[where] + task.request + {"pods": 1}
    for spec in state.nodes:
        assert used[spec.name].fits_in(spec.allocatable), spec.name


@SETTINGS
@given(clusters(), CONFS)
def test_same_input_in_any_order_gives_the_same_output(state: ClusterSnapshot, conf: SchedulerConf) -> None:
    first = run_cycle(state, conf)
    shuffled = ClusterSnapshot(state.nodes[::-1], state.jobs[::-1], state.queues[::-1])
    assert run_cycle(shuffled, conf) == first
    assert run_cycle(state, conf, vectorized=False) == first


def test_bound_tasks_count_in_the_phase_next_cycle() -> None:
    """Feeding the binds back as Running tasks makes the PodGroup Running and binds nothing new."""
    req = ResourceVector({"cpu": 1000, "memory": GI})
    tasks = tuple(TaskSpec(f"j-w-{k}", f"j-w-{k}", "j", "w", k, req) for k in range(2))
    job = JobSpec("j", "j", "default", "qa", 0, 2, {"w": 2}, 0, tasks, podgroup_phase="Inqueue")
    state = ClusterSnapshot(
        (NodeSpec("n0", ResourceVector({"cpu": 4000, "memory": 8 * GI, "pods": 10})),),
        (job,),
        (QueueSpec("qa"),),
    )
    first = run_cycle(state, DEFAULT_AGENT_CONF)
    assert set(first.binds) == {"j-w-0", "j-w-1"}
    running = tuple(
        TaskSpec(t.uid, t.name, "j", "w", t.index, req, status=TaskStatus.Running, node=first.binds[t.uid])
        for t in tasks
    )
    again = run_cycle(
        ClusterSnapshot(
            state.nodes,
            (JobSpec("j", "j", "default", "qa", 0, 2, {"w": 2}, 0, running, podgroup_phase="Inqueue"),),
            state.queues,
        )
    )
    assert again.binds == {}
    assert again.podgroup_phases["j"] == "Running"


ALL_ACTIONS = parse_conf(
    """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}, {name: binpack}]
"""
)


@st.composite
def busy_clusters(draw: st.DrawFn) -> ClusterSnapshot:
    """Like ``clusters`` but some jobs already run: their tasks are packed first-fit on the nodes."""
    base = draw(clusters())
    free = {n.name: dict(n.allocatable) for n in base.nodes}
    jobs = []
    for job in base.jobs:
        if not draw(st.booleans()):
            jobs.append(job)
            continue
        placed = []
        for task in job.tasks:
            need = dict(task.request + {"pods": 1})
            where = next((n for n, f in free.items() if all(f.get(k, 0) >= v for k, v in need.items())), None)
            if where is None:
                placed.append(task)
                continue
            for k, v in need.items():
                free[where][k] -= v
            placed.append(
                TaskSpec(
                    task.uid,
                    task.name,
                    task.job_uid,
                    task.role,
                    task.index,
                    task.request,
                    status=TaskStatus.Running,
                    node=where,
                )
            )
        running = sum(1 for t in placed if t.status == TaskStatus.Running)
        jobs.append(
            JobSpec(
                job.uid,
                job.name,
                job.namespace,
                job.queue,
                job.priority,
                min(job.min_available, running or 1),
                {},
                job.creation,
                tuple(placed),
                podgroup_phase="Running" if running else "Inqueue",
            )
        )
    return ClusterSnapshot(base.nodes, tuple(jobs), base.queues)


@SETTINGS
@given(busy_clusters())
def test_evictions_binds_and_pipelines_never_over_commit(state: ClusterSnapshot) -> None:
    result = run_cycle(state, ALL_ACTIONS)
    evicted = set(result.evictions)
    now: dict[str, ResourceVector] = defaultdict(ResourceVector)
    later: dict[str, ResourceVector] = defaultdict(ResourceVector)
    for job in state.jobs:
        for task in job.tasks:
            need = task.request + {"pods": 1}
            if task.status == TaskStatus.Running and task.node:
                assert task.uid not in result.binds
                # binds use idle space only: an evicted task still holds its share until it is gone
                now[task.node] = now[task.node] + need
                if task.uid not in evicted:
                    later[task.node] = later[task.node] + need
            elif task.uid in result.binds:
                where = result.binds[task.uid]
                now[where] = now[where] + need
                later[where] = later[where] + need
            elif task.uid in result.pipelined:
                where = result.pipelined[task.uid]
                later[where] = later[where] + need
    for spec in state.nodes:
        assert now[spec.name].fits_in(spec.allocatable)
        assert later[spec.name].fits_in(spec.allocatable)
    assert run_cycle(state, ALL_ACTIONS) == result
