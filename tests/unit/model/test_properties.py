"""Properties that must hold for any input, not only the examples."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vglobal.model.job import Job, Task
from vglobal.model.quantity import MAX_UNITS, format_units, to_units
from vglobal.model.resources import ResourceVector


@given(
    st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu", "ephemeral-storage"]),
    st.integers(0, MAX_UNITS),
)
def test_formatting_units_round_trips(resource: str, units: int) -> None:
    assert to_units(resource, format_units(resource, units)) == units


@st.composite
def jobs(draw: st.DrawFn) -> Job:
    tasks = []
    for i in range(draw(st.integers(1, 4))):
        replicas = draw(st.integers(0, 6))
        tasks.append(
            Task(
                name=f"t{i}",
                replicas=replicas,
                min_available=draw(st.integers(0, replicas)),
                pod_request=ResourceVector({"cpu": 1000 * (i + 1)}),
            )
        )
    total = sum(t.replicas for t in tasks)
    return Job(name="j", tasks=tuple(tasks), min_available=draw(st.integers(0, total)))


@given(jobs())
def test_gang_is_exactly_min_available_pods_within_replicas(job: Job) -> None:
    gang = job.gang()
    assert sum(n for _, _, n in gang) == job.min_available
    replicas = {t.name: t.replicas for t in job.tasks}
    assert all(0 < n <= replicas[name] for name, _, n in gang)
    assert job.gang_request().fits_in(job.total_request())
    # Task order is kept.
    order = [t.name for t in job.tasks]
    assert [name for name, _, _ in gang] == sorted((name for name, _, _ in gang), key=order.index)
