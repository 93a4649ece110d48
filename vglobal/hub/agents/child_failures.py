"""What the hub does when a HyperJob's child fails, as the HyperJob's ``failurePolicy`` says.

- RestartChild (default): the child starts again on the cluster it failed on (the other clusters are
  skipped for ``exclude_for``; after that it may go anywhere, should that cluster stay full);
- MoveChild: it starts again on another cluster (the one it failed on is skipped for ``exclude_for``);
- RestartAll: every child of the HyperJob is stopped and the whole HyperJob admitted again.

Each is a re-queue, which gives the next run a new generation and so fences off the old one. A
child re-queued ``MAX_RESTARTS`` times (its failovers and rejections count too) stays Failed, and
so does its HyperJob.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from vglobal.model import hyperjob
from vglobal.model.reasons import WaitKind
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import hyperjobs as hyperjobs_repo
from vglobal.store.repo.events import NewEvent

MAX_RESTARTS = 3

REASON = "HyperJobFailurePolicy"


@dataclass(frozen=True)
class Restart:
    failed: str  # the child that failed
    requeued: list[str]  # every job re-queued for it
    reason: str


def restart_failed(
    failed: Sequence[str], cluster: str, exclude_for: float, *, session: Session
) -> list[Restart]:
    """Re-queue the HyperJobs' children among ``failed`` (jobs that failed on ``cluster``) as their
    policy says; the others are left Failed."""
    out: list[Restart] = []
    restarted: set[tuple[str, str]] = set()  # HyperJobs restarted whole by this batch
    for uid, kid in sorted(hyperjobs_repo.children_of(failed, session=session).items()):
        if kid.attempts >= MAX_RESTARTS or (kid.namespace, kid.hyperjob) in restarted:
            continue
        until = time.time() + exclude_for
        said = f"child failed on cluster {cluster}"
        if kid.policy == hyperjob.MOVE_CHILD:
            uids = [uid]
            reason = f"{said}: moved to another cluster (failurePolicy MoveChild)"
            bindings_repo.requeue(
                uids, session=session, kind=WaitKind.Rejected, reason=reason, exclude_until=until
            )
        elif kid.policy == hyperjob.RESTART_ALL:
            # Their bindings were locked with the batch's own, all in uid order (to_lock).
            siblings = hyperjobs_repo.siblings(kid.namespace, kid.hyperjob, session=session)
            reason = f"{said}: the whole HyperJob restarts (failurePolicy RestartAll)"
            requeued = bindings_repo.requeue(siblings, session=session, kind=WaitKind.Rejected, reason=reason)
            uids = [r[0] for r in requeued]  # a sibling that finished is left as it is
            restarted.add((kid.namespace, kid.hyperjob))
        else:
            uids = [uid]
            reason = f"{said}: restarted there (failurePolicy RestartChild)"
            bindings_repo.requeue(uids, session=session, kind=WaitKind.Rejected, reason=reason)
            hyperjobs_repo.exclude_others(uid, cluster, until, session=session)
        out.append(Restart(uid, uids, reason))
    return out


def to_lock(failed: Sequence[str], *, session: Session) -> list[str]:
    """Besides the reported jobs, the bindings a batch reporting ``failed`` may re-queue: every
    sibling of a RestartAll child among them. The batch locks them all together in uid order, so
    two agents reporting two children of one HyperJob at once never wait on each other in a cycle
    (the second finds its child re-queued by the first, its report no longer current)."""
    out: list[str] = []
    seen: set[tuple[str, str]] = set()
    for kid in hyperjobs_repo.children_of(failed, session=session).values():
        key = (kid.namespace, kid.hyperjob)
        if kid.policy == hyperjob.RESTART_ALL and key not in seen:
            seen.add(key)
            out += hyperjobs_repo.siblings(kid.namespace, kid.hyperjob, session=session)
    return out


def events(restarts: Sequence[Restart], cluster: str) -> list[NewEvent]:
    return [NewEvent(REASON, r.reason, job_uid=u, cluster=cluster) for r in restarts for u in r.requeued]
