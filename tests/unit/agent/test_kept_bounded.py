"""What the agent keeps per job returns to its bound once jobs end, however many ran: finished
runs (with their pods) to the newest kept, the generations and rejections of runs gone to the newest
remembered. A soak's agent grew with every job it ever ran (virtual clock, sim cluster)."""

from __future__ import annotations

import json
from typing import Any

from vglobal.agent.core import AgentCore
from vglobal.api.v1 import agent_pb2 as pb

KEEP, REMEMBER, JOBS = 5, 12, 60


def dispatch(doc: dict[str, Any], uid: str, gen: int = 1) -> pb.HubMessage:
    return pb.HubMessage(
        dispatch=pb.Dispatch(job_uid=uid, generation=gen, manifest=json.dumps(doc), queue="default")
    )


def test_per_job_state_returns_to_its_bound_after_many_jobs(make_sim: Any, jobs: Any) -> None:
    sim = make_sim(nodes=2, bind_timeout=60.0)
    core = AgentCore(sim.runtime, retention=600.0, keep_finished=KEEP)
    core.kept.remembered = REMEMBER
    core.on_connected()
    core.on_message(pb.HubMessage(registered=pb.Registered(heartbeat_interval_seconds=5.0)))
    done = jobs.job(jobs.task("w", 1, duration="1s"))
    for i in range(JOBS):
        uid = f"u{i}"
        doc = jobs.job(jobs.task("w", 1, cpu="100")) if i % 10 == 9 else done  # 6 never fit: rejected
        core.on_message(dispatch({**doc, "metadata": {"name": f"j{i}", "namespace": "default"}}, uid))
        core.tick()
        sim.clock.advance(2)
        core.tick()
    sim.clock.advance(61)  # bind timeout of the last job that cannot fit
    core.tick()
    core.tick()
    assert not any(not r.finished for r in core.runs.values())  # nothing live
    assert len(core.runs) == KEEP  # the newest finished runs, though far within the retention
    assert set(core.runs) == {f"u{i}" for i in range(JOBS - 2, JOBS - 2 - KEEP, -1)}
    assert len(sim.backend.pods()) == KEEP  # their pods only
    assert set(core.latest_generation) == set(core.runs) | {u for u, _ in core.kept.gone}
    assert len(core.latest_generation) <= KEEP + REMEMBER
    assert len(core.rejected) <= REMEMBER and ("u59", 1) in core.rejected
    assert len(core.kept.finished) == KEEP
    # A run gone but remembered is not run again when its dispatch comes again.
    assert core.on_message(dispatch(done, "u52")) == []
    assert "u52" not in core.runs


def test_a_run_reported_again_is_kept_until_sent(make_sim: Any, jobs: Any) -> None:
    sim = make_sim(nodes=2)
    core = AgentCore(sim.runtime, retention=10.0, keep_finished=KEEP)
    core.on_connected()
    core.on_message(pb.HubMessage(registered=pb.Registered(heartbeat_interval_seconds=5.0)))
    core.on_message(dispatch(jobs.job(jobs.task("w", 1, duration="1s")), "u1"))
    core.tick()
    sim.clock.advance(2)
    core.tick()
    assert core.runs["u1"].finished
    core.on_disconnected()
    core.on_message(pb.HubMessage(cancel=pb.Cancel(job_uid="u1", generation=1)))  # a status to send
    sim.clock.advance(20)
    core.tick()
    assert "u1" in core.runs  # past its retention, but its last status was not sent
    core.on_connected()
    core.on_message(pb.HubMessage(registered=pb.Registered(heartbeat_interval_seconds=5.0)))
    core.tick()
    assert "u1" not in core.runs
