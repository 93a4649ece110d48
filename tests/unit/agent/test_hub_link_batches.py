"""What the agent's stream sends: messages queued together go as one AgentMessage.batch, but only
to a hub that said it takes batches, never with a Register, and in at most MAX_BATCH a message."""

from __future__ import annotations

import queue
import threading

from vglobal.agent import hub_link
from vglobal.agent.hub_link import HubLink
from vglobal.api.v1 import agent_pb2 as pb


def _ack(i: int) -> pb.AgentMessage:
    return pb.AgentMessage(accepted=pb.BindingAccepted(job_uid=f"u{i}", generation=1))


def _sent(queued: list[list[pb.AgentMessage] | None], takes_batches: bool) -> list[pb.AgentMessage]:
    outbox: queue.Queue[list[pb.AgentMessage] | None] = queue.Queue()
    for item in queued:
        outbox.put(item)
    batches = threading.Event()
    if takes_batches:
        batches.set()
    return list(HubLink._requests(outbox, batches))


def test_an_older_hub_gets_every_message_alone() -> None:
    sent = _sent([[_ack(0), _ack(1)], [_ack(2)], None], takes_batches=False)
    assert [m.accepted.job_uid for m in sent] == ["u0", "u1", "u2"]


def test_what_is_queued_goes_as_one_batch_in_order() -> None:
    sent = _sent([[_ack(0), _ack(1)], [_ack(2)], None, [_ack(3)]], takes_batches=True)
    assert len(sent) == 1  # and nothing after the end
    assert [m.accepted.job_uid for m in sent[0].batch.messages] == ["u0", "u1", "u2"]


def test_a_register_goes_alone_and_batches_are_bounded() -> None:
    register = pb.AgentMessage(register=pb.Register(cluster="east"))
    sent = _sent([[register, _ack(0)], None], takes_batches=True)
    assert [m.WhichOneof("body") for m in sent] == ["register", "accepted"]
    many = [_ack(i) for i in range(hub_link.MAX_BATCH + 1)]
    sent = _sent([many, None], takes_batches=True)
    assert [len(m.batch.messages) for m in sent[:1]] == [hub_link.MAX_BATCH]
    assert sent[1].accepted.job_uid == f"u{hub_link.MAX_BATCH}"
