"""Each cluster's placement verdict for one job, as ``describe job`` shows it: filtered and why
(its allowed clusters, selector, back-off and kind, then the placement stages' filters), or its
score and the turn it is tried in (stages.py). Pure: the hub gives the clusters and the time."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vglobal.admission.fit.candidates import CandidateSets
from vglobal.admission.fit.stages import Stages
from vglobal.admission.snapshot import AdmissionPolicy, ClusterSnap, PendingJob


def verdict_lines(
    clusters: Sequence[ClusterSnap], job: PendingJob, policy: AdmissionPolicy, now: float
) -> list[str]:
    snaps = sorted({c.name: c for c in clusters}.values(), key=lambda c: c.name)
    stages = Stages(snaps, policy.placement_config, policy.keep_accelerators, now)
    schedulable = np.array([c.schedulable for c in snaps], dtype=bool)
    return stages.verdict_lines(job, CandidateSets(snaps, schedulable, stages).left_out(job))
