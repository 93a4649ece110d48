"""The hub and its member clusters in one process, on a virtual clock, for ``vglobal sim run``.

The hub's half is the in-memory ``Dispatcher`` (admit() over queues, fair share, capability,
starvation and reclaim, on the snapshot the hub's builders make); the clusters' half is the agents'
own code (``SimAgent``: AgentCore, the job controller, the local scheduler, the sim backend). Between
them go the AgentService messages, sent as the hub sends them: a Dispatch per admission (with the
nodes admission freed for it), an Evict for the pods taken from a run that goes on (its PodEvicted
policies apply at the agent), a Cancel to stop a whole-job victim, which waits again with its
creation time kept; an agent's rejection re-queues the job and keeps it off that cluster for
``exclude_for``; job status from a run that is no longer current changes nothing; a finished job
releases its queue usage at once. Events carry the hub's names (Preempting/Preempted,
Reclaiming/Reclaimed, Fenced) beside the agent's own (PodEvicted …).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vglobal import convert
from vglobal.admission import Admit, QueueSnap, Wait
from vglobal.admission.inputs import Shared
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.clock import Clock
from vglobal.hub.agents.deliver import EVICT_REASON
from vglobal.hub.dispatch.cycle import REQUEUE_REASONS
from vglobal.model.binding import BindingPhase, reported, stop_reason
from vglobal.model.manifests import manifest_to_json
from vglobal.model.phases import JobPhase
from vglobal.sim.agents import SimAgent
from vglobal.sim.dispatch import Binding, Dispatcher, Rules, SimulationError
from vglobal.sim.inputs import Submission

__all__ = ["Federation", "JobRecord", "SimulationError"]

MAX_ROUNDS = 10_000  # messages and cycles at one instant; more means two rules undo each other


@dataclass
class JobRecord:
    """What the hub shows of one job: its binding, and the latest status of its current run."""

    submission: Submission
    binding: Binding
    phase: str = str(JobPhase.Pending)
    admitted_at: float | None = None
    reason: str = ""
    pods: tuple[tuple[str, str, str], ...] = ()  # (pod, node, phase)
    retry_count: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def cluster(self) -> str | None:
        return self.binding.cluster

    def event(self, reason: str, message: str, time: float) -> None:
        self.events.append({"reason": reason, "message": message, "time": time})

    def waits_again(self, reason: str, message: str, now: float, why: str) -> None:
        self.event(reason, message, now)
        self.admitted_at, self.phase, self.pods, self.reason = None, JobPhase.Pending, (), why


class Federation:
    def __init__(
        self, agents: Sequence[SimAgent], queues: Sequence[QueueSnap], rules: Rules, clock: Clock
    ) -> None:
        self.agents = {a.name: a for a in agents}
        self.dispatcher = Dispatcher(queues, rules)
        self._queues = {q.name: q for q in queues}
        self._statuses: Mapping[str, Mapping[str, Any]] = {}  # the last cycle's, as the hub stores them
        # (cluster, queue) -> the allowance and holding last sent for it
        self._rooms_sent: dict[tuple[str, str], tuple[Any, Any]] = {}
        self.clock = clock
        self.records: dict[str, JobRecord] = {}
        self._shared = Shared()
        self.dirty = True  # admission's input changed since the last cycle

    def submit(self, submissions: Iterable[Submission]) -> None:
        now = self.clock.now()
        submissions = list(submissions)
        d = self.dispatcher
        for s in submissions:
            d.submit(s.facts(now, self._shared))
            rec = self.records[s.uid] = JobRecord(s, d.bindings[s.uid])
            rec.event("Submitted", f"queue {s.job.queue}, {s.job.total_pods()} pods", now)
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
        """One cycle, its decisions written and sent as the hub's cycle and agent streams do."""
        now = self.clock.now()
        d = self.dispatcher
        cycle = d.cycle(now, [a.snap() for a in self.agents.values()])
        self._statuses = cycle.statuses
        decisions = cycle.result.decisions
        for uid, dec in decisions.items():
            if isinstance(dec, Wait):
                self.records[uid].reason = dec.reason
        for r in cycle.result.reclaims:
            rec = self.records[r.victim_uid]
            event, why = REQUEUE_REASONS[r.preempted]
            rec.waits_again(event, r.reason, now, why)
        for e in cycle.evictions:
            many = "s" if len(e.pods) != 1 else ""
            event = "Reclaimed" if e.reclaimed else "Preempted"
            self.records[e.job_uid].event(event, f"{len(e.pods)} pod{many} to evict: {e.reason}", now)
        for a in cycle.admitted:
            rec = self.records[a.uid]
            dec = decisions[a.uid]
            assert isinstance(dec, Admit)
            rec.admitted_at, rec.reason = now, dec.preempting or dec.reclaiming
            if dec.preempting:
                rec.event("Preempting", dec.preempting, now)
            elif dec.reclaiming:
                rec.event("Reclaiming", dec.reclaiming, now)
            if dec.grows:
                rec.event("Provisioning", dec.grows_text, now)
            if dec.away:
                rec.event("Away", f"runs away from where it prefers: {dec.away}", now)
            if dec.placed:
                rec.event("Placed", f"placement verdict at admission: {dec.placed}", now)
            rec.event("Dispatched", f"admitted to cluster {a.cluster} (generation {a.generation})", now)
            s, facts = rec.submission, d.jobs[a.uid]
            self.agents[a.cluster].send(
                pb.HubMessage(
                    dispatch=pb.Dispatch(
                        job_uid=a.uid,
                        generation=a.generation,
                        manifest=manifest_to_json(s.job.raw),
                        queue=s.job.queue,
                        priority=s.priority,
                        preemption_policy=s.class_policy or "PreemptLowerPriority",
                        task_priorities=dict(facts.task_priorities),
                        queues=self._chain(s.job.queue, a.cluster),
                        nominated_nodes=dec.nominated,
                    )
                )
            )
        self._send_limits()
        for e in cycle.evictions:
            gen = d.bindings[e.job_uid].generation
            evict = pb.Evict(job_uid=e.job_uid, generation=gen, pod_uids=e.pods, reason=EVICT_REASON)
            self.agents[e.cluster].send(pb.HubMessage(evict=evict))
        for victim in cycle.reclaimed:  # fenced: the run is no longer its binding's
            b = d.bindings[victim.uid]
            why = stop_reason(b.ref, victim.cluster, b.generation) or ""
            self.records[victim.uid].event(
                "Fenced", f"told cluster {victim.cluster} to stop generation {b.generation}: {why}", now
            )
            cancel = pb.Cancel(job_uid=victim.uid, generation=b.generation, reason=why)
            self.agents[victim.cluster].send(pb.HubMessage(cancel=cancel))

    def _chain(self, queue: str, cluster: str) -> list[pb.DispatchQueue]:
        """The queue and its ancestors as the hub's Dispatch to ``cluster`` carries them, with the
        figures the last cycle gave them (convert.dispatch_queues at the hub)."""
        out: list[pb.DispatchQueue] = []
        q = self._queues.get(queue)
        while q is not None and len(out) < len(self._queues):
            out.append(self._dispatch_queue(q, cluster))
            q = self._queues.get(q.parent or "")
        return out

    def _dispatch_queue(self, q: QueueSnap, cluster: str) -> pb.DispatchQueue:
        limits = {g: v.to_quantities() for g, v in q.node_group_limits.items()}
        spec = convert.queue_limits(
            self._statuses.get(q.name, {}),
            None if q.capability is None else dict(q.capability.items()),
            dict(q.guarantee.items()),
            None if q.deserved is None else dict(q.deserved.items()),
        )
        groups = json.dumps(limits) if limits else ""
        return convert.dispatch_queue(
            q.name, q.parent, q.weight, q.affinity, groups, limits=spec, cluster=cluster
        )

    def _send_limits(self) -> None:
        """Each cluster's room beyond gangs where this cycle moved it (QueueLimits, as the hub's
        agent streams send it after the cycle's Dispatches)."""
        for cluster, agent in self.agents.items():
            moved = []
            for name, status in sorted(self._statuses.items()):
                if "allowance" not in status or name not in self._queues:
                    continue
                room = (status["allowance"].get(cluster), status.get("here", {}).get(cluster))
                if self._rooms_sent.get((cluster, name)) != room:
                    self._rooms_sent[(cluster, name)] = room
                    moved.append(self._dispatch_queue(self._queues[name], cluster))
            if moved:
                agent.send(pb.HubMessage(queue_limits=pb.QueueLimits(queues=moved)))

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
        d = self.dispatcher
        if kind == "heartbeat":
            self.dirty = self.dirty or bool(msg.heartbeat.nodes)
        elif kind == "accepted":
            uid = msg.accepted.job_uid
            b = d.bindings.get(uid)
            if b is not None and b.ref.is_current(cluster, msg.accepted.generation):
                if b.phase is BindingPhase.Dispatched:
                    self.records[uid].event("Bound", f"accepted by cluster {cluster}", now)
                d.accepted(uid)
        elif kind == "rejected":
            r = msg.rejected
            b = d.bindings.get(r.job_uid)
            if b is not None and b.ref.is_current(cluster, r.generation):
                d.requeue(r.job_uid, now, exclude=cluster)
                said = f"cluster {cluster} rejected the binding: {r.reason}"
                self.records[r.job_uid].waits_again("Rejected", said, now, said)
                self.dirty = True
        elif kind == "status":
            self._status(cluster, msg.status)

    def _status(self, cluster: str, st: pb.JobStatus) -> None:
        d = self.dispatcher
        b = d.bindings.get(st.job_uid)
        if b is None or not b.ref.is_current(cluster, st.generation):
            return  # a run that is no longer current: fenced off
        rec = self.records[st.job_uid]
        rec.phase, rec.retry_count = st.phase, st.retry_count
        rec.pods = tuple((p.pod, p.node, p.phase) for p in st.placements)
        rec.reason = st.message
        rec.events += [{"reason": e.reason, "message": e.message, "time": e.time} for e in st.events]
        moved = reported(st.phase)
        if moved is not None and moved is not BindingPhase.Running:
            d.finish(st.job_uid, moved)
        else:
            pods = [convert.pod_placement(p).to_json() for p in st.placements]
            d.report(st.job_uid, pods, started=moved is BindingPhase.Running, checkpointed=st.checkpointed_at)
        self.dirty = True
