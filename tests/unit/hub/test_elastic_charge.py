"""What the dispatcher charges a queue for a job: the gang's minResources while pending or not
placed, what its placed pods hold once they run (at least the gang's minResources)."""

from __future__ import annotations

from datetime import UTC, datetime

from vglobal.admission.inputs import JobFacts, Shared
from vglobal.hub.dispatch.cache import pending
from vglobal.hub.dispatch.facts import facts_of
from vglobal.model.forms import Gang, Placement, PodShape
from vglobal.model.resources import ResourceVector
from vglobal.store.repo.jobs import JobStatic
from vglobal.store.repo.live import LiveBinding

POD = ResourceVector({"cpu": 1000})


def facts() -> JobFacts:
    static = JobStatic(
        uid="u1",
        namespace="ns",
        name="elastic",
        queue="q1",
        priority=0,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        request={"cpu": 4000},
        gang=Gang((PodShape(POD, 2),)),
        pod_requests={"w": {"cpu": 1000}},
        placement=Placement(),
    )
    return facts_of(static, Shared())


def test_pending_elastic_job_asks_admission_for_its_gang_only() -> None:
    f = facts()
    assert f.request == ResourceVector({"cpu": 4000})  # describe shows the whole job
    assert f.min_request == ResourceVector({"cpu": 2000})
    binding = LiveBinding("u1", "Suspended", None, 5.0, None, None, None)
    assert pending(f, binding, 10.0).request == ResourceVector({"cpu": 2000})


def test_running_charge_is_what_runs_and_at_least_the_gang() -> None:
    f = facts()
    one = {"n1": POD}
    assert f.charged(one) == (ResourceVector({"cpu": 2000}), POD)  # gang not all placed: reserved
    three = {"n1": POD.scale(2), "n2": POD}
    assert f.charged(three) == (ResourceVector({"cpu": 3000}), ResourceVector({"cpu": 3000}))
