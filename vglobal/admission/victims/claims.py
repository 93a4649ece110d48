"""Claims on room freed by victims: a victim is taken only for a job admitted into the room it frees.

Whenever victims are taken for a job X (whole-job reclaim, preemption, single pods), the cycle
makes a claim: X, the cluster, the nodes the victims ran on (and, for whole-job reclaim, the nodes
X's gang is packed onto with them). A cycle carries the claims it was given
(Snapshot.claims) until X's pods bind or the claim expires (AdmissionPolicy.claim_timeout), and
returns them with the new ones (AdmissionResult.claims), so admission stays pure and the hub and
the simulator keep them alike. While a claim stands:
- X is decided before any other job, on the claimed cluster only: admitted if it fits there now,
  else it waits, takes no further victim, and the claimed nodes are closed to everyone else this
  cycle (the victims' pods may not be reported gone yet: their room counts as X's all the same);
- its victims, re-queued, wait: they are never re-admitted ahead of the job they were taken for.
Without it, a reclaimer that waits for its victims to stop finds their room given back to them
(their queue may come first in fair order) and reclaims again, for ever.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import cast

from vglobal.admission.fit.gang import Pairs, PreparedGang
from vglobal.admission.fit.placement import Clusters, Placement
from vglobal.admission.ledger import Ledger
from vglobal.admission.snapshot import Claim, PendingJob, RunningJob, Snapshot, Wait, job_ref, uid_of
from vglobal.model.reasons import WaitKind


def _named_jobs(pending: Sequence[PendingJob], named: set[str]) -> dict[str, PendingJob]:
    """The pending jobs of these uids, found in one C-level pass: at a million pending jobs a
    Python loop over them costs half a second a cycle."""
    found = compress(pending, map(named.__contains__, map(uid_of, pending)))
    return {p.uid: p for p in found}


class Claims:
    """The claims of one cycle: those it was given that still stand, and those it makes."""

    def __init__(
        self, snapshot: Snapshot, ledger: Ledger, pending: Mapping[str, PendingJob] | None = None
    ) -> None:
        """``pending``: the snapshot's pending jobs by uid, where the caller keeps them."""
        now = snapshot.now
        self._expires = now + snapshot.policy.claim_timeout
        self._ledger = ledger
        # Claims whose job waits: decided first this cycle (see the module's doc).
        self.standing: dict[str, Claim] = {}
        self._carried: dict[str, Claim] = {}  # all that still stand, by their job
        # The pending jobs the claims name (as claimants or victims), found in one pass: at a
        # backlog of millions a set or a name of every pending job would cost more than the cycle.
        named = {c.for_uid for c in snapshot.claims} | {v for c in snapshot.claims for v in c.victims}
        if not named:
            self._pending: dict[str, PendingJob] = {}
        elif pending is None:
            self._pending = _named_jobs(snapshot.pending, named)
        else:
            self._pending = {uid: p for uid in named if (p := pending.get(uid)) is not None}
        self._named = named
        if snapshot.claims:
            pending = self._pending
            unbound = {r.uid for r in snapshot.running if not r.placements}
            for c in snapshot.claims:
                if c.expires <= now:
                    continue
                if c.for_uid in pending:
                    self.standing[c.for_uid] = c
                elif c.for_uid not in unbound:
                    continue  # its pods bound (or it ended): the room is its own now
                self._carried[c.for_uid] = c
        self._open = dict(self.standing)  # standing claims whose job is not decided yet
        # victim uid -> the claim it waits behind (its job admitted or not, until its pods bind)
        self.victim_of = {v: c for c in self._carried.values() for v in c.victims}
        self.made: list[Claim] = []
        self._snap = snapshot
        self._names: dict[str, str] = {}  # uid -> namespace/name, made when a reason names a job

    def pending_queues(self) -> set[str]:
        """The queues of the pending jobs the claims name: only their look-backs hold claimants
        and victims to settle."""
        return {p.queue for p in self._pending.values()}

    def _name(self, uid: str) -> str:
        """A job of this cycle as reasons name it (namespace/name; its uid if it is not here)."""
        names = self._names
        got = names.get(uid)
        if got is None:
            job: PendingJob | RunningJob | None = self._snap.running_job(uid) or self._pending.get(uid)
            if job is None and uid not in self._named:  # not named by the claims handed in (none
                # is, today): look for it
                job = next((j for j in self._snap.pending if j.uid == uid), None)
            # a job the claims name that is neither pending nor running any more: its uid
            got = names[uid] = uid if job is None else job_ref(job)
        return got

    def make(self, for_uid: str, cluster: str, nodes: Iterable[str], victims: Iterable[str]) -> None:
        """Victims were taken for ``for_uid`` on ``cluster``: their room is claimed for it."""
        claim = Claim(for_uid, cluster, tuple(sorted(set(nodes))), tuple(victims), self._expires)
        self.made.append(claim)
        self._ledger.undo_with(self.made.pop)

    def drop(self, claim: Claim) -> None:
        """The claim no longer holds (its job cannot go to the cluster): the room is free to all."""
        self._carried.pop(claim.for_uid, None)
        self._open.pop(claim.for_uid, None)

    def settled(self, claim: Claim) -> None:
        """The claim's job was decided: admitted into the room, or waiting with the room closed."""
        self._open.pop(claim.for_uid, None)

    def rows_of_others(self, claim: Claim, node_col: Mapping[str, int], shared: bool = True) -> list[int]:
        """The node rows, on the claim's cluster, of the other standing claims not decided yet;
        with ``shared`` False, not those the claim names too."""
        return sorted(
            {
                node_col[n]
                for other in self._open.values()
                if other.for_uid != claim.for_uid and other.cluster == claim.cluster
                for n in other.nodes
                if n in node_col and (shared or n not in claim.nodes)
            }
        )

    def result(self) -> tuple[Claim, ...]:
        """What stands after the cycle: the carried claims, a job's newest claim replacing its old."""
        out = dict(self._carried)
        for c in self.made:
            out[c.for_uid] = c
        return tuple(out.values())

    def waiting(self, claim: Claim, now: float) -> Wait:
        """The wait of a claim's job whose room is not free yet."""
        victims = ", ".join(self._name(v) for v in claim.victims)
        return Wait(
            WaitKind.Reclaiming,
            f"waiting for its victims to leave {claim.cluster} ({victims}): the room "
            f"on {', '.join(claim.nodes)} is claimed for it for {max(claim.expires - now, 0):.0f}s more",
        )

    def behind(self, claim: Claim) -> Wait:
        """The wait of a victim while the room it left is claimed."""
        return Wait(
            WaitKind.Claimed,
            f"its room on {claim.cluster} is claimed by job {self._name(claim.for_uid)}, which it was "
            "taken for, "
            "until that job's pods bind",
        )


@dataclass(frozen=True, slots=True)
class _Room:
    total_pairs: Pairs  # all a commit reads of the gang it places


def close(clusters: Clusters, c: int, rows: Iterable[int]) -> None:
    """Cluster c's node ``rows`` are claimed: nobody else goes there this cycle. Committed as a
    placement that takes all they have free (free only shrinks: what the cycle learnt holds)."""
    free, size = clusters.rows[c], clusters.index.size
    rows = sorted(set(rows))
    total = [sum(col) for col in zip(*(free[r] for r in rows), strict=True)] if rows else [0] * size
    room = cast(PreparedGang, _Room(tuple((r, v) for r, v in enumerate(total) if v)))
    clusters.commit(c, Placement({r: [0] * size for r in rows}), room)
