"""The hub and its member clusters in one process, on a virtual clock, for ``vglobal sim run``.

The hub's half is the in-memory ``Dispatcher`` (admit() over queues, fair share, capability,
starvation and reclaim); the clusters' half is the agents' own code (``SimAgent``: AgentCore, the
job controller, the local scheduler, the sim backend). Between them go the AgentService messages,
handled as the hub handles them: a Dispatch per admission, a Reclaim to stop each victim, which
waits again with its creation time kept; an agent's rejection re-queues the job and keeps it off
that cluster for ``exclude_for``; job status from a run that is no longer current changes nothing;
a finished job releases its queue usage at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from vglobal import convert
from vglobal.admission import Admit, QueueSnap, Wait
from vglobal.agent.job_plugins import pod_name
from vglobal.agent.pods import FINISHED_POD_PHASES
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.clock import Clock
from vglobal.model.cards import CardUse
from vglobal.model.manifests import manifest_to_json
from vglobal.model.phases import JobPhase, is_finished
from vglobal.model.resources import EMPTY, ResourceVector
from vglobal.sim.agents import SimAgent
from vglobal.sim.dispatch import Dispatcher, Rules
from vglobal.sim.inputs import POD_SLOT, Submission

MAX_ROUNDS = 10_000  # messages and cycles at one instant; more means two rules undo each other
STARTED = frozenset({JobPhase.Running, JobPhase.Restarting, JobPhase.Completing})


class SimulationError(RuntimeError):
    """The simulation cannot go on (it does not settle)."""


@dataclass
class JobRecord:
    """What the hub knows of one job: its binding and the latest status of its current run."""

    submission: Submission
    phase: str = str(JobPhase.Pending)
    cluster: str | None = None
    generation: int = 0
    admitted_at: float | None = None
    reason: str = ""
    pods: tuple[tuple[str, str, str], ...] = ()  # (pod, node, phase)
    retry_count: int = 0
    finished: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)

    def event(self, reason: str, message: str, time: float) -> None:
        self.events.append({"reason": reason, "message": message, "time": time})

    def current(self, cluster: str, generation: int) -> bool:
        return not self.finished and self.cluster == cluster and self.generation == generation


class Federation:
    def __init__(
        self, agents: Sequence[SimAgent], queues: Sequence[QueueSnap], rules: Rules, clock: Clock
    ) -> None:
        self.agents = {a.name: a for a in agents}
        self.dispatcher = Dispatcher(queues, rules)
        self._queues = {q.name: q for q in queues}
        self.clock = clock
        self.records: dict[str, JobRecord] = {}
        self._pods: dict[str, dict[str, ResourceVector]] = {}  # uid -> pod name -> request
        self.dirty = True  # admission's input changed since the last cycle

    def submit(self, submissions: Iterable[Submission]) -> None:
        now = self.clock.now()
        submissions = list(submissions)
        for s in submissions:
            rec = self.records[s.uid] = JobRecord(s)
            rec.event("Submitted", f"queue {s.job.queue}, {s.job.total_pods()} pods", now)
            self._pods[s.uid] = {
                pod_name(s.job.name, t.name, i): t.pod_request + POD_SLOT
                for t in s.job.tasks
                for i in range(t.replicas)
            }
            self.dispatcher.submit(s.pending(now), pinned=s.pinned())
        self.dirty = self.dirty or bool(submissions)

    def settle(self) -> None:
        """Everything that happens at this instant: the agents' reports heard and dispatch cycles
        run until neither has anything left to say."""
        for _ in range(MAX_ROUNDS):
            heard = self._hear()
            if self.dirty:
                self.dirty = False
                self._cycle()
            elif not heard:
                return
        raise SimulationError(f"nothing settles at t={self.clock.now():g}s after {MAX_ROUNDS} rounds")

    def next_event_time(self) -> float | None:
        now = self.clock.now()
        times = [a.next_event_time() for a in self.agents.values()] + [self.dispatcher.next_wakeup(now)]
        return min((t for t in times if t is not None), default=None)

    # ---- the dispatcher

    def _cycle(self) -> None:
        now = self.clock.now()
        cycle = self.dispatcher.cycle(now, [a.snap() for a in self.agents.values()])
        for uid, d in cycle.result.decisions.items():
            if isinstance(d, Wait):
                self.records[uid].reason = d.reason
        for a in cycle.admitted:
            rec = self.records[a.uid]
            rec.cluster, rec.generation, rec.admitted_at, rec.reason = a.cluster, a.generation, now, ""
            rec.event("Dispatched", f"admitted to cluster {a.cluster} (generation {a.generation})", now)
            s = rec.submission
            self.agents[a.cluster].send(
                pb.HubMessage(
                    dispatch=pb.Dispatch(
                        job_uid=a.uid,
                        generation=a.generation,
                        manifest=manifest_to_json(s.job.raw),
                        queue=s.job.queue,
                        priority=s.priority,
                        queues=self._chain(s.job.queue),
                        nominated_nodes=_nominated(cycle.result.decisions[a.uid]),
                    )
                )
            )
        why = {r.victim_uid: r.reason for r in cycle.result.reclaims}
        for victim in cycle.reclaimed:
            rec = self.records[victim.uid]
            self._waits_again(rec, "Reclaimed", why[victim.uid], now)
            reclaim = pb.Reclaim(job_uid=victim.uid, generation=rec.generation, reason=why[victim.uid])
            self.agents[victim.cluster].send(pb.HubMessage(reclaim=reclaim))

    def _chain(self, queue: str) -> list[pb.DispatchQueue]:
        """The queue and its ancestors as the hub's Dispatch carries them."""
        out: list[pb.DispatchQueue] = []
        q = self._queues.get(queue)
        while q is not None and len(out) < len(self._queues):
            aff = None if q.affinity is None else convert.queue_affinity(q.affinity)
            limits = {g: v.to_quantities() for g, v in q.node_group_limits.items()}
            out.append(
                pb.DispatchQueue(
                    name=q.name,
                    parent=q.parent or "",
                    weight=q.weight,
                    affinity=aff,
                    node_group_resource_limits=json.dumps(limits) if limits else "",
                )
            )
            q = self._queues.get(q.parent or "")
        return out

    @staticmethod
    def _waits_again(rec: JobRecord, reason: str, message: str, now: float) -> None:
        rec.event(reason, message, now)
        rec.cluster, rec.admitted_at, rec.phase, rec.pods, rec.reason = (
            None,
            None,
            JobPhase.Pending,
            (),
            message,
        )

    # ---- what the agents say

    def _hear(self) -> bool:
        heard = False
        for name, agent in self.agents.items():
            for msg in agent.tick():
                heard = True
                self._take(name, msg)
        return heard

    def _take(self, cluster: str, msg: pb.AgentMessage) -> None:
        kind = msg.WhichOneof("body")
        now = self.clock.now()
        if kind == "heartbeat":
            self.dirty = self.dirty or bool(msg.heartbeat.nodes)
        elif kind == "accepted":
            rec = self.records.get(msg.accepted.job_uid)
            if rec is not None and rec.current(cluster, msg.accepted.generation):
                rec.event("Bound", f"accepted by cluster {cluster}", now)
        elif kind == "rejected":
            r = msg.rejected
            rec = self.records.get(r.job_uid)
            if rec is not None and rec.current(cluster, r.generation):
                self.dispatcher.requeue(r.job_uid, now, exclude=cluster)
                self._waits_again(rec, "Rejected", f"cluster {cluster} rejected the binding: {r.reason}", now)
                self.dirty = True
        elif kind == "status":
            self._status(cluster, msg.status, now)

    def _status(self, cluster: str, st: pb.JobStatus, now: float) -> None:
        rec = self.records.get(st.job_uid)
        if rec is None or not rec.current(cluster, st.generation):
            return  # a run that is no longer current: fenced off
        rec.phase, rec.retry_count = st.phase, st.retry_count
        rec.pods = tuple((p.pod, p.node, p.phase) for p in st.placements)
        rec.reason = st.message
        rec.events += [{"reason": e.reason, "message": e.message, "time": e.time} for e in st.events]
        if is_finished(st.phase):
            rec.finished = True
            self.dispatcher.finish(st.job_uid)
        else:
            requests = self._pods[st.job_uid]
            used: dict[str, ResourceVector] = {}
            cards: list[tuple[str, CardUse]] = []
            for p in st.placements:
                if p.node and p.phase not in FINISHED_POD_PHASES:
                    used[p.node] = used.get(p.node, EMPTY) + requests.get(p.pod, EMPTY)
                    cards += [(p.node, convert.card_use_of(u)) for u in p.cards]
            self.dispatcher.report(st.job_uid, used, started=st.phase in STARTED, cards=tuple(cards))
        self.dirty = True


def _nominated(decision: Admit | Wait) -> tuple[str, ...]:
    """The nodes admission made room on for the job, which its Dispatch carries."""
    return decision.nominated if isinstance(decision, Admit) else ()
