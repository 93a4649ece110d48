"""The placement filters over random snapshots: however clusters, taints, datasets and jobs fall,
no job lands on a cluster a NoSchedule taint keeps it from (without a toleration) or, when its data
locality is required, on a cluster without its dataset; and a cluster the filters leave is used
before a job waits for room that exists there."""

from __future__ import annotations

import random

import pytest

from tests.unit.admission.builders import admitted, cluster, gpus, job
from tests.unit.admission.test_admission_stages import Q, policy, prefs
from vglobal.admission import Snapshot, admit


@pytest.mark.parametrize("seed", range(40))
def test_no_job_lands_where_a_filter_keeps_it_out(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"c{i}" for i in range(rng.randint(2, 4))]
    clusters = tuple(cluster(n, rng.randint(1, 3), gpus(8)) for n in names)
    tainted = {n for n in names if rng.random() < 0.4}
    holding = {n for n in names if rng.random() < 0.5}
    pol = policy(
        {
            "taints": {n: ["gpu-only=true:NoSchedule"] for n in sorted(tainted)},
            "datasets": {"imagenet": sorted(holding)},
        }
    )
    jobs, kept_out = [], {}
    for k in range(rng.randint(1, 10)):
        marks: dict[str, str] = {}
        if rng.random() < 0.3:
            marks["tolerations"] = "gpu-only"
        if rng.random() < 0.4:
            marks["datasets"], marks["data_locality"] = "imagenet", "required"
        out = set() if "tolerations" in marks else set(tainted)
        if "datasets" in marks:
            out |= set(names) - holding
        kept_out[f"j{k}"] = out
        jobs.append(job(f"j{k}", "q", gpus(rng.choice([2, 4, 8])), created=float(k), prefs=prefs(**marks)))
    got = admitted(admit(Snapshot(0.0, Q, clusters, tuple(jobs), policy=pol)))
    for uid, where in got.items():
        assert where not in kept_out[uid], (seed, uid, where, kept_out[uid])
    # a job the filters leave somewhere, alone on empty clusters, is admitted there
    for j in jobs:
        allowed = set(names) - kept_out[j.uid]
        alone = admitted(admit(Snapshot(0.0, Q, clusters, (j,), policy=pol)))
        assert (j.uid in alone) == bool(allowed), (seed, j.uid, allowed, alone)
