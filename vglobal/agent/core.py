"""The agent's side of the AgentService protocol, without threads or sockets.

``AgentCore`` turns hub messages and clock ticks into the messages to send; the daemon moves them
over the gRPC stream. Rules it keeps:
- Dispatch is idempotent per (uid, generation); a higher generation replaces the old run (its
  pods are stopped first); a lower one is stale and ignored.
- A Heartbeat with the changed nodes' free capacity goes out before any JobStatus of the same
  tick, so the hub never sees placements without the capacity they use.
- While the hub is away jobs keep running; after ``Registered`` every known job's latest status
  (finished ones too, kept for ``retention`` seconds, the newest ``keep_finished`` at most) is sent
  again.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from vglobal import __version__
from vglobal.agent import report
from vglobal.agent.cards import card_policy, mig_config, node_cards
from vglobal.agent.dependencies import dependencies_of
from vglobal.agent.kept import MOST_FINISHED, RETENTION, Kept
from vglobal.agent.run import JobRun
from vglobal.agent.runtime import ClusterRuntime
from vglobal.agent.snapshot import dispatch_queue_specs
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.model.cards import CardFree
from vglobal.model.errors import ManifestError
from vglobal.model.preemptable import preemption_policy, template_preemption_policies
from vglobal.model.queue_affinity import NODE_GROUP_MODE_LABEL
from vglobal.model.resources import ResourceVector
from vglobal.model.workloads import parse_run
from vglobal.scheduler import node_group_mode
from vglobal.scheduler.devices.mig import MigConfig

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Link:
    registered: bool = False
    heartbeat_interval: float = 5.0
    last_heartbeat: float = float("-inf")
    reported_free: dict[str, ResourceVector] = field(default_factory=dict)
    inventory: int = 0  # the backend's inventory version last registered
    api_problem: str = ""  # last reported
    reported_cards: dict[str, tuple[CardFree, ...]] = field(default_factory=dict)


class AgentCore:
    def __init__(
        self,
        runtime: ClusterRuntime,
        *,
        heartbeat_interval: float = 5.0,
        retention: float = RETENTION,
        purge_stopped: bool = False,
        keep_finished: int = MOST_FINISHED,
    ) -> None:
        self.runtime = runtime
        self.heartbeat_interval = heartbeat_interval
        self.kept = Kept(retention, keep_finished)
        # a run the hub cancels or reclaims leaves nothing behind (a real cluster: its objects go)
        self.purge_stopped = purge_stopped
        self.link = _Link(heartbeat_interval=heartbeat_interval)
        # Both bounded by ``kept``: live runs plus the newest runs gone.
        self.rejected: dict[tuple[str, int], str] = {}  # (uid, generation) -> reason, to answer re-sends
        self.latest_generation: dict[str, int] = {}
        self._unsent: list[pb.AgentMessage] = []  # acks produced while no stream was registered
        # how deviceshare cuts MIG cards and orders cards, read on first report
        self._mig: tuple[MigConfig, str] | None = None

    @property
    def runs(self) -> dict[str, JobRun]:
        return self.runtime.runs

    # ---- stream life cycle

    def on_connected(self) -> list[pb.AgentMessage]:
        self.link = _Link(heartbeat_interval=self.heartbeat_interval)
        return [self._register()]

    def adopted(self) -> None:
        """Runs the controller took over from the cluster are current for their generation."""
        for run in self.runs.values():
            self.latest_generation[run.uid] = max(run.generation, self.latest_generation.get(run.uid, 0))

    def _register(self) -> pb.AgentMessage:
        backend = self.runtime.backend
        self.link.inventory = backend.inventory_version()
        labels = dict(backend.cluster_labels)
        mode = node_group_mode(self.runtime.conf)
        if mode:  # the hub confines queues naming no node group as this agent's scheduler does
            labels[NODE_GROUP_MODE_LABEL] = mode
        return report.register(
            backend.cluster_name,
            labels,
            backend.nodes(),
            backend.free(),
            self.runs.values(),
            __version__,
            backend.hyper_nodes(),
            backend.pools(),
        )

    def on_disconnected(self) -> None:
        self.link.registered = False

    def on_message(self, msg: pb.HubMessage) -> list[pb.AgentMessage]:
        kind = msg.WhichOneof("body")
        if kind == "registered":
            return self._registered(msg.registered)
        if kind == "dispatch":
            return self._send_or_keep(self._dispatch(msg.dispatch))
        if kind == "cancel":
            return self._stop(msg.cancel.job_uid, msg.cancel.generation, "Cancel", msg.cancel.reason)
        if kind == "reclaim":
            return self._stop(msg.reclaim.job_uid, msg.reclaim.generation, "Reclaim", msg.reclaim.reason)
        if kind == "evict":
            return self._evict(msg.evict)
        if kind == "object_update":
            self.runtime.backend.update_dependencies(dependencies_of(msg.object_update.objects))
        if kind == "queue_limits":
            self._queue_limits(msg.queue_limits)
        return []

    def _queue_limits(self, body: pb.QueueLimits) -> None:
        """The hub's latest figures for some queues: every run's chain takes them at once (the
        room a cluster was given beyond gangs moves every cycle)."""
        fresh = {q.name: q for q in dispatch_queue_specs(body.queues)}
        for run in self.runs.values():
            if not run.finished and any(q.name in fresh for q in run.queues):
                run.queues = tuple(fresh.get(q.name, q) for q in run.queues)

    def _registered(self, body: pb.Registered) -> list[pb.AgentMessage]:
        link = self.link
        link.registered = True
        if body.heartbeat_interval_seconds > 0:
            link.heartbeat_interval = min(self.heartbeat_interval, body.heartbeat_interval_seconds)
        free = self.runtime.backend.free()
        link.reported_free = dict(free)
        link.last_heartbeat = self.runtime.clock.now()
        link.reported_cards = self._cards(None)
        out = [report.heartbeat(free, cards=link.reported_cards), *self._unsent]
        self._unsent = []
        for run in sorted(self.runs.values(), key=lambda r: r.seq):
            self._reported(run)
            out.append(report.job_status(run, run.take_events(), self.runtime.grants))
        return out

    def _send_or_keep(self, msgs: list[pb.AgentMessage]) -> list[pb.AgentMessage]:
        if self.link.registered:
            return msgs
        self._unsent += [m for m in msgs if m.WhichOneof("body") in ("accepted", "rejected")]
        return []

    # ---- hub commands

    def _dispatch(self, d: pb.Dispatch) -> list[pb.AgentMessage]:
        uid, gen = d.job_uid, d.generation
        if (uid, gen) in self.rejected:
            return [report.rejected(uid, gen, self.rejected[(uid, gen)])]
        if gen < self.latest_generation.get(uid, gen):
            log.info(
                "ignore stale dispatch of %s gen %d (have gen %d)", uid, gen, self.latest_generation[uid]
            )
            return []
        run = self.runs.get(uid)
        if run is None and self.latest_generation.get(uid) == gen:
            return []  # ran here, finished and expired: nothing left to say about it
        if run is not None and run.generation == gen:
            if d.spec_generation > run.spec_generation:
                return self._respecify(run, d)
            run.dirty = False
            return [report.accepted(uid, gen), report.job_status(run, run.take_events(), self.runtime.grants)]
        self.latest_generation[uid] = gen
        if run is not None:
            log.info("job %s gen %d replaces gen %d: stopping its pods", uid, gen, run.generation)
            self.runtime.controller.remove(uid)
        try:
            job = parse_run(json.loads(d.manifest))
            run = self.runtime.controller.start(
                uid, gen, job, queue=d.queue, priority=d.priority, dependencies=dependencies_of(d.objects)
            )
            # the pod templates' own preemptionPolicy over the class's, as at the hub
            own = template_preemption_policies(t.template for t in job.tasks)
            policy = d.preemption_policy or run.preemption_policy
            run.preemption_policy = preemption_policy(policy, own, len(job.tasks))
            run.task_priorities = dict(d.task_priorities)
            run.nominated = tuple(d.nominated_nodes)
            run.queues = dispatch_queue_specs(d.queues)
            run.spec_generation = d.spec_generation
        except (ManifestError, ValueError) as exc:  # JSONDecodeError is a ValueError
            reason = f"invalid manifest: {exc}"
            self._rejected(uid, gen, reason)
            log.info("reject job %s gen %d: %s", uid, gen, reason)
            return [report.rejected(uid, gen, reason)]
        log.info("accept job %s/%s (%s) gen %d", job.namespace, job.name, uid, gen)
        return [report.accepted(uid, gen)]

    def _respecify(self, run: JobRun, d: pb.Dispatch) -> list[pb.AgentMessage]:
        """The run's job applied anew (``vglobal apply``, ``vglobal scale``): its replicas, labels
        and annotations change in place; pods beyond the new replicas go, new ones wait for room
        as any pod beyond a gang does (the queue's limits included)."""
        try:
            job = parse_run(json.loads(d.manifest))
        except (ManifestError, ValueError) as exc:
            log.warning("job %s generation %d: new manifest refused: %s", run.uid, d.spec_generation, exc)
            return []
        was = run.job.total_pods()
        self.runtime.controller.respecify(run, job)
        run.spec_generation = d.spec_generation
        run.queues = dispatch_queue_specs(d.queues)
        log.info(
            "job %s/%s (%s) generation %d: %d pods, was %d",
            job.namespace, job.name, run.uid, d.spec_generation, job.total_pods(), was,
        )  # fmt: skip
        run.dirty = True
        return []

    def _stop(self, uid: str, gen: int, reason: str, message: str) -> list[pb.AgentMessage]:
        run = self.runs.get(uid)
        if run is None or run.generation > gen:
            return []
        log.info(
            "%s job %s gen %d: %s", reason.lower(), uid, run.generation, message or "requested by the hub"
        )
        self.runtime.controller.abort(uid, reason, message or f"{reason} requested by the hub")
        if self.purge_stopped:
            self.runtime.controller.purge(uid)
        run.dirty = True  # a finished run still reports its final status once more
        return []

    def _evict(self, e: pb.Evict) -> list[pb.AgentMessage]:
        run = self.runs.get(e.job_uid)
        if run is None or run.generation != e.generation:
            return []  # another run of the job: the eviction was meant for the one it replaced
        gone = self.runtime.controller.evict(e.job_uid, e.pod_uids, e.reason or "evicted by the hub")
        if gone:
            log.info("evict %s of job %s gen %d: %s", ", ".join(gone), e.job_uid, e.generation, e.reason)
        return []

    # ---- every cycle

    def tick(self) -> list[pb.AgentMessage]:
        out: list[pb.AgentMessage] = []
        for r in self.runtime.step():
            self._rejected(r.uid, r.generation, r.reason)
            out.append(report.rejected(r.uid, r.generation, r.reason))
        now = self.runtime.clock.now()
        self._expire(now)
        if not self.link.registered:
            self._unsent += out
            return []
        hb = self._heartbeat(now)
        if hb is not None:
            out.insert(0, hb)
        if self.runtime.backend.inventory_version() != self.link.inventory:
            log.info("the cluster's nodes or topology changed: registering again")
            out.insert(0, self._register())
        for run in sorted((r for r in self.runs.values() if r.dirty), key=lambda r: r.seq):
            self._reported(run)
            out.append(report.job_status(run, run.take_events(), self.runtime.grants))
        return out

    def _reported(self, run: JobRun) -> None:
        run.dirty = False
        if run.finished:
            at = run.finished_at if run.finished_at is not None else self.runtime.clock.now()
            self.kept.reported(run.uid, run.generation, at)

    def _heartbeat(self, now: float) -> pb.AgentMessage | None:
        link = self.link
        backend = self.runtime.backend
        free = backend.free()
        problem = backend.api_problem()
        changed = {n: v for n, v in free.items() if link.reported_free.get(n) != v}
        due = now - link.last_heartbeat >= link.heartbeat_interval
        if not changed and not due and problem == link.api_problem:
            return None
        if problem != link.api_problem:
            log.warning("cluster API %s", f"unreachable: {problem}" if problem else "reachable again")
        link.reported_free.update(changed)
        link.last_heartbeat = now
        link.api_problem = problem
        # cards change only with what runs on a node, which changes its free capacity too
        cards = {n: c for n, c in self._cards(set(changed)).items() if link.reported_cards.get(n) != c}
        link.reported_cards.update(cards)
        return report.heartbeat(changed, problem, cards)

    def _cards(self, nodes: set[str] | None) -> dict[str, tuple[CardFree, ...]]:
        """The card tables of ``nodes`` (None: all) that have GPU cards."""
        specs = [s for s in self.runtime.backend.nodes() if nodes is None or s.name in nodes]
        if not specs:
            return {}
        if self._mig is None:
            self._mig = (mig_config(self.runtime.conf), card_policy(self.runtime.conf))
        groups = {pod.uid: run.uid for run in self.runs.values() for pod in run.pods.values()}
        return node_cards(specs, self.runtime.live_grants(), *self._mig, groups)

    def _expire(self, now: float) -> None:
        """Finished runs past the retention or beyond the newest kept go; a run reported again
        since (dirty) stays until it is reported, and is kept from then."""
        for uid, gen in self.kept.due(now):
            run = self.runs.get(uid)
            if run is None or run.generation != gen or not run.finished:
                continue  # replaced or removed meanwhile
            if run.dirty:
                continue  # queued again once reported
            self.runtime.controller.remove(uid)
            self._gone(uid, gen)

    def _rejected(self, uid: str, gen: int, reason: str) -> None:
        self.rejected[(uid, gen)] = reason
        self._gone(uid, gen)

    def _gone(self, uid: str, gen: int) -> None:
        """Remember the run gone, among the newest; forget the oldest remembered."""
        for old, old_gen in self.kept.forget(uid, gen):
            self.rejected.pop((old, old_gen), None)
            if old not in self.runs and self.latest_generation.get(old) == old_gen:
                del self.latest_generation[old]
