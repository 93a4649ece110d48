"""A reported checkpoint time is checked like an event's (a bad one refused naming the field); a
workload's own annotation is read leniently (a bad one is no checkpoint, not the agent's error)."""

from __future__ import annotations

import pytest

from vglobal.agent.kube.records import pod_record, rfc3339
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.hub.agents.check import check_message
from vglobal.hub.errors import InvalidArgument


def _status(at: float) -> pb.AgentMessage:
    return pb.AgentMessage(status=pb.JobStatus(job_uid="u", generation=1, phase="Running", checkpointed_at=at))


def test_a_reported_checkpoint_time_is_checked() -> None:
    assert check_message(_status(0.0)) == "status"
    assert check_message(_status(1_800_000_000.5)) == "status"
    for bad in (-1.0, float("nan"), float("inf"), 1e12):
        with pytest.raises(InvalidArgument, match=r"status\.checkpointed_at: must be epoch seconds"):
            check_message(_status(bad))


def test_a_pods_checkpoint_annotation_is_read_as_rfc3339() -> None:
    assert rfc3339("2026-01-02T15:04:05Z") == 1767366245.0
    assert rfc3339("2026-01-02T16:04:05.5+01:00") == 1767366245.5
    assert rfc3339("yesterday") is None and rfc3339("") is None and rfc3339(None) is None
    pod = {"metadata": {"name": "p", "annotations": {"vglobal.io/checkpointed-at": "2026-01-02T15:04:05Z"}}}
    assert pod_record(pod).checkpointed == 1767366245.0
    assert pod_record({"metadata": {"name": "p"}}).checkpointed is None


def test_a_reported_task_count_out_of_range_is_refused_naming_it() -> None:
    def status(**counts: int) -> pb.AgentMessage:
        tasks = [pb.TaskStatus(name="main", replicas=1), pb.TaskStatus(name="side", **counts)]
        return pb.AgentMessage(status=pb.JobStatus(job_uid="u", generation=1, phase="Running", tasks=tasks))

    assert check_message(status(replicas=2, running=2**31 - 1)) == "status"
    with pytest.raises(InvalidArgument) as err:
        check_message(status(replicas=2, pending=-1, failed=-3))
    assert str(err.value) == (
        "status.tasks[1].pending: must be between 0 and 2147483647; "
        "status.tasks[1].failed: must be between 0 and 2147483647"
    )
