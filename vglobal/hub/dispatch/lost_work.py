"""What a reclaim under the worth rule costs each victim, as its event says: the work it loses,
its run since its last checkpoint (victims/worth.py), so its owner sees why checkpoints pay."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from vglobal.admission import AdmissionResult, Snapshot
from vglobal.admission.victims.worth import WORTH, lost_seconds


def _at(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def lost_work(snapshot: Snapshot, result: AdmissionResult) -> Mapping[str, str]:
    """Per reclaimed job uid (whole or some of its pods), the words its event adds; none unless
    the worth rule decides reclaims."""
    if snapshot.policy.reclaim_rule != WORTH or not (result.reclaims or result.evictions):
        return {}
    uids = {r.victim_uid for r in result.reclaims if not r.preempted}
    uids |= {e.job_uid for e in result.evictions if e.reclaimed}
    out = {}
    for job in snapshot.running:
        if job.uid not in uids:
            continue
        since = job.running_since if job.running_since is not None else job.created
        lost = lost_seconds(job, snapshot.now)
        if job.checkpointed is not None and job.checkpointed >= since:
            basis = f"since its checkpoint at {_at(job.checkpointed)}"
        elif job.checkpoint_interval > 0:
            basis = f"since its last checkpoint (every {job.checkpoint_interval:.0f} s)"
        else:
            basis = f"since it started at {_at(since)} (no checkpoint)"
        out[job.uid] = f"; it loses {lost:.0f} s of work, {basis}"
    return out
