"""The sim backend's checkpoints: a running job with vglobal.io/checkpoint-interval saves its work
every interval of its run, and its status names the last such time (on the backend's clock, which
wakes for it); a job that declares none never reports one."""

from __future__ import annotations

from typing import Any

from tests.unit.agent.test_no_stall import cluster, doc
from vglobal.agent import report
from vglobal.agent.backends.sim import SimBackend
from vglobal.agent.backends.sim_cluster import parse_sim_cluster
from vglobal.agent.runtime import ClusterRuntime
from vglobal.clock import VirtualClock
from vglobal.model.job import parse_job


def _job(i: int, interval: str | None) -> dict[str, Any]:
    d = doc(i, 2, 2, None)
    if interval:
        d["metadata"]["annotations"]["vglobal.io/checkpoint-interval"] = interval
    return d


def test_a_job_with_a_checkpoint_interval_reports_the_last_one_of_its_run() -> None:
    clock = VirtualClock()
    backend = SimBackend(parse_sim_cluster(cluster()))
    rt = ClusterRuntime(backend, clock)
    rt.controller.start("ck", 1, parse_job(_job(0, "10m")))
    rt.controller.start("no", 1, parse_job(_job(1, None)))
    rt.step()
    started = clock.now()
    assert rt.runs["ck"].checkpointed is None
    assert backend.next_event_time() == started + 600  # the clock wakes for the checkpoint
    clock.advance_to(started + 1500)  # two intervals missed: the last one counts
    rt.step()
    assert rt.runs["ck"].checkpointed == started + 1200
    assert rt.runs["no"].checkpointed is None
    sent = report.job_status(rt.runs["ck"], [])
    assert sent.status.checkpointed_at == started + 1200
    assert report.job_status(rt.runs["no"], []).status.checkpointed_at == 0.0
