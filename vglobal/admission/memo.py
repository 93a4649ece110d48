"""What one cycle derived that the next may take over where its inputs are the same: the loop that
runs admission keeps a Memo between cycles and hands it to each (``admit(snapshot, memo)``).

A memo changes what a cycle costs, never what it decides: every entry is keyed by exactly the
input it was derived from (the same job objects, held here so their identities stay theirs; the
same bytes), and an input that differs is derived afresh. A cycle with few changes therefore pays
for what changed, not for the backlog: a queue whose jobs are the ones it had keeps their order,
and a parent whose children's water-filling inputs are unchanged keeps its shares. Jobs handed in
per queue (snapshot.PendingByQueue) go further: a queue handed the same tuple keeps its whole
summary, and a changed queue's is updated by its jobs gone and new (queue_jobs.py), so neither
the grouping nor the order of a large backlog is derived again. Per unchanged node object a
cluster's node rows are taken over (fit/node_rows.py), and so are a leaf's running jobs in victim
order and the queue figures' vectors. Only what the last cycle used is kept, so the memo's size
follows the snapshot's.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from vglobal.admission.fit.index import FloatArray, ResourceIndex
from vglobal.admission.fit.node_rows import NodeRows
from vglobal.admission.queue_jobs import QueueJobs, changed, summarise
from vglobal.admission.share.order import queue_order
from vglobal.admission.share.water import water_fill
from vglobal.admission.snapshot import PendingJob, RunningJob, uid_of
from vglobal.model.resources import ResourceVector

UIntArray = npt.NDArray[np.uint64]
VictimOrder = Callable[[list[RunningJob]], list[RunningJob]]


@dataclass(slots=True)
class _Order:
    ids: UIntArray  # the queue's jobs' identities, in the snapshot's order
    jobs: Sequence[PendingJob]  # those jobs, held so their identities cannot be reused
    ordered: list[PendingJob]  # in queue order (never handed out: callers get a copy)


@dataclass(eq=False)
class Memo:
    """Per queue, its jobs in queue order; per water-filling input, its shares. Each cycle keeps
    what it used (``_next_*``) and drops the rest when it ends (``done``)."""

    orders: dict[str, _Order] = field(default_factory=dict)
    fills: dict[bytes, list[FloatArray]] = field(default_factory=dict)
    # Per queue handed in grouped (snapshot.PendingByQueue), its jobs summarised (queue_jobs.py).
    queues: dict[str, QueueJobs] = field(default_factory=dict)
    _next_queues: dict[str, QueueJobs] = field(default_factory=dict)
    _next_orders: dict[str, _Order] = field(default_factory=dict)
    _next_fills: dict[bytes, list[FloatArray]] = field(default_factory=dict)
    # Per node object, its resource names and rows (fit/node_rows.py).
    nodes: NodeRows = field(default_factory=NodeRows)
    # Dense rows back to vectors (the queues' figures), per index names and row values.
    vectors: dict[tuple[float, ...], ResourceVector] = field(default_factory=dict)
    _next_vectors: dict[tuple[float, ...], ResourceVector] = field(default_factory=dict)
    _vector_names: tuple[str, ...] = ()
    # Per leaf queue, its running jobs (as grouped) and them in victim order (victims/preempt.py).
    victims: dict[str, tuple[list[RunningJob], list[RunningJob]]] = field(default_factory=dict)
    _next_victims: dict[str, tuple[list[RunningJob], list[RunningJob]]] = field(default_factory=dict)
    # Every job of the kept queues' summaries by uid, kept up to date by what changed in each
    # (a standing claim's jobs are found here, not by a pass over the backlog).
    by_uid: dict[str, PendingJob] = field(default_factory=dict)
    _purged: bool = False
    _indexed: bool = False  # by_uid is kept (since a cycle first asked for it)
    _open: bool = False  # a cycle started and not done
    # How much this cycle took over (for benches and tests): queues, jobs, fills.
    reused: list[int] = field(default_factory=lambda: [0, 0, 0])

    def order(self, queue: str, jobs: Sequence[PendingJob]) -> list[PendingJob]:
        """The queue's jobs in queue order (share/order.py), as queue_order gives them."""
        ids = np.fromiter(map(id, jobs), dtype=np.uint64, count=len(jobs))
        prev = self.orders.get(queue)
        if prev is not None and np.array_equal(prev.ids, ids):
            ordered = prev.ordered
            self.reused[0] += 1
            self.reused[1] += len(jobs)
        else:
            # A changed queue is sorted afresh: its jobs come in about the order of their arrival,
            # which the sort runs through nearly linearly (measured faster than taking the gone
            # out and putting the new in by binary search, at 100 of each in 100,000).
            ordered = queue_order(jobs)
        self._next_orders[queue] = _Order(ids, jobs, ordered)
        return list(ordered)

    def queue(self, queue: str, jobs: Sequence[PendingJob]) -> QueueJobs:
        """The queue's jobs summarised: taken over when they are the same tuple as last cycle's,
        else derived from last cycle's summary and what changed (or afresh)."""
        prev = self.queues.get(queue)
        if prev is None:
            got = summarise(jobs)
            self._index((), jobs)
        elif prev.jobs is jobs:
            got = prev
            self.reused[0] += 1
            self.reused[1] += len(jobs)
        else:
            got, gone, new = changed(prev, jobs)
            self._index(gone, new)
        self._next_queues[queue] = got
        return got

    def _index(self, gone: Sequence[PendingJob], new: Sequence[PendingJob]) -> None:
        if not self._indexed:
            return
        by_uid = self.by_uid
        for job in gone:
            if by_uid.get(job.uid) is job:  # not if it moved to a queue already updated
                del by_uid[job.uid]
        by_uid.update(zip(map(uid_of, new), new, strict=True))

    def pending(self) -> dict[str, PendingJob]:
        """The jobs of every queue handed in this cycle by uid (call once every queue was). Made
        on the first call (a pass over the backlog), then kept up to date by what changed."""
        if not self._indexed:
            self._indexed, self._purged = True, True
            for summary in self._next_queues.values():
                self._index((), summary.jobs)
        elif not self._purged:  # the jobs of queues no longer handed in are taken out
            self._purged = True
            for queue, prev in self.queues.items():
                if queue not in self._next_queues:
                    self._index(prev.jobs, ())
        return self.by_uid

    def fill(
        self,
        total: FloatArray,
        weights: list[int],
        real_caps: list[FloatArray],
        demands: list[FloatArray],
        guarantees: list[FloatArray],
    ) -> list[FloatArray]:
        """water_fill's shares, taken over when every input is the same to the bit."""
        key = b"".join(
            (
                np.asarray([len(weights), total.shape[0]], dtype=np.int64).tobytes(),
                np.asarray(weights, dtype=np.int64).tobytes(),
                total.tobytes(),
                np.concatenate(real_caps).tobytes(),  # the rows' bytes, as one matrix's
                np.concatenate(demands).tobytes(),
                np.concatenate(guarantees).tobytes(),
            )
        )
        got = self.fills.get(key)
        if got is None:
            got = water_fill(total, weights, real_caps, demands, guarantees)
        else:
            self.reused[2] += 1
        self._next_fills[key] = got
        return [row.copy() for row in got]

    def vector(self, index: ResourceIndex) -> Callable[[Sequence[float]], ResourceVector]:
        """index.vector, taking over the vector made last cycle from the same values."""
        if index.names != self._vector_names:
            self._vector_names, self.vectors = index.names, {}
        kept, now = self.vectors, self._next_vectors

        def vector(values: Sequence[float]) -> ResourceVector:
            key = tuple(values)
            got = now.get(key)
            if got is None:
                got = kept.get(key)
                if got is None:
                    got = index.vector(key)
                now[key] = got
            return got

        return vector

    def victim_order(self, order: VictimOrder) -> VictimOrder:
        """``order`` (a leaf's running jobs in victim order: victims/preempt.py), taken over when
        the jobs are the same objects in the same order as last cycle's (an order is never changed
        in place by its users)."""
        kept, now = self.victims, self._next_victims

        def ordered(jobs: list[RunningJob]) -> list[RunningJob]:
            queue = jobs[0].queue
            prev = kept.get(queue)
            if prev is not None and len(prev[0]) == len(jobs) and all(map(operator.is_, prev[0], jobs)):
                got = prev[1]
            else:
                got = order(jobs)
            now[queue] = (jobs, got)
            return got

        return ordered

    def start(self) -> None:
        """A cycle begins: nothing of it is noted yet."""
        self._next_orders, self._next_fills, self._next_queues = {}, {}, {}
        self.reused = [0, 0, 0]
        self._next_vectors, self._next_victims = {}, {}
        if self._open:  # the last cycle failed midway: what it changed of the index is not known
            self.queues, self.by_uid, self._indexed = {}, {}, False
        self._purged, self._open = False, True
        self.nodes.start()

    def done(self) -> None:
        """The cycle ended: keep only what it used."""
        if self._indexed:
            self.pending()
        self._open = False
        self.orders, self.fills, self.queues = self._next_orders, self._next_fills, self._next_queues
        self._next_orders, self._next_fills, self._next_queues = {}, {}, {}
        self.vectors, self._next_vectors = self._next_vectors, {}
        self.victims, self._next_victims = self._next_victims, {}
        self.nodes.done()
