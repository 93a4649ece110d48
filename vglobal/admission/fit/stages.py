"""Placement stages over clusters, as a node scheduler filters and scores nodes.

Filters (a cluster that fails one is no candidate, candidates.py asks ``admits``):
  - taints: a cluster's NoSchedule taint keeps out a job that does not tolerate it;
  - data locality required: only clusters holding every dataset the job names;
  - preference wait: while a job has waited less than its ``vglobal.io/preference-wait``, only its
    preferred clusters.
Scores, in this order (``groups``: the clusters are tried group after group, the policy's binpack
or spread choosing within a group):
  - taints: a PreferNoSchedule taint the job does not tolerate puts the cluster last (only when the
    untainted ones are full); by default a cluster offering accelerators bears one that jobs asking
    for an accelerator tolerate, and others by a toleration of their own (--keep-accelerators;
    ``Clusters`` ranks by ``kept_for_accelerators`` for jobs the other scores leave alone);
  - ordered preference (``vglobal.io/cluster-preference``): listed clusters first, in order;
  - data locality preferred: clusters holding the job's datasets first;
  - cost (the placement file's per cluster and resource): the gang's hourly cost, lowest first.

A job runs *away* when it lands outside its first preferred cluster or on a cluster whose
PreferNoSchedule taint it does not tolerate; victim selection takes away runs first among equals.
Pure: the waiting time comes from the snapshot's ``now``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from vglobal.admission.snapshot import ClusterSnap, PendingJob, RunningJob, Snapshot
from vglobal.model.errors import Problems
from vglobal.model.placement_config import PlacementConfig
from vglobal.model.placement_prefs import (
    ACCELERATOR_TAINT,
    DATASET_LABEL_PREFIX,
    TAINTS_KEY,
    PlacementPrefs,
    Taint,
    parse_taints,
)
from vglobal.model.resources import is_accelerator

_FALSE = ("", "false", "0", "no")


def _ordinal(n: int) -> str:
    return f"{n}{'st' if n == 1 else 'nd' if n == 2 else 'rd' if n == 3 else 'th'}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One cluster's answer for one job: filtered (why) or its place in the order."""

    cluster: str
    filtered: str = ""  # why it is no candidate
    key: tuple[int, int, int, float] = (0, 0, 0, 0.0)  # (taint tier, preference, locality, cost)
    cost: float | None = None
    score: float = 0.0


class Stages:
    """The stages over one cycle's clusters (in name order, as ``Clusters`` indexes them)."""

    def __init__(
        self, snaps: Sequence[ClusterSnap], config: PlacementConfig, keep_accelerators: bool, now: float
    ) -> None:
        self.config, self.now = config, now
        self.names = [c.name for c in snaps]
        self.col = {n: i for i, n in enumerate(self.names)}
        p = Problems()  # a malformed cluster label adds no taint (agents' labels are not refused)
        self.taints: list[tuple[Taint, ...]] = [
            (*config.taints.get(c.name, ()), *parse_taints(p, "", c.labels.get(TAINTS_KEY, "")))
            for c in snaps
        ]
        # the default rule's taint (ACCELERATOR_TAINT), apart: jobs asking for an accelerator
        # tolerate it, and it makes no run away (a run that took a GPU cluster's spare room)
        self.accel = [
            keep_accelerators
            and any(v > 0 and is_accelerator(r) for n in c.nodes for r, v in n.allocatable.items())
            for c in snaps
        ]
        self.datasets: list[frozenset[str]] = []
        for c in snaps:
            held = {d for d, where in config.datasets.items() if c.name in where}
            held |= {
                k[len(DATASET_LABEL_PREFIX) :]
                for k, v in c.labels.items()
                if k.startswith(DATASET_LABEL_PREFIX) and v.strip().lower() not in _FALSE
            }
            self.datasets.append(frozenset(held))
        self.no_schedule = any(t.effect == "NoSchedule" for ts in self.taints for t in ts)
        self.prefer_no = any(t.effect == "PreferNoSchedule" for ts in self.taints for t in ts)
        self.has_costs = bool(config.costs)
        self.any_accel = any(self.accel)
        # Per cycle, the answers of ``groups`` and ``placed_line`` by what they read of a job
        # (``_reads``): most jobs read alike, and both weigh every candidate cluster.
        self._groups: dict[tuple[object, ...], list[list[int]]] = {}
        self._placed: dict[tuple[object, ...], str] = {}

    def _reads(self, job: PendingJob) -> tuple[object, ...]:
        """All that the filters, scores and verdicts read of a job: jobs alike here get the same
        answers."""
        return (
            job.prefs,
            job.preferred_clusters,
            self.waiting_for_preferred(job),
            any(is_accelerator(r) for r in job.request),
            job.request if self.has_costs else None,
        )

    def kept_for_accelerators(self, c: int, asks_accel: bool, keep: bool = True) -> bool:
        """Whether the default rule's taint puts cluster c last for a job (``keep``: the job does
        not tolerate it; ``asks_accel``: it asks for an accelerator, which tolerates it)."""
        return keep and self.accel[c] and not asks_accel

    def tolerates_accel(self, prefs: PlacementPrefs) -> bool:
        """The job (or its queue) tolerates the default rule's taint."""
        return self.any_accel and bool(prefs.tolerations) and prefs.tolerates(ACCELERATOR_TAINT)

    # --- filters -------------------------------------------------------------------------------
    def waiting_for_preferred(self, job: PendingJob) -> bool:
        """The job still waits for one of its preferred clusters (no spillover yet)."""
        wait = job.prefs.wait
        return bool(wait and job.preferred_clusters and self.now - job.waiting_since < wait)

    def filter_key(self, job: PendingJob) -> tuple[object, ...]:
        """What the filters read of the job (() when they pass every cluster): candidates with the
        same key are the same."""
        prefs = job.prefs
        out: tuple[object, ...] = ()
        if self.no_schedule and prefs.tolerations:
            out += (tuple(t.text for t in prefs.tolerations),)
        elif self.no_schedule:
            out += ("untolerated",)
        if self.tolerates_accel(prefs):
            out += ("accelerators tolerated",)
        if prefs.required:
            out += ("data", prefs.datasets)
        if self.waiting_for_preferred(job):
            out += ("wait", job.preferred_clusters)
        if prefs.placement:
            out += ("placement", prefs.placement)
        return out

    def filtered(self, c: int, job: PendingJob) -> str:
        """Why cluster c is no candidate for the job by these stages ("" when it is one)."""
        prefs = job.prefs
        for t in self.taints[c]:
            if t.effect == "NoSchedule" and not prefs.tolerates(t):
                return f"taint {t.text} (no toleration)"
        if prefs.required:
            missing = [d for d in prefs.datasets if d not in self.datasets[c]]
            if missing:
                return f"data locality required: does not hold dataset {', '.join(missing)}"
        if self.waiting_for_preferred(job) and self.names[c] not in job.preferred_clusters:
            preferred = ", ".join(job.preferred_clusters)
            return f"not preferred: the job waits up to {_minutes(job.prefs.wait)} for {preferred} first"
        return ""

    # --- scores --------------------------------------------------------------------------------
    def orders(self, job: PendingJob) -> bool:
        """Whether the scores may order this job's candidates otherwise than the plain policy
        (with its preference first) does."""
        prefs = job.prefs
        return self.prefer_no or self.has_costs or bool(prefs.datasets and not prefs.required)

    def _untolerated_prefer(self, c: int, prefs: PlacementPrefs, asks_accel: bool, preferred: bool) -> str:
        for t in self.taints[c]:
            if t.effect == "PreferNoSchedule" and not prefs.tolerates(t):
                return t.text
        if not preferred and self.kept_for_accelerators(c, asks_accel, not self.tolerates_accel(prefs)):
            return ACCELERATOR_TAINT.text
        return ""

    def key(self, c: int, job: PendingJob) -> tuple[int, int, int, float]:
        prefs, name = job.prefs, self.names[c]
        preferred = job.preferred_clusters
        asks_accel = any(is_accelerator(r) for r in job.request)
        tier = 1 if self._untolerated_prefer(c, prefs, asks_accel, name in preferred) else 0
        rank = preferred.index(name) if name in preferred else len(preferred)
        far = int(bool(prefs.datasets) and any(d not in self.datasets[c] for d in prefs.datasets))
        cost = self.config.hourly_cost(name, job.request) if self.has_costs else None
        return (tier, rank, far, cost or 0.0)

    def groups(self, job: PendingJob, ids: Sequence[int]) -> list[list[int]]:
        """The candidates in groups tried in turn: equal keys share a group, where the placement
        policy (binpack or spread) chooses. Callers only read the lists."""
        memo = (self._reads(job), tuple(ids))
        got = self._groups.get(memo)
        if got is None:
            got = self._groups[memo] = self._grouped(job, ids)
        return got

    def _grouped(self, job: PendingJob, ids: Sequence[int]) -> list[list[int]]:
        keyed = sorted((self.key(c, job), c) for c in ids)
        out: list[list[int]] = []
        last: tuple[int, int, int, float] | None = None
        for k, c in keyed:
            if k != last:
                out.append([])
                last = k
            out[-1].append(c)
        return out

    # --- away runs -----------------------------------------------------------------------------
    def away(self, c: int, preferred: Sequence[str], prefs: PlacementPrefs) -> str:
        """Why a run on cluster c is away from where the job prefers to run ("" when it is not)."""
        if preferred and self.names[c] != preferred[0]:
            return f"not its first preferred cluster ({preferred[0]})"
        for t in self.taints[c]:
            if t.effect == "PreferNoSchedule" and not prefs.tolerates(t):
                return f"cluster {self.names[c]} is tainted {t.text}"
        return ""

    def away_running(self, running: Sequence[RunningJob]) -> list[RunningJob]:
        """The running jobs with ``away`` set where they run away (the others as they are)."""
        if not self.prefer_no and not any(j.preferred for j in running):
            return list(running)
        out = []
        for j in running:
            c = self.col.get(j.cluster)
            if c is not None and (j.preferred or self.prefer_no) and self.away(c, j.preferred, j.prefs):
                j = replace(j, away=True)
            out.append(j)
        return out

    # --- describe ------------------------------------------------------------------------------
    def verdicts(self, job: PendingJob, candidates: Mapping[int, str]) -> list[Verdict]:
        """Per cluster (name order): filtered and why, or its key and a score in [0, 1] (1 is
        best; the mean of the parts that apply: taints, preference, locality, cost).
        ``candidates`` maps the clusters the job's other filters (allowed clusters, selector,
        back-off, kind) leave out to why."""
        out: list[Verdict] = []
        costs: dict[int, float] = {}
        for c in range(len(self.names)):
            why = candidates.get(c) or self.filtered(c, job)
            if why:
                out.append(Verdict(self.names[c], filtered=why))
                continue
            k = self.key(c, job)
            if self.has_costs:
                costs[c] = k[3]  # 0 where the file gives no cost
            out.append(Verdict(self.names[c], key=k))
        cheapest = min(costs.values(), default=0.0)
        n = len(job.preferred_clusters)
        for i, v in enumerate(out):
            if v.filtered:
                continue
            tier, rank, far, _ = v.key
            parts = [1.0 - tier]
            if n:
                parts.append((n - rank) / n)
            if job.prefs.datasets:
                parts.append(1.0 - far)
            cost = costs.get(self.col[v.cluster])
            if costs:
                parts.append(1.0 if not cost else cheapest / cost)
            if self.config.costs.get(v.cluster) is None:
                cost = None  # shown only where the file gives one
            out[i] = Verdict(v.cluster, key=v.key, cost=cost, score=sum(parts) / len(parts))
        return out

    def weighs(self, job: PendingJob) -> bool:
        """Whether the stages had more to weigh for the job than the plain policy."""
        return bool(job.prefs or job.preferred_clusters or self.config or self.prefer_no or self.no_schedule)

    def placed_line(self, c: int, job: PendingJob, candidates: Mapping[int, str]) -> str:
        """Cluster c's line of ``verdict_lines``: the verdict of the cluster the job went to."""
        memo = (c, self._reads(job), tuple(candidates.items()))
        got = self._placed.get(memo)
        if got is None:
            head = f"{self.names[c]}: "
            lines = self.verdict_lines(job, candidates)
            got = self._placed[memo] = next((line for line in lines if line.startswith(head)), "")
        return got

    def verdict_lines(self, job: PendingJob, candidates: Mapping[int, str]) -> list[str]:
        """``verdicts`` as describe shows them, in the order clusters are tried."""
        got = self.verdicts(job, candidates)
        # clusters of equal keys are tried together (binpack or spread chooses): the same turn
        turns = {k: i + 1 for i, k in enumerate(sorted({v.key for v in got if not v.filtered}))}
        place = {v.cluster: turns[v.key] for v in got if not v.filtered}
        lines = []
        for v in sorted(got, key=lambda v: (bool(v.filtered), place.get(v.cluster, 0), v.cluster)):
            if v.filtered:
                lines.append(f"{v.cluster}: filtered: {v.filtered}")
                continue
            tier, rank, far, _ = v.key
            why = []
            if v.cost is not None:
                why.append(f"cost {v.cost:.2f}/h")
            if rank < len(job.preferred_clusters):
                why.append(f"preference {_ordinal(rank + 1)}")
            elif job.preferred_clusters:
                why.append("not preferred")
            if job.prefs.datasets:
                why.append("data not local" if far else "data local")
            if tier:
                asks = any(is_accelerator(r) for r in job.request)
                c = self.col[v.cluster]
                pref = v.cluster in job.preferred_clusters
                why.append(f"taint {self._untolerated_prefer(c, job.prefs, asks, pref)} (tried last)")
            more = f" ({', '.join(why)})" if why else ""
            lines.append(f"{v.cluster}: score {v.score:.2f}, tried {_ordinal(place[v.cluster])}{more}")
        return lines


def with_away(snapshot: Snapshot) -> Snapshot:
    """The snapshot with its running jobs that run away from where they prefer marked (``away``):
    victim selection takes them first among equals."""
    tainted = bool(snapshot.policy.placement_config.taints)
    tainted = tainted or any(TAINTS_KEY in c.labels for c in snapshot.clusters)
    if not tainted and not any(j.preferred for j in snapshot.running):
        return snapshot
    snaps = sorted({c.name: c for c in snapshot.clusters}.values(), key=lambda c: c.name)
    stages = Stages(snaps, snapshot.policy.placement_config, False, snapshot.now)
    return replace(snapshot, running=tuple(stages.away_running(snapshot.running)))


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f}m" if seconds >= 60 else f"{seconds:.0f}s"
