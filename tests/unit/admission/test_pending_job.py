"""A waiting job built from its facts (admission/inputs.py ``pending_job``) sets its slots directly,
not through the dataclass's __init__: it must equal the job that __init__ builds, field by field."""

from __future__ import annotations

import dataclasses

import pytest

from vglobal.admission.inputs import JobFacts, pending_job
from vglobal.admission.snapshot import PendingJob


def _facts() -> JobFacts:
    # A distinct value in every field, so a field set from the wrong source shows.
    values = {f.name: f"<{f.name}>" for f in dataclasses.fields(JobFacts)}
    values.update(priority=7, created=11.0)
    return JobFacts(**values)  # type: ignore[arg-type]


def test_every_field_comes_from_its_fact_as_the_dataclass_would_set_it() -> None:
    f = _facts()
    got = pending_job(f, waiting_since=42.0, excluded={"c1": 200.0, "c2": 50.0}, now=100.0)
    want = PendingJob(
        uid=f.uid,
        name=f.name,
        namespace=f.namespace,
        queue=f.queue,
        priority=f.priority,
        created=f.created,
        waiting_since=42.0,
        request=f.min_request,
        gang=f.gang,
        allowed_clusters=f.allowed,
        cluster_selector=f.selector,
        excluded_clusters=frozenset({"c1"}),  # c2's exclusion ended before now
        network_topology=f.topology,
        preemption_policy=f.preemption_policy,
        group=f.group,
        workload=f.workload,
        partitions=f.partitions,
        gpu_hints=f.gpu_hints,
        preferred_clusters=f.preferred,
        prefs=f.prefs,
        anti_affinity=f.anti_affinity,
        tasks=f.tasks,
        task_labels=f.template_labels,
    )
    for field in dataclasses.fields(PendingJob):
        assert getattr(got, field.name) == getattr(want, field.name), field.name
    assert got == want


def test_the_job_built_stays_frozen() -> None:
    got = pending_job(_facts(), waiting_since=0.0, excluded=None, now=0.0)
    assert got.excluded_clusters == frozenset()
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.queue = "other"  # type: ignore[misc]
