"""One cluster's control loop step: observe pods, run the job controller, schedule, bind, evict.

The agent daemon calls ``step`` every cycle on the real clock; ``sim run`` calls it at each event
time of a virtual clock. Same code either way.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass

from vglobal.agent import metrics
from vglobal.agent.backends.base import Backend, JobProblem
from vglobal.agent.controller import JobController
from vglobal.agent.growth import nodes_to_add
from vglobal.agent.pods import FINISHED_POD_PHASES, PodPhase
from vglobal.agent.run import AdoptedRun, JobRun
from vglobal.agent.snapshot import cluster_snapshot
from vglobal.clock import Clock
from vglobal.scheduler import DEFAULT_AGENT_CONF, CycleResult, SchedulerConf, run_cycle
from vglobal.scheduler.api import Grant

log = logging.getLogger(__name__)
_LISTED_BINDS = 8  # pods named in one "Scheduled" event; the rest are counted


def _waits(run: JobRun) -> bool:
    """Some pod of the run waits for a node (a bound pod that has not started needs none)."""
    return any(st.phase == PodPhase.Pending and st.node is None for st in run.status.values())


@dataclass(frozen=True, slots=True)
class Rejection:
    uid: str
    generation: int
    reason: str


class ClusterRuntime:
    def __init__(
        self,
        backend: Backend,
        clock: Clock,
        conf: SchedulerConf = DEFAULT_AGENT_CONF,
        *,
        bind_timeout: float | None = None,
    ) -> None:
        self.backend = backend
        self.clock = clock
        self.conf = conf
        self.bind_timeout = bind_timeout
        self.controller = JobController(backend, clock)
        self._last_key: tuple[object, ...] | None = None  # the input of the last session
        # The last session changed the cluster (bound, evicted, moved a PodGroup): one more runs
        # on what it left, as Volcano's next periodic session would (it marks a gang Running).
        self._again = False
        self._mirrored: dict[str, int] = {}  # run uid -> events already given to the backend
        # pod uid -> (node, the GPUs it was granted), while the pod lives: the metrics' device table
        self.grants: dict[str, tuple[str, tuple[Grant, ...]]] = {}
        self._grown: dict[str, int] = {}  # run uid -> the generation a node pool was grown for

    @property
    def runs(self) -> dict[str, JobRun]:
        return self.controller.runs

    def step(self) -> list[Rejection]:
        """One cycle; returns the runs given up on because their gang did not fit in time."""
        self.backend.advance(self.clock.now())
        rejected = [r for p in self.backend.take_problems() if (r := self._problem(p)) is not None]
        self.controller.sync()
        # Finished runs stay in ``runs`` for the agent's retention (a soak keeps tens of thousands):
        # the passes below look at the live ones only, taken once.
        live = [r for r in self.runs.values() if not r.finished]
        if self._again or any(_waits(r) for r in live):
            self._schedule(live)
            self.controller.sync()
            self._grow()
        self._mirror_events()
        return rejected + self._expired()

    def _problem(self, p: JobProblem) -> Rejection | None:
        """What the cluster refused: tell the job, fail it, or hand it back if it never ran."""
        run = self.runs.get(p.job_uid)
        if run is None or run.finished:
            return None
        if p.action == "reject" and not run.started:
            self.controller.remove(run.uid)
            log.info(
                "reject job %s/%s gen %d: %s", run.job.namespace, run.job.name, run.generation, p.message
            )
            return Rejection(run.uid, run.generation, p.message)
        if p.action in ("fail", "reject"):
            self.controller.fail(run.uid, p.reason, p.message)
        elif p.action == "complete":
            self.controller.complete(run.uid, p.reason, p.message)
        elif p.action == "checkpoint":  # the message is the time, epoch seconds
            at = float(p.message)
            if at > (run.checkpointed or 0.0):
                run.checkpointed, run.dirty = at, True
        else:
            run.event("Warning", p.reason, p.message, self.clock.now())
        return None

    def _mirror_events(self) -> None:
        """Warnings go to the backend too (a kube cluster shows them as Events of the job)."""
        for uid in [u for u in self._mirrored if u not in self.runs]:
            del self._mirrored[uid]
        for run in self.runs.values():
            done = self._mirrored.get(run.uid, 0)
            if done == len(run.history):
                continue  # nothing new: most runs, every cycle
            for ev in run.history[done:]:
                if ev.kind == "Warning":
                    self.backend.job_event(run.uid, ev.kind, ev.reason, ev.message)
            self._mirrored[run.uid] = len(run.history)

    def _input_key(self, live: list[JobRun]) -> tuple[object, ...]:
        """What the scheduler's decision depends on; the scheduler is deterministic, so an
        unchanged key means the same (empty) decision and the cycle can be skipped."""
        reserved = self.backend.reserved()
        key: list[object] = [self.backend.inventory_version(), frozenset(reserved.items())]
        for run in live:
            # its queues' limits too: the hub's allowance beyond gangs moves while nothing else does
            key.append((run.uid, run.podgroup_phase, tuple(sorted(run.pipelined.items())), run.queues))
            key.extend((st.uid, st.phase, st.node) for st in run.status.values())
        return tuple(key)

    def _schedule(self, live: list[JobRun]) -> None:
        key = self._input_key(live)
        if key == self._last_key:
            self._again = False
            return
        self._last_key = key
        state = cluster_snapshot(
            self.backend.nodes(),
            live,
            self.backend.hyper_nodes(),
            self.backend.reserved(),
            self.live_grants(),
        )
        started = time.perf_counter()
        result = run_cycle(state, self.conf)
        self._again = bool(result.binds or result.evictions) or any(
            result.podgroup_phases.get(r.uid, r.podgroup_phase) != r.podgroup_phase
            for r in live
        )
        self._apply(result, live)
        metrics.record_cycle(time.perf_counter() - started, len(result.binds))

    def _apply(self, result: CycleResult, live: list[JobRun]) -> None:
        """The session's decisions on the runs it saw (``live``: a finished run is in none)."""
        now = self.clock.now()
        owner = {pod.uid: (run, pod.name) for run in live for pod in run.pods.values()}
        bound: dict[str, list[str]] = {}
        for uid in result.evictions:
            if uid in owner:
                run, name = owner[uid]
                log.info("evict pod %s of job %s/%s", name, run.job.namespace, run.job.name)
                self.backend.delete_pod(uid)  # the controller sees it gone: PodEvicted
        for uid, node in sorted(result.binds.items()):
            if uid not in owner:
                continue
            run, name = owner[uid]
            devices = result.devices.get(uid, ())
            self.backend.bind_pod(uid, node, devices)
            if devices:
                self.grants[uid] = (node, devices)
            run.pipelined.pop(uid, None)
            bound.setdefault(run.uid, []).append(f"{name}->{node}")
        # Grouped by run once: a pass over every pipelined pod per run was quadratic.
        pipelined: dict[int, dict[str, str]] = {}
        for uid, n in result.pipelined.items():
            if uid in owner:
                pipelined.setdefault(id(owner[uid][0]), {})[uid] = n
        for run in live:
            run.pipelined = pipelined.get(id(run), {})
            phase = result.podgroup_phases.get(run.uid)
            if phase is not None:
                self.controller.podgroup_changed(run, phase)
            names = bound.get(run.uid)
            if names:
                more = f" and {len(names) - _LISTED_BINDS} more" if len(names) > _LISTED_BINDS else ""
                run.event(
                    "Normal",
                    "Scheduled",
                    f"bound {len(names)} pods: {', '.join(names[:_LISTED_BINDS])}{more}",
                    now,
                )
                log.info("job %s/%s: bound %d pods", run.job.namespace, run.job.name, len(names))
            reason = result.reasons.get(run.uid, "") if run.count(PodPhase.Pending) else ""
            if reason != run.message and not run.finished:  # a finished run keeps why it ended
                run.message = reason
                run.dirty = True
                if reason:
                    run.event("Warning", "Unschedulable", reason, now)
                    log.info("job %s/%s waits: %s", run.job.namespace, run.job.name, reason)

    def _grow(self) -> None:
        """A gang the scheduler could not place on today's nodes: ask the pools for the nodes it
        needs (once per run), as the hub counted on when it admitted it here."""
        runs = self.runs
        for uid in [u for u, gen in self._grown.items() if u not in runs or runs[u].generation != gen]:
            del self._grown[uid]
        pools = self.backend.pools()
        if not pools:
            return
        for run in self.runs.values():
            if run.started or run.finished or run.uid in self._grown or not run.message:
                continue
            # the gang's pods not bound yet (pods beyond minAvailable are elastic: no node is grown for them)
            bound = Counter(run.pods[n].task for n, st in run.status.items() if st.node and n in run.pods)
            waiting = [req for task, req, count in run.job.gang() for _ in range(count - bound[task])]
            if not waiting:
                continue
            add = nodes_to_add(waiting, self.backend.free(), pools)
            if not add:
                continue
            self._grown[run.uid] = run.generation
            now = self.clock.now()
            for pool, count in sorted(add.items()):
                note = self.backend.grow(pool, count, run.uid)
                delay = next(p.provision_seconds for p in pools if p.name == pool)
                nodes = "node" if count == 1 else "nodes"
                message = f"node pool {pool} grows by {count} {nodes} for its gang (up in about {delay:g}s)"
                message += f"; {note}" if note else ""
                run.event("Normal", "TriggeredScaleUp", message, now)
                log.info("job %s/%s: %s", run.job.namespace, run.job.name, message)
            pools = self.backend.pools()

    def _expired(self) -> list[Rejection]:
        if self.bind_timeout is None:
            return []
        now = self.clock.now()
        out = []
        for run in list(self.runs.values()):
            if run.started or run.finished or now - run.accepted_at < self.bind_timeout:
                continue
            reason = f"gang did not fit within {self.bind_timeout:g}s: {run.message or 'pods still pending'}"
            self.controller.remove(run.uid)
            log.info("reject job %s/%s gen %d: %s", run.job.namespace, run.job.name, run.generation, reason)
            out.append(Rejection(run.uid, run.generation, reason))
        return out

    def next_event_time(self) -> float | None:
        """When something here changes by itself next: a pod ending, a policy timeout, a gang's
        bind timeout running out."""
        times = [self.backend.next_event_time(), self.controller.next_event_time()]
        if self.bind_timeout is not None:
            times += [
                r.accepted_at + self.bind_timeout for r in self.runs.values() if not (r.started or r.finished)
            ]
        return min((t for t in times if t is not None), default=None)

    def adopt(self, found: AdoptedRun) -> None:
        """A run found in the cluster at start, with the GPUs its pods hold (they report them)."""
        self.controller.adopt(found)
        for uid, node, grants in found.grants:
            self.grants[uid] = (node, grants)

    def live_grants(self) -> dict[str, tuple[str, tuple[Grant, ...]]]:
        """The GPUs granted to pods that still hold them (running or bound, not ended)."""
        pods = self.backend.pods()
        for uid in [u for u in self.grants if u not in pods or pods[u].phase in FINISHED_POD_PHASES]:
            del self.grants[uid]
        return self.grants
