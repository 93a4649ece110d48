"""Replay the Philly trace through admit(): FIFO round-robin (Volcano Global) vs our fair share.

    .venv/bin/python bench/philly.py [--limit N] [--tick 60] [--no-reclaim]

Each virtual cluster (VC) is a queue whose weight is its node count in helios_philly_vc.csv (VCs
missing there get weight 1); one cluster holds the sum of the VC nodes, 8 GPUs each. A job of g GPUs
is a gang of ceil(g/8) pods. A virtual clock jumps from event to event (arrivals, completions),
rounded up to --tick seconds so one admission cycle handles every event of a tick. Both policies
see the same events; only the dispatch rule differs:

- fifo: Volcano Global's dispatcher: one job per queue per round, queues in name order, no weights;
  a job that does not fit the nodes is skipped for the cycle (placement-aware, to be fair to it).
- fair: vglobal admit() (weighted fair share, gang fit, starvation guard, reclaim). A reclaimed job
  restarts from scratch when it runs again (no checkpoints), which we count as lost GPU-time.
- fair-noreclaim: the same admit() given no running jobs to reclaim.
- decayed: admit() with fair share over time (--fair-share-half-life) and reclaim rate-limited
  (--reclaim-limit per --reclaim-interval), the flags of `vglobal hub` and `vglobal sim run`.
- worth: admit() with the "worth" reclaim rule (admission/victims/worth.py): victims only from
  queues above their share by --reclaim-margin (and --protected-fraction), for reclaimers below it
  by the margin, while their lost work is worth the reclaimer's gain over --reclaim-horizon;
  --worth-half-life orders (and judges reclaim) by decayed usage.

- oracle (bench only, not a hub policy): no reclaim, and it knows every job's run time. Queues in
  fair order (GPUs held over fair share); the head job of the most under-share queue that does not
  fit holds the room it will have when enough running jobs end (EASY backfill), and queues at or
  over their share get only room that jobs of queues under theirs cannot use: a job of theirs starts
  only if it ends before that reservation or fits beside it, shortest first. It shows how fair
  admission alone gets with knowledge the hub never has (a yardstick, not a proven bound).

--checkpoint-interval S has every job checkpoint each S seconds of its run: a reclaimed job then
loses only its run since its last checkpoint and resumes from there (every policy alike). A policy
name may carry its own settings: `worth/ck1800/h86400` is worth with a checkpoint every 1,800 s and
a horizon of 86,400 s (`/m0.1` a margin, `/hl900` a half-life), so variants replay side by side.
--since/--until (YYYY-MM-DD) replay a part of the trace (a held-back month); --plot PATH draws each
queue's share of GPU-time over its fair share through the replay, per policy.
"""

from __future__ import annotations

import argparse
import bisect
import csv
import heapq
import math
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

import numpy as np

from vglobal.admission import AdmissionPolicy, ClusterSnap, Gang, NodeSnap, PendingJob, QueueSnap, Snapshot
from vglobal.admission.fit.index import ResourceIndex
from vglobal.admission.share.tree import QueueTree
from vglobal.model.resources import ResourceVector
from vglobal.sim.dispatch import Dispatcher, Rules
from vglobal.sim.rounds import AdmissionRounds
from vglobal.sim.traces import TraceMissing, need

# Next to the checkout (/work/main -> /work/shared), or one level up from a worktree (/work/wt/NAME).
DATA = next(
    (d for p in Path(__file__).resolve().parents[2:4] if (d := p / "shared" / "data" / "philly").is_dir()),
    Path(__file__).resolve().parents[2] / "shared" / "data" / "philly",
)
GPU = "nvidia.com/gpu"
PER_NODE = 8
LOCAL = ("fifo", "oracle")  # dispatched here, not through admit()


@dataclass
class TraceJob:
    uid: str
    queue: str
    submit: float
    duration: float
    gpus: int
    pods: int
    per_pod: int
    start: float | None = None
    finish: float | None = None
    attempts: int = 0
    done: float = 0.0  # seconds of its run kept by checkpoints across reclaims


def load(
    limit: int | None, since: str | None = None, until: str | None = None, vcs: str | None = None
) -> tuple[list[TraceJob], dict[str, int]]:
    weights: dict[str, int] = {}
    with (DATA / "helios_philly_vc.csv").open() as f:
        for row in csv.DictReader(f):
            weights[row["vc"]] = int(row["node num"])
    rows = []
    with (DATA / "pollux_philly.csv").open() as f:
        for row in csv.DictReader(f):
            ts = datetime.strptime(row["timestamp"], "%Y-%m-%d %H:%M:%S").timestamp()
            rows.append((ts, row))
    rows.sort(key=lambda r: (r[0], r[1]["cluster"]))
    if vcs:  # a subset of the virtual clusters: their jobs, and the cluster sized to their nodes
        keep = set(vcs.split(","))
        rows = [r for r in rows if r[1]["cluster"] in keep]
        weights = {vc: w for vc, w in weights.items() if vc in keep}
    if since or until:
        lo = datetime.strptime(since, "%Y-%m-%d").timestamp() if since else -math.inf
        hi = datetime.strptime(until, "%Y-%m-%d").timestamp() if until else math.inf
        rows = rows[bisect.bisect_left(rows, lo, key=lambda r: r[0]) : bisect.bisect_left(rows, hi, key=lambda r: r[0])]
    if limit:
        rows = rows[:limit]
    t0 = rows[0][0] if rows else 0.0
    jobs = []
    for k, (ts, row) in enumerate(rows):
        g = max(int(row["num_gpus"]), 1)
        pods = math.ceil(g / PER_NODE)
        jobs.append(
            TraceJob(
                f"j{k:05d}", row["cluster"], ts - t0, float(row["duration"]), g, pods, math.ceil(g / pods)
            )
        )
        weights.setdefault(row["cluster"], 1)
    return jobs, weights


class PhillyNodes:
    """The cluster's nodes as free GPU counts; a gang's pods go first-fit in node order, as the agent
    would place them. Both dispatch rules place through it."""

    def __init__(self, nodes: int) -> None:
        self.free = np.full(nodes, PER_NODE, dtype=np.int64)
        self._snaps: dict[tuple[int, int], NodeSnap] = {}  # by (node, free GPUs): reused across cycles

    def rows(self, per_pod: int, pods: int) -> list[int] | None:
        """Node rows of the gang's pods (taken), or None if it does not fit (nothing taken)."""
        per_node = self.free // per_pod
        cum = np.cumsum(per_node)
        if cum[-1] < pods:
            return None
        last = int(np.searchsorted(cum, pods))
        take = per_node[: last + 1].copy()
        take[last] -= int(cum[last]) - pods
        rows = [int(i) for i in np.flatnonzero(take) for _ in range(int(take[i]))]
        for i in rows:
            self.free[i] -= per_pod
        return rows

    def give_back(self, rows: list[int], per_pod: int) -> None:
        for i in rows:
            self.free[i] += per_pod

    # --- the Placer of vglobal.sim.rounds
    def clusters(self) -> tuple[ClusterSnap, ...]:
        return (ClusterSnap("philly", {}, tuple(self._node(i, int(f)) for i, f in enumerate(self.free))),)

    def place(self, cluster: str, gang: Gang) -> list[tuple[int, str]] | None:
        ((pod, pods),) = gang
        rows = self.rows(pod[GPU] // 1000, pods)
        return None if rows is None else [(0, f"n{i:04d}") for i in rows]

    def release(self, cluster: str, gang: Gang, pods: Sequence[tuple[int, str]]) -> None:
        for shape, node in pods:
            self.free[int(node[1:])] += gang[shape][0][GPU] // 1000

    def _node(self, i: int, free: int) -> NodeSnap:
        got = self._snaps.get((i, free))
        if got is None:
            got = self._snaps[(i, free)] = NodeSnap(
                f"n{i:04d}", ResourceVector({GPU: free * 1000}), ResourceVector({GPU: PER_NODE * 1000})
            )
        return got


class NoReclaimDispatcher(Dispatcher):
    """admit() told of no running job, so it has nothing to reclaim."""

    def snapshot(self, now: float, clusters: Iterable[ClusterSnap]) -> Snapshot:
        return replace(super().snapshot(now, clusters), running=())


class CheckpointDispatcher(Dispatcher):
    """Every running job declares the same checkpoint interval (vglobal.io/checkpoint-interval)."""

    interval: float = 0.0

    def snapshot(self, now: float, clusters: Iterable[ClusterSnap]) -> Snapshot:
        snap = super().snapshot(now, clusters)
        running = tuple(replace(r, checkpoint_interval=self.interval) for r in snap.running)
        return replace(snap, running=running)


@dataclass
class Run:
    """One replay: the trace's jobs waiting and running, and the statistics; fair share goes through
    the hub's dispatcher in memory (vglobal.sim.rounds)."""

    name: str
    jobs: list[TraceJob]
    weights: dict[str, int]
    nodes: int
    tick: float
    reclaim: bool = True
    reclaim_after: float = 0.0
    reclaim_min_runtime: float = 0.0
    half_life: float = 0.0
    reclaim_limit: float = 0.0
    reclaim_interval: float = 600.0
    rule: str = "share"
    protected_fraction: float = 1.0
    margin: float = 0.1
    horizon: float = 3600.0
    checkpoint: float = 0.0
    kind: str = ""  # the dispatch rule (the name without its /settings)
    sample_every: float = 6 * 3600.0
    cluster: PhillyNodes = field(init=False)
    rounds: AdmissionRounds = field(init=False)
    attempt_start: dict[str, float] = field(default_factory=dict)
    pending: dict[str, list[TraceJob]] = field(default_factory=lambda: defaultdict(list))
    running: dict[str, tuple[TraceJob, list[int]]] = field(default_factory=dict)
    by_uid: dict[str, TraceJob] = field(default_factory=dict)
    lost: float = 0.0
    reclaimed: int = 0
    contended: dict[str, float] = field(default_factory=lambda: defaultdict(float))  # GPU-s while jobs wait
    jain_time: float = 0.0
    busy_time: float = 0.0
    cycles: int = 0
    # (time, per queue GPUs used / fair share) every sample_every seconds while jobs wait
    samples: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    ends: dict[str, float] = field(default_factory=dict)  # running job -> its end (oracle)

    def __post_init__(self) -> None:
        self.kind = self.kind or self.name
        self.cluster = PhillyNodes(self.nodes)
        queues = [QueueSnap(q, weight=w) for q, w in sorted(self.weights.items())]
        policy = AdmissionPolicy(
            reclaim_after=self.reclaim_after,
            reclaim_min_runtime=self.reclaim_min_runtime,
            max_admissions=0,
            fair_share_half_life=self.half_life,
            reclaim_limit=self.reclaim_limit,
            reclaim_rule=self.rule,
            protected_fraction=self.protected_fraction,
            reclaim_margin=self.margin,
            reclaim_horizon=self.horizon,
        )
        rules = Rules(policy, reclaim_interval=self.reclaim_interval)
        kind = CheckpointDispatcher if self.checkpoint > 0 else Dispatcher
        dispatcher = (kind if self.reclaim else NoReclaimDispatcher)(queues, rules)
        if isinstance(dispatcher, CheckpointDispatcher):
            dispatcher.interval = self.checkpoint
        self.rounds = AdmissionRounds(dispatcher, self.cluster)

    @property
    def rejected(self) -> int:
        return self.rounds.rejected

    def arrive(self, job: TraceJob) -> None:
        self.pending[job.queue].append(job)
        self.by_uid[job.uid] = job
        if self.kind not in LOCAL:
            pod = ResourceVector({GPU: job.per_pod * 1000})
            gpus = ResourceVector({GPU: job.gpus * 1000})
            self.rounds.submit(
                PendingJob(
                    job.uid, job.uid, "philly", job.queue, 0, job.submit, job.submit, gpus, ((pod, job.pods),)
                )
            )

    def start(self, job: TraceJob, rows: list[int], now: float, events: list[tuple[float, int, str]]) -> None:
        if job.start is None:
            job.start = now
        job.attempts += 1
        self.attempt_start[job.uid] = now
        self.running[job.uid] = (job, rows)
        self.ends[job.uid] = now + job.duration - job.done
        heapq.heappush(events, (now + job.duration - job.done, job.attempts, job.uid))

    def finish(self, uid: str, attempt: int, now: float) -> None:
        entry = self.running.get(uid)
        if entry is None or entry[0].attempts != attempt:
            return  # a completion of an attempt that was reclaimed
        job, rows = self.running.pop(uid)
        self.ends.pop(uid, None)
        if self.kind in LOCAL:
            self.cluster.give_back(rows, job.per_pod)
        else:
            self.rounds.finish(uid)
        job.finish = now

    # --- dispatch rules ----------------------------------------------------------------------
    def fifo(self, now: float, events: list[tuple[float, int, str]]) -> None:
        queues = sorted(q for q, js in self.pending.items() if js)
        cursor = dict.fromkeys(queues, 0)
        started: set[str] = set()
        live = queues
        while live:
            nxt = []
            for q in live:
                js = self.pending[q]
                i = cursor[q]
                cursor[q] = i + 1
                rows = self.cluster.rows(js[i].per_pod, js[i].pods)
                if rows is not None:
                    self.start(js[i], rows, now, events)
                    started.add(js[i].uid)
                if i + 1 < len(js) and self.cluster.free.any():
                    nxt.append(q)
            live = nxt
        for q in queues:
            self.pending[q] = [j for j in self.pending[q] if j.uid not in started]

    def oracle(self, now: float, events: list[tuple[float, int, str]]) -> None:
        """Fair order without reclaim, knowing run times (see the module's doc): EASY backfill on a
        reservation for the most under-share queue's head job; queues at or over their share take
        only room nobody under theirs can use, their shortest job first."""
        shares = fair_shares(self)
        usage: dict[str, float] = defaultdict(float)
        for job, _ in self.running.values():
            usage[job.queue] += job.gpus
        live = {q for q, js in self.pending.items() if js and shares.get(q, 0.0) > 0}
        started: set[str] = set()
        shadow, spare = math.inf, 0  # the reservation: when it fits, and GPUs beside it then
        while live and self.cluster.free.any():
            q = min(live, key=lambda q: (usage[q] / shares[q], q))
            under = usage[q] < shares[q]
            js = [j for j in self.pending[q] if j.uid not in started]
            if under and shadow == math.inf:
                js = js[:1]  # its head, in submit order; it starts or is the reservation
            else:
                js = sorted(js, key=lambda j: (j.duration - j.done, j.submit))
            went = False
            for j in js:
                backfill = shadow < math.inf
                end = now + j.duration - j.done
                if backfill and end > shadow and j.gpus > spare:
                    continue
                rows = self.cluster.rows(j.per_pod, j.pods)
                if rows is None:
                    if not backfill and under:
                        shadow, spare = self._reservation(j, now)
                        break
                    continue
                if backfill and end > shadow:
                    spare -= j.gpus
                self.start(j, rows, now, events)
                started.add(j.uid)
                usage[q] += j.gpus
                went = True
                break
            if not went:
                live.discard(q)
        for q in list(self.pending):
            self.pending[q] = [j for j in self.pending[q] if j.uid not in started]

    def _reservation(self, job: TraceJob, now: float) -> tuple[float, int]:
        """When enough running jobs will have ended for `job` (GPUs counted, not nodes), and the
        GPUs spare beside it then."""
        free = int(self.cluster.free.sum())
        for end, uid in sorted((e, u) for u, e in self.ends.items()):
            if free >= job.gpus:
                break
            free += self.running[uid][0].gpus
            now = end
        return now, free - job.gpus

    def fair(self, now: float, events: list[tuple[float, int, str]]) -> None:
        """One cycle of the hub's dispatcher: admitted gangs placed first-fit (one the nodes cannot
        hold after all, as admission steers around starvation reservations the agent knows nothing
        of, is rejected and waits on), reclaimed jobs stopped and waiting again. A reclaimed job
        restarts from scratch, so what it ran is lost."""
        self.rounds.now = now
        result = self.rounds.step(advance=0.0)
        running = self.rounds.dispatcher.running
        done = {uid for uid in result.admitted_order if uid in running}
        for uid in done:
            self.start(self.by_uid[uid], [], now, events)
        for r in result.reclaims:
            job = self.running.pop(r.victim_uid)[0]
            self.ends.pop(job.uid, None)
            ran = now - self.attempt_start[job.uid]
            lost = ran % self.checkpoint if self.checkpoint > 0 else ran
            job.done += ran - lost
            self.lost += job.gpus * lost
            self.reclaimed += 1
            self.pending[job.queue].append(job)
        for q in list(self.pending):
            self.pending[q] = [j for j in self.pending[q] if j.uid not in done]


def fair_shares(run: Run) -> dict[str, float]:
    """Each queue's weighted fair share of GPUs now: water-filling capped by demand (= deserved)."""
    index = ResourceIndex([GPU])
    usage: dict[str, int] = defaultdict(int)
    for job, _ in run.running.values():
        usage[job.queue] += job.gpus * 1000
    queues = [
        QueueSnap(q, weight=w, allocated=ResourceVector({GPU: usage[q]})) for q, w in run.weights.items()
    ]
    demand = [(j.queue, [j.gpus * 1000]) for js in run.pending.values() for j in js]
    tree = QueueTree(queues, index, ResourceVector({GPU: run.nodes * PER_NODE * 1000}), demand)
    return {q: float(tree.deserved[tree.idx[q]][0]) / 1000 for q in run.weights}


def account(run: Run, since: float, now: float) -> None:
    """GPU-seconds per queue and time-weighted Jain index of usage / fair share, while jobs wait."""
    if now <= since or not any(run.pending.values()):
        return
    dt = now - since
    usage: dict[str, float] = defaultdict(float)
    for job, _ in run.running.values():
        usage[job.queue] += job.gpus
    for q, g in usage.items():
        run.contended[q] += g * dt
    shares = fair_shares(run)
    ratios = [usage[q] / s for q, s in shares.items() if s > 0]
    run.jain_time += jain(ratios) * dt
    run.busy_time += dt
    if not run.samples or now - run.samples[-1][0] >= run.sample_every:
        run.samples.append((now, {q: usage[q] / s for q, s in shares.items() if s > 0}))


def replay(run: Run) -> float:
    """Event loop; returns wall seconds spent."""
    t = time.perf_counter()
    events: list[tuple[float, int, str]] = []  # completions: (time, attempt, uid)
    arrivals = sorted(run.jobs, key=lambda j: (j.submit, j.uid))
    k = 0
    last = 0.0
    while k < len(arrivals) or events:
        nxt = min(arrivals[k].submit if k < len(arrivals) else math.inf, events[0][0] if events else math.inf)
        now = math.ceil(nxt / run.tick) * run.tick  # one cycle per tick handles all its events
        account(run, last, now)
        last = now
        while events and events[0][0] <= now:
            _, attempt, uid = heapq.heappop(events)
            run.finish(uid, attempt, now)
        while k < len(arrivals) and arrivals[k].submit <= now:
            run.arrive(arrivals[k])
            k += 1
        if any(run.pending.values()):
            run.cycles += 1
            if run.kind == "fifo":
                run.fifo(now, events)
            elif run.kind == "oracle":
                run.oracle(now, events)
            else:
                run.fair(now, events)
    return time.perf_counter() - t


def jain(xs: list[float]) -> float:
    return (sum(xs) ** 2) / (len(xs) * sum(x * x for x in xs)) if xs and any(xs) else 0.0


def report(runs: list[Outcome], seconds: list[float], cmd: str) -> None:
    print(f"`{cmd}`\n")
    weights = runs[0].weights
    wsum = sum(weights.values())
    print(
        "| policy | jobs | avg JCT (h) | p50 JCT (h) | p95 JCT (h) | avg queueing delay (h) | "
        "p95 queueing delay (h) | Jain (usage / fair share, while jobs wait) | reclaimed jobs | lost GPU-h | "
        "agent rejections | cycles | wall s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for run, secs in zip(runs, seconds, strict=True):
        done = [j for j in run.jobs if j.finish is not None and j.start is not None]
        jct = [j.finish - j.submit for j in done]  # type: ignore[operator]
        wait = [j.start - j.submit for j in done]  # type: ignore[operator]
        fairness = run.jain_time / run.busy_time if run.busy_time else 1.0
        p50, p95 = np.percentile(jct, [50, 95]) / 3600
        print(
            f"| {run.name} | {len(done)} | {np.mean(jct) / 3600:.2f} | {p50:.2f} | {p95:.2f} | "
            f"{np.mean(wait) / 3600:.2f} | "
            f"{np.percentile(wait, 95) / 3600:.2f} | {fairness:.3f} | {run.reclaimed} | "
            f"{run.lost / 3600:.0f} | {run.rejected} | {run.cycles} | {secs:.0f} |"
        )
    print(
        "\nPer queue: weight share; per policy the share of GPU-time used while jobs were waiting, and the "
        "average queueing delay (h)\n"
    )
    head = " | ".join(f"{r.name} GPU-time share | {r.name} delay" for r in runs)
    print(f"| queue | weight | weight share | {head} |")
    print("|---|---|---|" + "---|" * (2 * len(runs)))
    for q, w in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0])):
        cells = []
        for run in runs:
            total = sum(run.contended.values()) or 1.0
            waits = [j.start - j.submit for j in run.jobs if j.queue == q and j.start is not None]
            cells.append(
                f"{run.contended.get(q, 0.0) / total:.1%} | {np.mean(waits) / 3600 if waits else 0:.2f}"
            )
        print(f"| {q} | {w} | {w / wsum:.1%} | {' | '.join(cells)} |")


@dataclass
class Outcome:
    """What the report reads of a replay (picklable, so a replay may run in another process)."""

    name: str
    jobs: list[TraceJob]
    weights: dict[str, int]
    reclaimed: int
    lost: float
    rejected: int
    cycles: int
    contended: dict[str, float]
    jain_time: float
    busy_time: float
    samples: list[tuple[float, dict[str, float]]]


def plot(runs: list[Outcome], path: Path) -> None:
    """Per policy a panel: each queue's GPUs used over its fair share through the replay (the
    biggest queues by weight drawn, the rest grey), while jobs waited."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 1, figsize=(11, 2.6 * len(runs)), sharex=True, squeeze=False)
    weights = runs[0].weights
    top = sorted(weights, key=lambda q: (-weights[q], q))[:6]
    for ax, run in zip(axes[:, 0], runs, strict=True):
        days = [t / 86400 for t, _ in run.samples]
        for q in sorted(weights, key=lambda q: (q in top, q)):
            ys = [min(s.get(q, np.nan), 3.0) for _, s in run.samples]
            if q in top:
                ax.plot(days, ys, lw=1.0, label=f"{q} (weight {weights[q]})")
            else:
                ax.plot(days, ys, lw=0.5, color="0.75")
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_ylim(0, 3.05)
        ax.set_ylabel("used / fair share")
        fairness = run.jain_time / run.busy_time if run.busy_time else 1.0
        ax.set_title(f"{run.name}: Jain {fairness:.3f}, {run.reclaimed} reclaims", fontsize=9)
    axes[0, 0].legend(fontsize=7, ncol=3, loc="upper right")
    axes[-1, 0].set_xlabel("days since the first job (samples every 6 h while jobs wait; capped at 3)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


SETTINGS = {"ck": "checkpoint_interval", "h": "reclaim_horizon", "m": "reclaim_margin", "hl": "worth_half_life"}


def variant(args: argparse.Namespace, spec: str) -> tuple[str, argparse.Namespace]:
    """`worth/ck1800/h86400` -> ("worth", args with those settings)."""
    kind, *parts = spec.split("/")
    own = argparse.Namespace(**vars(args))
    for part in parts:
        key = part.rstrip("0123456789.")
        if key not in SETTINGS or key == part:
            raise SystemExit(f"bench/philly.py: --policies: unknown setting {part!r} in {spec!r}")
        setattr(own, SETTINGS[key], float(part[len(key) :]))
    return kind, own


def _replay_policy(args: argparse.Namespace, spec: str) -> tuple[Outcome, float]:
    name, args = variant(args, spec)
    jobs, weights = load(args.limit, args.since, args.until, args.vcs)
    nodes = max(1, round(sum(weights.values()) * args.scale))
    worth = name == "worth"
    run = Run(
        spec,
        jobs,
        weights,
        nodes,
        args.tick,
        reclaim=not args.no_reclaim and name not in ("fair-noreclaim", *LOCAL),
        reclaim_after=args.reclaim_after,
        reclaim_min_runtime=args.reclaim_min_runtime,
        half_life=args.fair_share_half_life if name == "decayed" else args.worth_half_life if worth else 0.0,
        reclaim_limit=args.reclaim_limit if name == "decayed" else 0.0,
        reclaim_interval=args.reclaim_interval,
        rule="worth" if worth else "share",
        protected_fraction=args.protected_fraction,
        margin=args.reclaim_margin,
        horizon=args.reclaim_horizon,
        checkpoint=args.checkpoint_interval,
        kind=name,
    )
    seconds = replay(run)
    out = Outcome(
        run.name,
        run.jobs,
        run.weights,
        run.reclaimed,
        run.lost,
        run.rejected,
        run.cycles,
        dict(run.contended),
        run.jain_time,
        run.busy_time,
        run.samples,
    )
    return out, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limit", type=int, default=None, help="replay only the first N jobs")
    parser.add_argument("--tick", type=float, default=300.0, help="admission cycle granularity, seconds")
    parser.add_argument("--no-reclaim", action="store_true", help="fair share without reclaim")
    parser.add_argument(
        "--reclaim-after", type=float, default=0.0, help="seconds a job waits before it may reclaim (fair)"
    )
    parser.add_argument(
        "--reclaim-min-runtime",
        type=float,
        default=0.0,
        help="seconds a job must have run before it may be reclaimed (fair)",
    )
    parser.add_argument(
        "--fair-share-half-life",
        type=float,
        default=4 * 3600.0,
        help="seconds; the half-life of queue usage (decayed)",
    )
    parser.add_argument(
        "--reclaim-limit",
        type=float,
        default=0.1,
        help="fraction of a queue's running capacity reclaim may take per interval, 0 = no limit (decayed)",
    )
    parser.add_argument(
        "--reclaim-interval", type=float, default=600.0, help="seconds; the rate limit's interval (decayed)"
    )
    parser.add_argument(
        "--policies",
        default="fifo,fair,fair-noreclaim,worth",
        help="any of fifo, fair, fair-noreclaim, decayed, worth, oracle (each may carry /settings)",
    )
    parser.add_argument(
        "--worth-half-life", type=float, default=0.0, help="seconds; decayed usage half-life (worth)"
    )
    parser.add_argument("--protected-fraction", type=float, default=1.0, help="(worth)")
    parser.add_argument("--reclaim-margin", type=float, default=0.1, help="(worth)")
    parser.add_argument("--reclaim-horizon", type=float, default=3600.0, help="seconds (worth)")
    parser.add_argument(
        "--checkpoint-interval", type=float, default=0.0, help="seconds; every job checkpoints this often"
    )
    parser.add_argument("--since", default=None, help="YYYY-MM-DD: replay jobs submitted from this day")
    parser.add_argument("--until", default=None, help="YYYY-MM-DD: replay jobs submitted before this day")
    parser.add_argument("--vcs", default=None, help="replay only these virtual clusters (comma-separated)")
    parser.add_argument("--plot", type=Path, default=None, help="PNG of per-queue share over time")
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="cluster size as a fraction of the sum of VC nodes (below 1 adds contention)",
    )
    parser.add_argument(
        "--parallel", action="store_true", help="replay the policies in parallel processes (one each)"
    )
    args = parser.parse_args(argv)
    try:
        need(DATA / "helios_philly_vc.csv", "philly")
        need(DATA / "pollux_philly.csv", "philly")
    except TraceMissing as exc:
        sys.exit(f"bench/philly.py: {exc}")
    names = args.policies.split(",")
    if args.parallel:
        with ProcessPoolExecutor(max_workers=len(names)) as pool:
            done = list(pool.map(_replay_policy, [args] * len(names), names))
    else:
        done = [_replay_policy(args, name) for name in names]
    runs, seconds = [r for r, _ in done], [t for _, t in done]
    cmd = "python bench/philly.py " + " ".join(sys.argv[1:] if argv is None else argv)
    report(runs, seconds, cmd.strip())
    if args.plot is not None:
        plot(runs, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
