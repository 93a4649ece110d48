"""A scripted agent for tests of the hub side of AgentService.Connect: it speaks the real protocol
over a real socket, and lets a test decide every message."""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import time
from collections.abc import Iterator

import grpc

from vglobal.api.v1 import agent_pb2, agent_pb2_grpc


def units(**values: int) -> agent_pb2.Units:
    return agent_pb2.Units(values=values)


class ScriptedAgent:
    def __init__(
        self, target: str, cluster: str, nodes: int = 1, gpus: int = 8, *, channel: grpc.Channel | None = None
    ) -> None:
        """An agent for ``cluster`` at ``target`` (plaintext), or on ``channel`` (TLS, credentials)."""
        self.cluster = cluster
        self.channel = channel or grpc.insecure_channel(target)
        self.error: grpc.RpcError | None = None  # how the hub ended the stream, if it did
        self.out: queue.Queue[agent_pb2.AgentMessage | None] = queue.Queue()
        self.received: queue.Queue[agent_pb2.HubMessage] = queue.Queue()
        self.history: list[agent_pb2.HubMessage] = []  # everything received, in order
        self.nodes = [
            agent_pb2.NodeInventory(
                name=f"{cluster}-{i}",
                labels={"kubernetes.io/hostname": f"{cluster}-{i}"},
                allocatable=units(cpu=64000, memory=2**38, pods=110, **{"nvidia.com/gpu": gpus * 1000}),
                free=units(cpu=64000, memory=2**38, pods=110, **{"nvidia.com/gpu": gpus * 1000}),
            )
            for i in range(nodes)
        ]
        self._thread: threading.Thread | None = None
        self._held: list[agent_pb2.AgentMessage] | None = None  # see ``batched``

    def _requests(self) -> Iterator[agent_pb2.AgentMessage]:
        while True:
            msg = self.out.get()
            if msg is None:
                return
            yield msg

    def connect(  # type: ignore[assignment]
        self, jobs: list[tuple[str, int]] = (), *, takes_batches: bool = False
    ) -> agent_pb2.HubMessage:
        """Register; ``takes_batches``: say it reads HubMessage.batch (``expect`` looks inside)."""
        stub = agent_pb2_grpc.AgentServiceStub(self.channel)
        self.out.put(
            agent_pb2.AgentMessage(
                register=agent_pb2.Register(
                    cluster=self.cluster,
                    labels={"name": self.cluster},
                    nodes=self.nodes,
                    jobs=[agent_pb2.JobRunRef(job_uid=u, generation=g) for u, g in jobs],
                    takes_batches=takes_batches,
                )
            )
        )
        responses = stub.Connect(self._requests())

        def pump() -> None:
            try:
                for r in responses:
                    self.history.append(r)
                    for inner in r.batch.messages if r.WhichOneof("body") == "batch" else [r]:
                        self.received.put(inner)
            except grpc.RpcError as exc:
                self.error = exc

        self._thread = threading.Thread(target=pump, daemon=True)
        self._thread.start()
        return self.expect("registered")

    def ended(self) -> bool:
        """Whether the hub has ended the stream."""
        return self._thread is not None and not self._thread.is_alive()

    def expect(self, kind: str, timeout: float = 10.0) -> agent_pb2.HubMessage:
        """The next message of ``kind``; the hub's error if it ends the stream first."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {kind} from the hub within {timeout}s")
            try:
                msg = self.received.get(timeout=min(left, 0.1))
            except queue.Empty:
                if self.ended() and self.received.empty():
                    if self.error is not None:
                        raise self.error from None
                    raise AssertionError(f"the hub ended the stream before any {kind}") from None
                continue
            if msg.WhichOneof("body") == kind:
                return msg

    def cancels(self) -> list[tuple[str, int]]:
        """(job uid, generation) of every Cancel received so far."""
        return [
            (m.cancel.job_uid, m.cancel.generation) for m in self.history if m.WhichOneof("body") == "cancel"
        ]

    def send(self, **body: object) -> None:
        msg = agent_pb2.AgentMessage(**body)  # type: ignore[arg-type]
        if self._held is not None:
            self._held.append(msg)
        else:
            self.out.put(msg)

    @contextlib.contextmanager
    def batched(self) -> Iterator[None]:
        """What is sent in the block goes as one AgentMessage.batch, as the real agent sends to a
        hub whose Registered says takes_batches."""
        self._held = []
        try:
            yield
            held = self._held
        finally:
            self._held = None
        self.out.put(agent_pb2.AgentMessage(batch=agent_pb2.AgentBatch(messages=held)))

    def accept(self, uid: str, gen: int) -> None:
        self.send(accepted=agent_pb2.BindingAccepted(job_uid=uid, generation=gen))

    def pods(self, uid: str) -> list[tuple[str, str]]:
        """(pod, task) of every pod of the job, named as the real agent names them
        (``<job>-<task>-<index>``), from the last Dispatch of it; one pod of a task "main" for a job
        never dispatched here."""
        for m in reversed(self.history):
            if m.WhichOneof("body") == "dispatch" and m.dispatch.job_uid == uid:
                manifest = json.loads(m.dispatch.manifest)
                name = manifest["metadata"]["name"]
                return [
                    (f"{name}-{t['name']}-{i}", t["name"])
                    for t in manifest["spec"]["tasks"]
                    for i in range(int(t.get("replicas", 1)))
                ]
        return [(f"{uid}-main-0", "main")]

    def status(self, uid: str, gen: int, phase: str, *, node: str = "", pods: int | None = None) -> None:
        """A JobStatus as the real agent sends it (vglobal/agent/report.py): every pod with its task,
        node and phase, and the counts per task. While Running, the first ``pods`` pods run on
        ``node`` (default: all of them, on the first node) and the rest wait for a node; other phases
        than Pending, Running, Completed and Failed report no pods."""
        all_pods = self.pods(uid)
        running = len(all_pods) if pods is None else pods
        final = {"Completed": "Succeeded", "Failed": "Failed"}.get(phase)
        placements = []
        for i, (pod, task) in enumerate(all_pods):
            if final is not None:
                placements.append(
                    agent_pb2.PodPlacement(pod=pod, task=task, node=node or self.nodes[0].name, phase=final)
                )
            elif phase == "Running" and i < running:
                placements.append(
                    agent_pb2.PodPlacement(
                        pod=pod, task=task, node=node or self.nodes[0].name, phase="Running"
                    )
                )
            elif phase in ("Running", "Pending"):
                placements.append(agent_pb2.PodPlacement(pod=pod, task=task, phase="Pending"))
        tasks: dict[str, agent_pb2.TaskStatus] = {}
        for p in placements:
            t = tasks.setdefault(p.task, agent_pb2.TaskStatus(name=p.task))
            t.replicas += 1
            field = {
                "Pending": "pending",
                "Running": "running",
                "Succeeded": "succeeded",
                "Failed": "failed",
            }[p.phase]
            setattr(t, field, getattr(t, field) + 1)
        self.send(
            status=agent_pb2.JobStatus(
                job_uid=uid, generation=gen, phase=phase, tasks=list(tasks.values()), placements=placements
            )
        )

    def close(self) -> None:
        self.out.put(None)
        self.channel.close()
