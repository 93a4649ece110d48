"""Which clusters a job may go to: schedulable, allowed by ``vglobal.io/clusters``, selected by its
cluster selector, not backed off from, and serving the job's workload kind. Jobs with the same
annotations share one ``Candidates`` (and the rankings and failure caches keyed by it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from vglobal.admission.explain import lacks_reason
from vglobal.admission.fit.index import IntArray
from vglobal.admission.fit.stages import Stages
from vglobal.admission.snapshot import ClusterSnap, PendingJob
from vglobal.model.served import lacks

BoolArray = np.ndarray[tuple[int], np.dtype[np.bool_]]


def selector_matches(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


@dataclass(frozen=True, slots=True)
class Candidates:
    """Clusters a job may go to, in index order; jobs with the same annotations share one.
    ``note`` names the clusters left out because they lack the job's workload kind."""

    array: IntArray
    ids: tuple[int, ...]
    key: bytes
    note: str = ""
    spread: bool | None = None  # the job's or its queue's binpack (False) / spread (True); None: the hub's
    keep_accel: bool = True  # False: the job tolerates the accelerator rule's taint (stages.py)


class CandidateSets:
    """One Candidates per distinct set of placement annotations, over the cycle's clusters (in
    name order, as ``Clusters`` indexes them)."""

    def __init__(self, snaps: Sequence[ClusterSnap], schedulable: BoolArray, stages: Stages) -> None:
        self.snaps = snaps
        self.schedulable = schedulable
        self.stages = stages
        self._sets: dict[tuple[object, ...], Candidates] = {}
        self._left_out: dict[tuple[object, ...], dict[int, str]] = {}

    def of(self, job: PendingJob) -> Candidates:
        staged = self.stages.filter_key(job)  # taints, data locality, preference wait, placement
        if (
            job.allowed_clusters is None
            and not job.cluster_selector
            and not job.excluded_clusters
            and not job.workload
            and not staged
        ):
            return self.anywhere()
        key = (
            job.allowed_clusters,
            tuple(sorted(job.cluster_selector.items())),
            job.excluded_clusters,
            job.workload,
            staged,
        )
        return self._for(
            key,
            job.allowed_clusters,
            job.cluster_selector,
            job.excluded_clusters,
            job.workload,
            job if staged else None,
        )

    def left_out(self, job: PendingJob) -> dict[int, str]:
        """Per cluster the job's own filters (before the stages') leave out, why (describe).
        Callers only read it: jobs with the same filters share one."""
        allowed, selector = job.allowed_clusters, job.cluster_selector
        key = (allowed, tuple(sorted(selector.items())), job.excluded_clusters, job.workload)
        got = self._left_out.get(key)
        if got is None:
            got = self._left_out[key] = self._leaves_out(job)
        return got

    def _leaves_out(self, job: PendingJob) -> dict[int, str]:
        out = {}
        allowed, selector = job.allowed_clusters, job.cluster_selector
        for i, c in enumerate(self.snaps):
            if not self.schedulable[i]:
                out[i] = "not schedulable (NotReady or cordoned)"
            elif allowed is not None and c.name not in allowed:
                out[i] = "not in the job's allowed clusters"
            elif c.name in job.excluded_clusters:
                out[i] = "skipped for a while after it rejected or lost the job"
            elif not selector_matches(c.labels, selector):
                out[i] = "labels do not match the cluster selector"
            elif lacks(c.labels, job.workload):
                out[i] = lacks_reason([c.name], job.workload)
        return out

    def anywhere(self) -> Candidates:
        return self._for((), None, {}, frozenset())

    def _for(
        self,
        key: tuple[object, ...],
        allowed: frozenset[str] | None,
        selector: Mapping[str, str],
        excluded: frozenset[str],
        workload: str = "",
        job: PendingJob | None = None,
    ) -> Candidates:
        got = self._sets.get(key)
        if got is None:
            ok = [
                bool(self.schedulable[i])
                and (allowed is None or c.name in allowed)
                and c.name not in excluded
                and selector_matches(c.labels, selector)
                for i, c in enumerate(self.snaps)
            ]
            lacking = [c.name for i, c in enumerate(self.snaps) if ok[i] and lacks(c.labels, workload)]
            if lacking:
                ok = [v and c.name not in lacking for v, c in zip(ok, self.snaps, strict=True)]
            note = lacks_reason(lacking, workload) if lacking else ""
            spread, keep_accel = None, True
            if job is not None:  # the stages' filters
                stages = self.stages
                why = {c.name: w for i, c in enumerate(self.snaps)
                       if ok[i] and (w := stages.filtered(i, job))}
                if why:
                    ok = [v and c.name not in why for v, c in zip(ok, self.snaps, strict=True)]
                    more = "; ".join(f"{n} filtered: {w}" for n, w in why.items())
                    note = f"{note}; {more}" if note else more
                if job.prefs.placement:
                    spread = job.prefs.placement == "spread"
                keep_accel = not stages.tolerates_accel(job.prefs)
            arr = np.flatnonzero(np.array(ok, dtype=bool)).astype(np.int64)
            got = self._sets[key] = Candidates(
                arr, tuple(arr.tolist()), arr.tobytes(), note, spread, keep_accel
            )
        return got
