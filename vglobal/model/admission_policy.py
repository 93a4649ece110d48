"""The admission policy: the settings global admission reads besides its input, with the one
set of defaults the hub, the simulator and ``vglobal sim`` all start from (vglobal.admission
carries it in its Snapshot; vglobal.config's hub flags take their defaults from it). It sits in the
model so the settings can derive from it without importing admission."""

from __future__ import annotations

from dataclasses import dataclass, replace

from vglobal.model.placement_config import NO_CONFIG, PlacementConfig

PLACEMENTS = ("binpack", "spread")
RECLAIM_RULES = ("share", "worth")


@dataclass(frozen=True, slots=True)
class AdmissionPolicy:
    placement: str = "binpack"  # or "spread": which fitting cluster a job goes to
    # A job asking for no accelerator goes to a cluster without any while one holds it (binpack or
    # spread among those first): GPU clusters stay free for the work that needs them.
    keep_accelerators: bool = True
    # Seconds a gang waits before it holds the capacity it needs against its queue's later jobs.
    starvation_after: float = 600.0
    # Seconds a job must have been pending before it may reclaim (0 = at once). Since a reclaimed
    # job's waiting time starts again, this also damps reclaim ping-pong as deserved shares move.
    reclaim_after: float = 0.0
    # Seconds a job must have run (since its admission) before it may be reclaimed (0 = at once):
    # without it, long jobs restart from scratch again and again as deserved shares move.
    reclaim_min_runtime: float = 0.0
    # Jobs per leaf queue examined this cycle, in queue order (0 = all). The rest wait a turn with
    # a reason saying so: a queue with a backlog of tens of thousands costs a cycle no more than
    # its first `queue_lookback` jobs, and those are the ones it would admit first anyway.
    queue_lookback: int = 1000
    # Admissions this cycle at most (0 = no limit). Once reached, the jobs not yet looked at wait a
    # turn with a reason saying so. Admissions come in fair order, so the budget only spreads a
    # burst over cycles; what it buys is a bounded cycle: the leader lock is checked, new jobs are
    # looked at and the first admissions of a burst reach their clusters a cycle apart.
    max_admissions: int = 5000
    # Seconds (0 = instantaneous fair share, as without it): queues are ordered by their usage
    # decayed with this half-life (QueueSnap.usage) plus what this cycle admits, against deserved.
    fair_share_half_life: float = 0.0
    # Reclaim takes from a queue, per resource, at most this fraction of what it ran at the start
    # of the rate-limit interval (its allocation plus QueueSnap.reclaimed); 0 = no limit.
    reclaim_limit: float = 0.0
    # Seconds a claim on room freed by victims stands for the job they were taken for (until its
    # pods bind): meanwhile nobody else is admitted into that room, the victims included.
    claim_timeout: float = 120.0
    # The placement file (--placement-config): cluster taints, dataset locations, costs.
    placement_config: PlacementConfig = NO_CONFIG
    # Which reclaim rule: "share" takes any victim Volcano's reclaim rule allows; "worth" also
    # weighs each victim's lost work against what the reclaimer gains (admission/victims/worth.py).
    reclaim_rule: str = "share"
    # With "worth": a queue whose share (decayed when a half-life is set) is below this fraction of
    # its deserved is never a victim (Armada's protectedFractionOfFairShare).
    protected_fraction: float = 1.0
    # With "worth": a queue within this fraction of its deserved share is left alone, as victim
    # (share up to 1 + margin) and as reclaimer (share from 1 - margin).
    reclaim_margin: float = 0.1
    # With "worth": seconds the reclaimer's gain in share is counted over; victims go only while the
    # work they lose is at most the reclaimed room held this long.
    reclaim_horizon: float = 3600.0


# The hub's defaults (vglobal.config; the simulator's Rules and `vglobal sim run`, which stand for
# the hub, take them too) where they differ from the admission core's: reclaim by the "worth" rule
# with a 5 % margin and a 4 h horizon. Over the whole Philly trace it beat FIFO on both mean JCT and
# Jain with a twentieth of Volcano's rule's reclaims (bench/RESULTS.md). The core keeps Volcano's
# rule, which its ported tests state.
HUB_POLICY = replace(AdmissionPolicy(), reclaim_rule="worth", reclaim_margin=0.05, reclaim_horizon=4 * 3600.0)
