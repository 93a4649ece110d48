"""What a reclaim under the worth rule costs each victim, as its event says: the work it loses,
its run since its last checkpoint (victims/worth.py), so its owner sees why checkpoints pay."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from vglobal.admission import AdmissionResult, Snapshot
from vglobal.admission.victims.worth import WORTH, lost_seconds


def _at(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


Checkpoints = Callable[[Sequence[str]], Mapping[str, float | None]]


def lost_work(
    snapshot: Snapshot,
    result: AdmissionResult,
    checkpoints: Checkpoints | None = None,
    now: float | None = None,
) -> Mapping[str, str]:
    """Per reclaimed job uid (whole or some of its pods), the words its event adds; none unless
    the worth rule decides reclaims. ``checkpoints`` reads the victims' last checkpoints as the
    reclaim is written (one a run reported while the cycle decided is then the one named, and the
    loss counts from it to ``now``); without it, the snapshot's."""
    if snapshot.policy.reclaim_rule != WORTH or not (result.reclaims or result.evictions):
        return {}
    uids = {r.victim_uid for r in result.reclaims if not r.preempted}
    uids |= {e.job_uid for e in result.evictions if e.reclaimed}
    if not uids:
        return {}
    kept = checkpoints(sorted(uids)) if checkpoints is not None else {}
    now = snapshot.now if now is None else now
    out = {}
    for job in snapshot.running:
        if job.uid not in uids:
            continue
        if kept.get(job.uid) is not None:
            job = replace(job, checkpointed=kept[job.uid])
        since = job.running_since if job.running_since is not None else job.created
        lost = lost_seconds(job, now)
        if job.checkpointed is not None and job.checkpointed >= since:
            basis = f"since its checkpoint at {_at(job.checkpointed)}"
        elif job.checkpoint_interval > 0:
            basis = f"since its last checkpoint (every {job.checkpoint_interval:.0f} s)"
        else:
            basis = f"since it started at {_at(since)} (no checkpoint)"
        out[job.uid] = f"; it loses {lost:.0f} s of work, {basis}"
    return out
