"""Card-level fit for gangs that ask for vGPUs, MIG instances or whole GPUs: per node, the cards
their agents reported.

Node totals of ``volcano.sh/vgpu-*`` hide how they split over cards (two cards with 10000 MiB free
do not hold a 20000 MiB vGPU; a MIG card serves only the instances its geometry has left), so such a
gang is packed pod by pod onto nodes that hold its resources AND whose cards take its devices under
the local scheduler's own rules (vglobal.model.cards over gpu_fit.cards_fit and mig_fit.mig_pick).
Every path that places a gang uses the same packer: the plain placement, HyperNodes (topology.py),
partitions (partitions.py), the plans of preemption and reclaim, which give back the cards their
victims' pods hold, and starvation holds (only where the cards could ever hold the gang). Gangs
dispatched but not placed yet take their cards first; cards taken are kept for the rest of the
cycle. Jobs without such a request, and clusters whose agents report no cards, never come here:
the cost is nil for them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial

import numpy as np

from vglobal.admission.fit.candidates import Candidates
from vglobal.admission.fit.gang import PreparedGang, Shape
from vglobal.admission.fit.index import IntArray, ResourceIndex
from vglobal.admission.fit.placement import Clusters, Held, Placement
from vglobal.admission.ledger import Undo
from vglobal.admission.snapshot import Gang, PendingJob, RunningJob
from vglobal.model.cards import CardUse, NodeCards
from vglobal.model.gpu_fit import (
    FREE,
    NOUSE_UUID_ANNOTATION,
    USE_UUID_ANNOTATION,
    DeviceRequest,
    asks_cards,
    asks_vgpu,
    request_of,
)

_NO_HINTS: Mapping[str, str] = {}


def needs_cards(job: PendingJob) -> bool:
    return any(asks_cards(vec) for vec, _ in job.gang)


def _whole_only(job: PendingJob) -> bool:
    """Only whole GPUs, of any model: while no card is shared, the nvidia.com/gpu column counts
    exactly the idle cards, so the resource fit is the card fit."""
    return not any(asks_vgpu(vec) for vec, _ in job.gang) and not any(job.gpu_hints)


class DeviceFit:
    """Per cluster (Clusters' index) and node row, the reported cards, kept current as gangs go;
    and the cards each running pod holds (what evicting it gives back)."""

    def __init__(
        self,
        clusters: Clusters,
        index: ResourceIndex,
        running: Sequence[RunningJob] = (),
        prepare: Callable[[Gang], PreparedGang] | None = None,
    ) -> None:
        self.clusters, self.index, self.prepare = clusters, index, prepare
        self.nodes: list[dict[int, NodeCards]] = []
        for c, snap in enumerate(clusters.snaps):
            rows = clusters.node_col[c]
            self.nodes.append(
                {rows[n]: NodeCards.of(cs) for n, cs in snap.devices.items() if n in rows and cs}
            )
        self.active = any(self.nodes)
        # per cluster: some card serves vGPUs or MIG instances (whole GPUs then need the card fit)
        self.shared = [any(bool((n.cards.mode != FREE).any()) for n in cs.values()) for cs in self.nodes]
        # per cluster: whole-GPU gangs placed by resources alone, their cards taken when a card
        # fit next needs them
        self._deferred: list[list[tuple[Gang, tuple[Mapping[str, str], ...], str]]] = [[] for _ in self.nodes]
        if self.active and prepare is not None:
            for c, snap in enumerate(clusters.snaps):
                for k, (gang, hints) in enumerate(snap.unplaced_cards):
                    # its pods spread over cards as one PodGroup (vgpu-podgroup-policy spread)
                    self._take_unplaced(c, gang, hints, prepare, f"unplaced/{c}/{k}")
        # victim key (a pod uid, or a job uid for all its pods) -> (node name, card, the pod's
        # PodGroup: its job's uid) it holds
        self.held: dict[str, list[tuple[str, CardUse, str]]] = {}
        if self.active:
            for job in running:
                for pod in job.pods:
                    if pod.cards:
                        uses = [(pod.node, u, job.uid) for u in pod.cards]
                        self.held[pod.uid] = uses
                        self.held.setdefault(job.uid, []).extend(uses)
                if job.cards and not job.pods:
                    self.held[job.uid] = [(node, u, job.uid) for node, u in job.cards]

    def packer(self, job: PendingJob) -> CardPacker | None:
        """The job's card packer, or None if it asks for no card or no cluster reports any."""
        if not self.active or not needs_cards(job):
            return None
        if not any(self.shared) and _whole_only(job):
            return None
        if self.prepare is not None:
            for c, gangs in enumerate(self._deferred):
                if gangs:  # (through the ledger: a rollback gives back their cards and them)
                    for gang, hints, group in gangs:
                        self._take_unplaced(c, gang, hints, self.prepare, group)
                    self.clusters.ledger.set_at(self._deferred, c, [])
        return CardPacker(self, job.gang, job.gpu_hints, job.uid)

    def placed(self, c: int, job: PendingJob) -> None:
        """A gang placed on cluster c without a card packer (it takes whole GPUs only while no
        card is shared): its cards are taken before the next card fit."""
        if self.active and needs_cards(job):
            self._deferred[c].append((job.gang, job.gpu_hints, job.uid))

    def _take_unplaced(
        self,
        c: int,
        gang: Gang,
        hints: Sequence[Mapping[str, str]],
        prepare: Callable[[Gang], PreparedGang],
        group: str,
    ) -> None:
        """A gang dispatched here whose pods hold no cards yet: its cards are taken before this
        cycle's gangs (whole if it fits, else pod by pod what fits), on nodes that could hold it."""
        if not self.nodes[c]:
            return
        packer = CardPacker(self, gang, hints, group)
        alloc = self.clusters.alloc[c]
        rows = np.arange(alloc.shape[0], dtype=np.int64)
        packer.start(c)
        if packer(alloc, rows, prepare(gang).shapes) is not None:
            packer.commit()
            return
        for shape in prepare(gang).shapes:
            one = prepare(((self.index.vector(shape.row.tolist()), 1),)).shapes
            for _ in range(shape.count):
                packer.start(c)
                if packer(alloc, rows, one) is None:
                    break
                packer.commit()

    def released(self, c: int, victims: Iterable[str]) -> dict[int, NodeCards]:
        """Cluster c's node cards (changed nodes only) once these victims' pods are gone."""
        rows = self.clusters.node_col[c]
        back: dict[int, dict[str, list[CardUse]]] = {}
        for key in victims:
            for node, use, group in self.held.get(key, ()):
                i = rows.get(node)
                if i is not None and i in self.nodes[c]:
                    back.setdefault(i, {}).setdefault(group, []).append(use)
        out: dict[int, NodeCards] = {}
        for i, by_group in back.items():
            cards = self.nodes[c][i]
            for group, uses in by_group.items():
                cards = cards.apply(uses, -1, group)
            out[i] = cards
        return out

    def commit(self, c: int, taken: Mapping[int, NodeCards]) -> None:
        ledger = self.clusters.ledger
        if ledger.open:
            ledger.save_once(("cards", c), partial(self._copy, c))
        self.nodes[c].update(taken)
        if not self.shared[c]:
            self.shared[c] = any(bool((n.cards.mode != FREE).any()) for n in taken.values())

    def _copy(self, c: int) -> Undo:
        """Cluster c's cards as they are (NodeCards are values), and how to put them back."""
        return partial(self._put_back, c, dict(self.nodes[c]), self.shared[c])

    def _put_back(self, c: int, nodes: dict[int, NodeCards], shared: bool) -> None:
        self.nodes[c], self.shared[c] = nodes, shared


class CardPacker:
    """One gang's packing onto cards: pod by pod, first-fit over the nodes given, a pod taking the
    first node with room for its resources and cards for its devices.

    ``start(c)`` begins an attempt on cluster c; each call packs shapes onto rows of it and, if all
    fit, keeps their cards in the attempt (``taken``) for the next call of the same attempt.
    """

    def __init__(self, fit: DeviceFit, gang: Gang, hints: Sequence[Mapping[str, str]], group: str) -> None:
        self.fit = fit
        self.group = group  # the gang's PodGroup (its job's uid), for the spread policy
        # per pod row: its pods' device requests in gang order, (request, count)
        self._reqs: dict[bytes, list[tuple[DeviceRequest, int]]] = {}
        for k, (vec, count) in enumerate(gang):
            row = np.array(fit.index.row(vec), dtype=np.int64)
            req = request_of(vec, hints[k] if k < len(hints) else _NO_HINTS)
            self._reqs.setdefault(row.tobytes(), []).append((req, count))
        self.c = -1
        self.taken: dict[int, NodeCards] = {}
        self._done: dict[bytes, int] = {}  # pods of each row placed in this attempt
        # the misfits to explain, as (cluster, request, pods, node rows, their cards): said only
        # when asked (most misfits are followed by a fit elsewhere)
        self._misses: list[tuple[int, DeviceRequest, int, IntArray, Mapping[int, NodeCards]]] = []
        self._kept: dict[int, dict[int, NodeCards]] = {}  # per cluster, its last attempt that fitted

    def start(self, c: int, base: Mapping[int, NodeCards] | None = None) -> None:
        """A new attempt on cluster c (``base``: its node cards as they would be, e.g. with victims gone)."""
        self.c = c
        self.taken = dict(base or {})
        self._done = {}

    def choose(self, c: int) -> None:
        self.c, self.taken = c, self._kept[c]

    def save(self) -> object:
        return (self.taken, self._done)  # replaced, never changed in place, by __call__

    def restore(self, mark: object) -> None:
        assert isinstance(mark, tuple)
        self.taken, self._done = mark
        self._kept[self.c] = self.taken

    def _request(self, shape: Shape, done: Mapping[bytes, int]) -> DeviceRequest:
        """The request of the next pod of this shape (tasks of equal resources may differ in GPU hints)."""
        key = shape.row.tobytes()
        left = done.get(key, 0)
        for req, count in self._reqs.get(key, ()):
            if left < count:
                return req
            left -= count
        return request_of(self.fit.index.vector(shape.row.tolist()), _NO_HINTS)

    def __call__(self, free: IntArray, rows: IntArray, shapes: Sequence[Shape]) -> IntArray | None:
        """``free`` (one line per node of ``rows``) after the pods of ``shapes``, or None."""
        nodes = self.fit.nodes[self.c]
        work = free.copy()
        taken = dict(self.taken)
        done = dict(self._done)
        ids = rows.tolist()
        for shape in shapes:
            key = shape.row.tobytes()
            d = shape.dims
            for _ in range(shape.count):
                req = self._request(shape, done)
                done[key] = done.get(key, 0) + 1
                if d.size == 0:
                    continue  # a pod that requests nothing fits any node
                fits = np.flatnonzero((work[:, d] >= shape.row[d]).all(axis=1)).tolist()
                for i in fits:
                    node = ids[i]
                    if not req.empty and node in nodes:
                        got = taken.get(node, nodes[node]).take(req, self.group)
                        if got is None:
                            continue
                        taken[node] = got
                    work[i] -= shape.row
                    break
                else:
                    self._misses = [(self.c, req, shape.count, rows, taken)]
                    return None
        self.taken, self._done = taken, done
        self._kept[self.c] = taken
        return work

    @property
    def why(self) -> str:
        """Why the last placement or packing found no cards, cluster by cluster."""
        return "; ".join(self._why(*miss) for miss in self._misses)

    def _why(
        self, c: int, req: DeviceRequest, pods: int, rows: IntArray, taken: Mapping[int, NodeCards]
    ) -> str:
        cluster = self.fit.clusters.names[c]
        nodes = self.fit.nodes[c]
        have = [taken.get(i, nodes[i]) for i in rows.tolist() if i in nodes]
        if not have:
            return f"cluster {cluster}: no room for the gang"
        if not req.whole and req.mode is not None:
            have = [n for n in have if req.mode_ok(n.mig_node)]
            if not have:
                return f"no node in cluster {cluster} with room for the gang is in vgpu-mode {req.mode!r}"
        if req.uuid_filter and not req.whole and not any(req.uuid_ok(u) for n in have for u in n.uuids):
            return (
                f"no GPU in cluster {cluster} matches the UUID constraints"
                f" {USE_UUID_ANNOTATION}={','.join(sorted(req.use_uuids))!r},"
                f" {NOUSE_UUID_ANNOTATION}={','.join(sorted(req.nouse_uuids))!r}"
            )
        if not req.whole and all(n.mig_node for n in have):
            need = f" of {req.memory_mib} MiB" if req.memory_mib else ""
            mig = sum(1 for n in have for m in n.mig if m is not None)
            return (
                f"no node in cluster {cluster} has MIG cards with a free instance for {req.units} vGPU"
                f"{'s' if req.units != 1 else ''}{need} per pod ({pods} pods; {mig} MIG cards)"
            )
        if req.whole:
            cards = f"{req.whole} idle GPU card{'s' if req.whole != 1 else ''}"
            return f"no node in cluster {cluster} has {cards} per pod ({pods} pods)"
        most = max(n.most_free_mib for n in have)
        need_mib = req.memory_mib
        if need_mib and most < need_mib:
            return f"no node in cluster {cluster} has a card with {need_mib} MiB free (most: {most} MiB)"
        what = f"{req.units} vGPU{'s' if req.units != 1 else ''}" + (
            f" of {need_mib} MiB" if need_mib else ""
        )
        cores = f", {req.cores}% cores" if req.cores else ""
        cores += ", one pod of the job per card (vgpu-podgroup-policy spread)" if req.spread else ""
        models = ""
        if req.use_types or req.nouse_types:
            models = f" of model {'|'.join(sorted(req.use_types)) or 'any'}"
            models += f" but not {'|'.join(sorted(req.nouse_types))}" if req.nouse_types else ""
        return f"no node in cluster {cluster} has cards{models} for {what}{cores} per pod ({pods} pods)"

    # --- the plain placement and the plans' checks ---------------------------------------------
    def place(
        self, clusters: Clusters, cand: Candidates, gang: PreparedGang, held: Mapping[int, Held]
    ) -> tuple[int, Placement] | None:
        """The first cluster in order that holds the gang, resources and cards (committing is the
        caller's, with ``commit``); else None, with ``why`` naming each cluster's misfit."""
        misses: list[tuple[int, DeviceRequest, int, IntArray, Mapping[int, NodeCards]]] = []
        for c in clusters.order(cand, gang):
            if not clusters.could_hold(c, gang):
                continue
            got = self.on(clusters, c, gang, held.get(c) if held else None)
            if got is not None:
                return c, got
            misses += self._misses
        self._misses = misses
        return None

    def on(
        self,
        clusters: Clusters,
        c: int,
        gang: PreparedGang,
        held: Held | None = None,
        victims: Iterable[str] = (),
    ) -> Placement | None:
        """The gang packed onto cluster c's nodes and cards (those of ``victims`` back), or None."""
        current = clusters.free(c)
        free = current if held is None else np.maximum(current - held.matrix, 0)
        self.start(c, self.fit.released(c, victims))
        after = self(free, np.arange(free.shape[0], dtype=np.int64), gang.shapes)
        if after is None:
            return None
        return clusters.placement_from(c, current - (free - after))

    def commit(self) -> None:
        self.fit.commit(self.c, self.taken)

    def check(self, c: int, free: IntArray, gang: PreparedGang, victims: Iterable[str]) -> bool:
        """Whether the gang packs onto ``free`` (cluster c with the victims' resources back) once
        the victims' cards are back too (a preemption or reclaim plan's test)."""
        self.start(c, self.fit.released(c, victims))
        return self(free, np.arange(free.shape[0], dtype=np.int64), gang.shapes) is not None

    def could_ever(self, c: int, gang: PreparedGang) -> bool:
        """Whether the gang fits cluster c's cards with nothing else on them (starvation holds)."""
        nodes = self.fit.nodes[c]
        empty = {i: n.emptied() for i, n in nodes.items()}
        self.start(c, empty)
        alloc = self.fit.clusters.alloc[c]
        return self(alloc, np.arange(alloc.shape[0], dtype=np.int64), gang.shapes) is not None
