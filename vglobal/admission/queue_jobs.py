"""One queue's pending jobs as a cycle reads them: how many ask each request, which gangs they
name, which are HyperJobs' children, and the others in queue order.

Derived afresh from the queue's jobs (``summarise``), or from the last cycle's summary and what
changed since (``update``): the jobs gone and the jobs new, found by identity. Either way the result
is the same, but for the order in which distinct requests and gangs are listed, which admission
only uses to number them within a cycle.
"""

from __future__ import annotations

from bisect import insort
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import attrgetter, is_not
from typing import TypeVar

from vglobal.admission.share.order import queue_order
from vglobal.admission.snapshot import Gang, PendingJob
from vglobal.model.resources import ResourceVector

# Past this many new or gone jobs in a queue (or a sixteenth of it), deriving afresh is cheaper.
_CHANGED_AT_MOST = 256
_T = TypeVar("_T")
_request, _gang, _group = attrgetter("request"), attrgetter("gang"), attrgetter("group")


def order_key(job: PendingJob) -> tuple[int, float, str]:
    """share/order.py's queue order as one key: priority (highest first), creation, uid."""
    return (-job.priority, job.created, job.uid)


@dataclass(slots=True)
class QueueJobs:
    jobs: Sequence[PendingJob]  # what this was derived from (held: its jobs' identities stay theirs)
    ids: set[int]  # their identities
    requests: dict[int, tuple[ResourceVector, int]]  # by the request's identity: it, jobs asking it
    gangs: dict[int, tuple[Gang, int]]  # by the gang's identity: it, jobs naming it
    grouped: list[PendingJob]  # HyperJobs' children, in the jobs' order
    lone: Sequence[PendingJob]  # the others, in the jobs' order
    ordered: list[PendingJob]  # the others in queue order


def summarise(jobs: Sequence[PendingJob], ids: set[int] | None = None) -> QueueJobs:
    """The queue's summary derived from its jobs alone (``ids``: their identities, if known)."""
    # C-level passes (a new leader's first cycle summarises every pending job): the jobs share a
    # few request and gang objects, counted by identity in the order they first come.
    requests = _counted(list(map(_request, jobs)))
    gangs = _counted(list(map(_gang, jobs)))
    grouped = list(compress(jobs, map(is_not, map(_group, jobs), repeat(None))))
    lone = _lone(jobs, grouped)
    ids = set(map(id, jobs)) if ids is None else ids
    return QueueJobs(jobs, ids, requests, gangs, grouped, lone, queue_order(lone))


def update(prev: QueueJobs, jobs: Sequence[PendingJob]) -> QueueJobs:
    """The queue's summary from the last one and the jobs it holds now."""
    return changed(prev, jobs)[0]


def changed(
    prev: QueueJobs, jobs: Sequence[PendingJob]
) -> tuple[QueueJobs, Sequence[PendingJob], Sequence[PendingJob]]:
    """update, and the jobs gone from the queue and new in it since ``prev`` (all of both when it
    was derived afresh). Found by identity, the gone are looked for from the head of the last
    order (where admitted jobs were) and the new from the tail of the jobs (where the dispatch
    cache appends them): a steady cycle's few changes cost about their own number, plus one
    C-level pass making the jobs' identity set."""
    ids = set(map(id, jobs))
    gone_ids = prev.ids - ids
    new_count = len(ids) - (len(prev.ids) - len(gone_ids))
    most = max(_CHANGED_AT_MOST, len(jobs) // 16)
    if new_count > most or len(gone_ids) > most or len(ids) != len(jobs):
        return summarise(jobs, ids), prev.jobs, jobs
    new = _found(reversed(jobs), prev.ids, new_count)
    new.reverse()  # in the jobs' order
    grouped = prev.grouped
    gone = [job for job in grouped if id(job) in gone_ids]
    ordered = prev.ordered
    if len(gone) < len(gone_ids):  # some of the order's jobs went: take them out by position
        at = _positions(ordered, gone_ids, len(gone_ids) - len(gone))
        gone += [ordered[i] for i in at]
        ordered = _without(ordered, at)
    elif new:
        ordered = ordered.copy()
    requests, gangs = dict(prev.requests), dict(prev.gangs)
    for job in gone:
        _count(requests, job.request, -1)
        _count(gangs, job.gang, -1)
    for job in new:
        _count(requests, job.request, 1)
        _count(gangs, job.gang, 1)
    if grouped or any(job.group is not None for job in new):
        grouped = [job for job in jobs if job.group is not None]  # rare: kept in the jobs' order
    for job in new:
        if job.group is None:
            insort(ordered, job, key=order_key)
    return QueueJobs(jobs, ids, requests, gangs, grouped, _lone(jobs, grouped), ordered), gone, new


def _counted(items: list[_T]) -> dict[int, tuple[_T, int]]:
    """Per distinct object (by identity, in the order first seen): it, and how often it comes."""
    first = dict(zip(map(id, items), items, strict=True))
    return {key: (first[key], n) for key, n in Counter(map(id, items)).items()}


def _found(jobs: Iterable[PendingJob], known: set[int], count: int) -> list[PendingJob]:
    """The first ``count`` jobs whose identities are not known."""
    out: list[PendingJob] = []
    if count:
        for job in jobs:
            if id(job) not in known:
                out.append(job)
                if len(out) == count:
                    break
    return out


def _without(ordered: list[PendingJob], at: list[int]) -> list[PendingJob]:
    """A copy of the order without the jobs at these ascending positions, in slices (deleting one
    by one would move the rest of a long queue once per job)."""
    out: list[PendingJob] = []
    start = 0
    for i in at:
        out += ordered[start:i]
        start = i + 1
    out += ordered[start:]
    return out


def _positions(ordered: list[PendingJob], wanted: set[int], count: int) -> list[int]:
    """Where the first ``count`` jobs of these identities stand in the order (ascending)."""
    out: list[int] = []
    for i, job in enumerate(ordered):
        if id(job) in wanted:
            out.append(i)
            if len(out) == count:
                break
    return out


def _lone(jobs: Sequence[PendingJob], grouped: list[PendingJob]) -> Sequence[PendingJob]:
    return [job for job in jobs if job.group is None] if grouped else jobs


def _count(counts: dict[int, tuple[_T, int]], item: _T, step: int) -> None:
    had = counts.get(id(item))
    n = step if had is None else had[1] + step
    if n:
        counts[id(item)] = (item, n)
    else:
        del counts[id(item)]
