"""Many simulated agents in one process, for bench/agents_load.py.

Each agent has its own stream to the hub (the agent's own ``HubLink``: its thread, its reconnects,
its batching), registers an inventory built by the sim backend from a SimCluster of N nodes (the
agent's own ``report.register``), heartbeats the nodes whose free capacity changed (the agent's
``report.heartbeat``) at the interval the hub asks for, acknowledges each Dispatch, reports the
run Running at once and Completed after ``run_seconds``. What a real agent's local scheduler and
job controller do in between is left out: the hub's side of the protocol is what is measured.

All agents share two handler threads and one timer thread; every agent's state is behind its own
lock. What each agent ran is logged (uid, generation, cluster) so the load tool can check that no
job was lost or run twice, from the agents' side as the chaos tests do.
"""

from __future__ import annotations

import heapq
import itertools
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from e2e_procs import sim_cluster

from vglobal import __version__
from vglobal.agent import report
from vglobal.agent.backends.sim import SimBackend
from vglobal.agent.backends.sim_cluster import SimCluster, parse_sim_manifests
from vglobal.agent.hub_link import HubLink
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.dial import Dial
from vglobal.model.resources import ResourceVector

# What one job of the load asks (bench/e2e_load.py's manifest: one pod of 1 CPU, 1 GiB).
JOB = ResourceVector.from_quantities({"cpu": "1", "memory": "1Gi", "pods": "1"})


class _Tagged:
    """An agent's inbox as its HubLink sees it: each item goes to the fleet's one queue, tagged."""

    def __init__(self, agent: SimAgent, shared: queue.Queue[tuple[SimAgent, tuple[str, int, Any]]]) -> None:
        self.agent = agent
        self.shared = shared

    def put(self, item: tuple[str, int, Any]) -> None:
        self.shared.put((self.agent, item))


@dataclass
class SimAgent:
    name: str
    cluster: SimCluster
    dial: Dial
    fleet: Fleet
    lock: threading.Lock = field(default_factory=threading.Lock)
    session: int = 0
    registered: bool = False
    heartbeat_interval: float = 5.0
    nodes: tuple[Any, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    free: dict[str, ResourceVector] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)
    runs: dict[str, tuple[int, str]] = field(default_factory=dict)  # uid -> (generation, node), unfinished
    done: dict[str, int] = field(default_factory=dict)  # uid -> generation, finished here
    next_node: int = 0
    heartbeats: list[float] = field(default_factory=list)  # epoch seconds each heartbeat was queued
    link: HubLink | None = None

    def start(self) -> None:
        backend = SimBackend(self.cluster, name=self.name)
        self.nodes = backend.nodes()
        self.labels = dict(backend.cluster_labels)
        self.free = dict(backend.free())
        self.link = HubLink(self.dial, _Tagged(self, self.fleet.inbox), cluster=self.name)  # type: ignore[arg-type]
        self.link.start()

    def send(self, msgs: list[pb.AgentMessage]) -> None:
        if self.link is not None and msgs:
            self.link.send_all(self.session, msgs)

    # ---- what the hub says (a handler thread, under the lock)

    def handle(self, kind: str, sid: int, msg: Any) -> list[pb.AgentMessage]:
        if kind == "connected":
            self.session, self.registered = sid, False
            runs = [_Run(uid, gen) for uid, (gen, _) in self.runs.items()]
            return [report.register(self.name, self.labels, self.nodes, self.free, runs, __version__)]
        if sid != self.session:
            return []
        if kind == "disconnected":
            self.registered = False
            self.fleet.count("disconnected")
            return []
        body = msg.WhichOneof("body")
        if body == "registered":
            self.registered = True
            self.heartbeat_interval = msg.registered.heartbeat_interval_seconds or 5.0
            self.fleet.at(time.time(), self.heartbeat)
            # A run reported before the stream broke is reported again (the real agent's rule).
            return [_status(uid, gen, "Running", node) for uid, (gen, node) in self.runs.items()]
        if body == "dispatch":
            return self._dispatch(msg.dispatch)
        if body in ("cancel", "reclaim", "evict"):
            self.fleet.count(body)
            return self._stop(getattr(msg, body)) if body != "evict" else []
        return []  # queue limits, object updates: nothing to do for these runs

    def _dispatch(self, d: pb.Dispatch) -> list[pb.AgentMessage]:
        got = time.time()
        if self.runs.get(d.job_uid, (None,))[0] == d.generation or self.done.get(d.job_uid) == d.generation:
            self.fleet.count("redelivered")
            return [report.accepted(d.job_uid, d.generation)]
        node = self.nodes[self.next_node % len(self.nodes)].name
        self.next_node += 1
        self.free[node] = self.free[node] - JOB
        self.changed.add(node)
        self.runs[d.job_uid] = (d.generation, node)
        self.fleet.ran(d.job_uid, d.generation, self.name, got)
        self.fleet.at(got + self.fleet.run_seconds, lambda: self.finish(d.job_uid, d.generation))
        return [report.accepted(d.job_uid, d.generation), _status(d.job_uid, d.generation, "Running", node)]

    def _stop(self, c: Any) -> list[pb.AgentMessage]:
        run = self.runs.get(c.job_uid)
        if run is None or run[0] != c.generation:
            return []
        self._release(c.job_uid)
        return [_status(c.job_uid, c.generation, "Aborted", run[1])]

    def _release(self, uid: str) -> None:
        gen, node = self.runs.pop(uid)
        self.done[uid] = gen
        self.free[node] = self.free[node] + JOB
        self.changed.add(node)

    # ---- the timer thread

    def finish(self, uid: str, generation: int) -> None:
        with self.lock:
            run = self.runs.get(uid)
            if run is None or run[0] != generation:
                return
            self._release(uid)
            self.fleet.finished(uid, time.time())
            self.send([_status(uid, generation, "Completed", run[1])])

    def heartbeat(self) -> None:
        with self.lock:
            if not self.registered:
                return
            changed = {n: self.free[n] for n in self.changed}
            self.changed.clear()
            self.heartbeats.append(time.time())
            self.send([report.heartbeat(changed)])
            self.fleet.at(time.time() + self.heartbeat_interval, self.heartbeat)


@dataclass(frozen=True)
class _Run:
    """What ``report.register`` reads of a run the agent still has."""

    uid: str
    generation: int
    finished: bool = False


def _status(uid: str, generation: int, phase: str, node: str) -> pb.AgentMessage:
    pod = {"Running": "Running", "Completed": "Succeeded"}.get(phase, "Failed")
    done = phase != "Running"
    return pb.AgentMessage(
        status=pb.JobStatus(
            job_uid=uid,
            generation=generation,
            phase=phase,
            tasks=[pb.TaskStatus(name="t", replicas=1, running=int(not done), succeeded=int(pod == "Succeeded"))],
            placements=[pb.PodPlacement(pod=f"{uid[:8]}-t-0", task="t", node=node, phase=pod, uid=f"{uid}-0")],
            events=[pb.AgentEvent(kind="Normal", reason=f"Job{phase}", message=f"job {phase}", time=time.time())],
        )
    )


class Fleet:
    """The agents, the threads that serve them, and the log of what they ran."""

    def __init__(self, names: list[str], nodes: int, dials: Callable[[str], Dial], *, run_seconds: float) -> None:
        self.run_seconds = run_seconds
        self.inbox: queue.Queue[tuple[SimAgent, tuple[str, int, Any]]] = queue.Queue()
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._stop = threading.Event()
        self._log_lock = threading.Lock()
        self.runs: dict[str, list[tuple[int, str, float]]] = {}  # uid -> [(generation, cluster, got at)]
        self.completed: dict[str, float] = {}  # uid -> when the agent sent Completed
        self.counts: dict[str, int] = {}
        self.agents = [
            SimAgent(n, _cluster(n, nodes), dials(n), self) for n in names
        ]
        self._threads = [threading.Thread(target=self._handle, daemon=True) for _ in range(2)]
        self._threads.append(threading.Thread(target=self._tick, daemon=True))

    def start(self) -> None:
        for t in self._threads:
            t.start()
        for a in self.agents:
            a.start()

    def stop(self) -> None:
        self._stop.set()
        with self._cv:
            self._cv.notify_all()
        for a in self.agents:
            if a.link is not None:
                a.link.close(timeout=2.0)

    def registered(self) -> int:
        return sum(a.registered for a in self.agents)

    def count(self, what: str) -> None:
        with self._log_lock:
            self.counts[what] = self.counts.get(what, 0) + 1

    def ran(self, uid: str, generation: int, cluster: str, got: float) -> None:
        with self._log_lock:
            self.runs.setdefault(uid, []).append((generation, cluster, got))

    def finished(self, uid: str, at: float) -> None:
        with self._log_lock:
            self.completed[uid] = at

    def at(self, when: float, fn: Callable[[], None]) -> None:
        with self._cv:
            heapq.heappush(self._timers, (when, next(self._seq), fn))
            self._cv.notify()

    def _handle(self) -> None:
        while not self._stop.is_set():
            try:
                agent, (kind, sid, msg) = self.inbox.get(timeout=0.5)
            except queue.Empty:
                continue
            with agent.lock:
                out = agent.handle(kind, sid, msg)
                agent.send(out)

    def _tick(self) -> None:
        while not self._stop.is_set():
            with self._cv:
                while not self._stop.is_set() and (not self._timers or self._timers[0][0] > time.time()):
                    wait = self._timers[0][0] - time.time() if self._timers else 1.0
                    self._cv.wait(max(0.0, min(wait, 1.0)))
                if self._stop.is_set():
                    return
                _, _, fn = heapq.heappop(self._timers)
            fn()


def _cluster(name: str, nodes: int) -> SimCluster:
    found = [m for m in parse_sim_manifests(sim_cluster(name, nodes, 110)) if isinstance(m, SimCluster)]
    return found[0]
