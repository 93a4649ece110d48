"""The NUL walk over a request that holds zero bytes (an agent's batch always does): the path of
the first string holding NUL, through nested, repeated and oneof messages and map keys."""

from __future__ import annotations

from vglobal.api.v1 import agent_pb2 as pb
from vglobal.hub.request_decode import nul_field


def status(uid: str, message: str = "started", node: str = "n-1") -> pb.AgentMessage:
    return pb.AgentMessage(
        status=pb.JobStatus(
            job_uid=uid,
            generation=1,
            phase="Running",
            placements=[pb.PodPlacement(pod=f"{uid}-0", node=node, phase="Running", task="main")],
            events=[pb.AgentEvent(kind="Normal", reason="Started", message=message, time=1.5)],
        )
    )


def heartbeat(name: str, resource: str) -> pb.AgentMessage:
    free = pb.Units(values={resource: 1000})
    return pb.AgentMessage(heartbeat=pb.Heartbeat(nodes=[pb.NodeFree(name=name, free=free)]))


def batch(*messages: pb.AgentMessage) -> pb.AgentMessage:
    return pb.AgentMessage(batch=pb.AgentBatch(messages=messages))


def test_a_clean_batch_has_no_nul_though_it_holds_zero_bytes() -> None:
    msg = batch(status("a"), heartbeat("n-1", "cpu"), status("b"))
    assert b"\x00" in msg.SerializeToString()
    assert nul_field(msg) is None


def test_the_first_nul_is_named_by_its_path() -> None:
    assert nul_field(batch(status("a"), status("b", message="x\x00y"))) == (
        "batch.messages[1].status.events[0].message"
    )
    # Two NULs: the one in the earlier message, then in the earlier field of it, is named.
    assert nul_field(batch(status("a", node="n\x00"), status("b\x00"))) == (
        "batch.messages[0].status.placements[0].node"
    )
    assert nul_field(status("a\x00", node="n\x00")) == "status.job_uid"
    assert nul_field(heartbeat("n-1", "gpu\x00")) == "heartbeat.nodes[0].free.values['gpu\\x00']"
