"""``run_agent`` against a tiny in-process AgentService: register, dispatch, reconnect, cancel."""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml

from vglobal.agent.daemon import run_agent
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.api.v1 import agent_pb2_grpc as pb_grpc

WAIT = 10.0


class FakeHub(pb_grpc.AgentServiceServicer):
    """Records what the agent sends; the test pushes what the hub says."""

    def __init__(self) -> None:
        self.received: queue.Queue[pb.AgentMessage] = queue.Queue()
        self.outgoing: queue.Queue[pb.HubMessage | None] = queue.Queue()
        self.streams = 0
        # Cleared while the test takes the hub down: an agent reconnecting in that gap is
        # refused rather than landing on the server about to stop.
        self.accepting = threading.Event()
        self.accepting.set()

    def Connect(self, request_iterator: Iterator[pb.AgentMessage], context: Any) -> Iterator[pb.HubMessage]:
        if not self.accepting.is_set():
            context.abort(grpc.StatusCode.UNAVAILABLE, "hub going away")
        self.streams += 1

        def pump() -> None:
            try:
                for msg in request_iterator:
                    self.received.put(msg)
            except grpc.RpcError:
                pass

        threading.Thread(target=pump, daemon=True).start()
        while context.is_active():
            try:
                msg = self.outgoing.get(timeout=0.05)
            except queue.Empty:
                continue
            if msg is None:
                return
            yield msg

    def expect(self, kind: str, pred: Any = lambda m: True) -> pb.AgentMessage:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            try:
                msg = self.received.get(timeout=0.1)
            except queue.Empty:
                continue
            if msg.WhichOneof("body") == kind and pred(getattr(msg, kind)):
                return msg
        raise AssertionError(f"no {kind} message from the agent within {WAIT}s")


def serve(hub: FakeHub, port: int = 0) -> tuple[grpc.Server, int]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_AgentServiceServicer_to_server(hub, server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    return server, bound


JOB = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "train", "namespace": "default"},
    "spec": {
        "tasks": [
            {
                "name": "ps",
                "replicas": 1,
                "template": {
                    "spec": {
                        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]
                    }
                },
            },
            {
                "name": "worker",
                "replicas": 2,
                "template": {
                    "spec": {
                        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}]
                    }
                },
            },
        ]
    },
}


@pytest.fixture
def sim_file(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "vglobal.io/v1alpha1",
                "kind": "SimCluster",
                "metadata": {"name": "east", "labels": {"region": "east"}},
                "spec": {
                    "nodeGroups": [{"name": "n", "count": 2, "allocatable": {"cpu": "8", "memory": "16Gi"}}]
                },
            }
        )
    )
    return path


def dispatch(gen: int, uid: str = "job-1") -> pb.HubMessage:
    return pb.HubMessage(
        dispatch=pb.Dispatch(job_uid=uid, generation=gen, manifest=json.dumps(JOB), queue="default")
    )


def test_agent_protocol_end_to_end(sim_file: Path) -> None:
    hub = FakeHub()
    server, port = serve(hub)
    stop = threading.Event()
    agent = threading.Thread(
        target=run_agent,
        kwargs={
            "hub": f"127.0.0.1:{port}",
            "sim_file": sim_file,
            "name": "east-1",
            "heartbeat_interval": 0.5,
            "cycle_interval": 0.05,
            "stop": stop,
        },
        daemon=True,
    )
    agent.start()
    try:
        reg = hub.expect("register").register
        assert reg.cluster == "east-1" and len(reg.nodes) == 2 and list(reg.jobs) == []
        hub.outgoing.put(pb.HubMessage(registered=pb.Registered(heartbeat_interval_seconds=5.0)))
        hub.expect("heartbeat", lambda h: len(h.nodes) == 2)

        hub.outgoing.put(dispatch(1))
        hub.expect("accepted", lambda a: (a.job_uid, a.generation) == ("job-1", 1))
        st = hub.expect("status", lambda s: s.phase == "Running").status
        assert {p.pod for p in st.placements} == {"train-ps-0", "train-worker-0", "train-worker-1"}
        assert all(p.node for p in st.placements)

        hub.outgoing.put(dispatch(1))  # a re-send: acknowledged again, nothing restarted
        hub.expect("accepted")
        again = hub.expect("status")
        assert {(p.pod, p.node) for p in again.status.placements} == {(p.pod, p.node) for p in st.placements}
        assert again.status.retry_count == 0

        hub.outgoing.put(dispatch(0))  # stale: ignored, the job keeps its generation
        hub.accepting.clear()
        hub.outgoing.put(None)  # the hub goes away
        server.stop(0)
        hub.accepting.set()
        server, _ = serve(hub, port)

        reg2 = hub.expect("register").register
        assert [(j.job_uid, j.generation) for j in reg2.jobs] == [("job-1", 1)]
        hub.outgoing.put(pb.HubMessage(registered=pb.Registered(heartbeat_interval_seconds=5.0)))
        resent = hub.expect("status", lambda s: s.job_uid == "job-1")
        assert resent.status.phase == "Running" and resent.status.generation == 1

        hub.outgoing.put(pb.HubMessage(cancel=pb.Cancel(job_uid="job-1", generation=1, reason="deleted")))
        final = hub.expect("status", lambda s: s.phase == "Aborted")
        assert "Cancel" in [e.reason for e in final.status.events]
        assert all(p.phase != "Running" for p in final.status.placements)
    finally:
        stop.set()
        agent.join(10)
        server.stop(0)
    assert not agent.is_alive()
