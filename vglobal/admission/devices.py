"""Card-level fit for gangs that ask for vGPUs: per node, the cards their agents reported free.

Node totals of ``volcano.sh/vgpu-*`` hide how they split over cards (two cards with 10000 MiB
free do not hold a 20000 MiB vGPU), so a gang that asks for vGPUs is packed pod by pod onto nodes
that hold its resources AND whose cards take its vGPUs under the local scheduler's own card rule
(vglobal.model.gpu_fit.cards_fit). Cards taken are kept for the rest of the cycle. Jobs without a
vGPU request, and clusters whose agents report no cards, never come here: the cost is nil for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from vglobal.admission.gang import PreparedGang
from vglobal.admission.index import IntArray, ResourceIndex
from vglobal.admission.placement import Candidates, Clusters, Held, Placement
from vglobal.admission.snapshot import PendingJob
from vglobal.model.gpu_fit import (
    HAMI,
    Cards,
    DeviceRequest,
    asks_vgpu,
    cards_fit,
    cards_of,
    memory_needed,
    request_of,
)


def needs_cards(job: PendingJob) -> bool:
    return any(asks_vgpu(vec) for vec, _ in job.gang)


@dataclass(slots=True)
class _Taken:
    cards: dict[int, Cards]  # node row -> its cards after the gang
    rows: dict[int, list[int]]  # node row -> its free resources after the gang


class DeviceFit:
    """Per cluster (Clusters' index) and node row, the reported cards, kept current as gangs go."""

    def __init__(self, clusters: Clusters, index: ResourceIndex) -> None:
        self.index = index
        self.cards: list[dict[int, Cards]] = []
        self.models: list[dict[int, tuple[str, ...]]] = []  # per node row, its cards' models
        for c, snap in enumerate(clusters.snaps):
            rows = clusters.node_col[c]
            have = {rows[n]: cs for n, cs in snap.devices.items() if n in rows and cs}
            self.cards.append({i: cards_of(cs) for i, cs in have.items()})
            self.models.append({i: tuple(card.model for card in cs) for i, cs in have.items()})
        self.active = any(self.cards)

    def place(
        self,
        clusters: Clusters,
        cand: Candidates,
        gang: PreparedGang,
        held: Mapping[int, Held],
        job: PendingJob,
    ) -> tuple[int, Placement] | str:
        """The first cluster in order that holds the gang, resources and cards, committed; else why not."""
        reqs = [self._request(s.row, job) for s in gang.shapes]
        why: list[str] = []
        for c in clusters.order(cand, gang):
            if not clusters.could_hold(c, gang):
                continue
            kept = held.get(c) if held else None
            taken = self._pack(clusters, c, gang, reqs, None if kept is None else kept.matrix)
            if isinstance(taken, str):
                why.append(taken)
                continue
            placement = Placement(taken.rows)
            clusters.commit(c, placement, gang)
            self.cards[c].update(taken.cards)
            return c, placement
        return "; ".join(why)

    def _request(self, row: IntArray, job: PendingJob) -> DeviceRequest:
        req = request_of(self.index.vector(row.tolist()), job.gpu_hints)
        # MIG instances depend on the agent's geometries, which the hub does not know: totals only
        return DeviceRequest() if req.mode == "mig" else req

    def _pack(
        self,
        clusters: Clusters,
        c: int,
        gang: PreparedGang,
        reqs: Sequence[DeviceRequest],
        held: IntArray | None,
    ) -> _Taken | str:
        free_rows = clusters.rows[c]
        cards = self.cards[c]
        taken = _Taken({}, {})
        for shape, req in zip(gang.shapes, reqs, strict=True):
            for _ in range(shape.count):
                placed = False
                for i, base in enumerate(free_rows):
                    f = taken.rows.get(i, base)
                    left = [v - int(h) for v, h in zip(f, held[i], strict=True)] if held is not None else f
                    if any(left[r] < q for r, q in shape.pairs):
                        continue
                    if not req.empty and i in cards:
                        allowed = np.array([req.model_ok(m) for m in self.models[c][i]], dtype=np.bool_)
                        got = _take(req, taken.cards.get(i, cards[i]), allowed)
                        if got is None:
                            continue
                        taken.cards[i] = got
                    row = taken.rows[i] = f[:]
                    for r, q in shape.pairs:
                        row[r] -= q
                    placed = True
                    break
                if not placed:
                    return self._why(clusters.names[c], cards, req, shape.count)
        return taken

    def _why(self, cluster: str, cards: Mapping[int, Cards], req: DeviceRequest, pods: int) -> str:
        if not cards:
            return f"cluster {cluster}: no room for the gang"
        most = max(int((cs.memory - cs.used_mem).max()) for cs in cards.values())
        need = req.memory_mib
        if need and most < need:
            return f"no node in cluster {cluster} has a card with {need} MiB free (most: {most} MiB)"
        what = f"{req.units} vGPU{'s' if req.units != 1 else ''}" + (f" of {need} MiB" if need else "")
        cores = f", {req.cores}% cores" if req.cores else ""
        return f"no node in cluster {cluster} has cards for {what}{cores} per pod ({pods} pods)"


def _take(req: DeviceRequest, cards: Cards, model_ok: npt.NDArray[np.bool_]) -> Cards | None:
    """The cards after one pod takes ``req.units`` of them (the highest index first, as the
    local scheduler's default order), or None if too few fit."""
    ok = cards_fit(req, cards, model_ok)
    idx = np.flatnonzero(ok)[::-1][: req.units]
    if idx.size < req.units:
        return None
    used_num, used_mem, used_cores, mode = (
        cards.used_num.copy(), cards.used_mem.copy(), cards.used_cores.copy(), cards.mode.copy()
    )  # fmt: skip
    used_num[idx] += 1
    if req.whole:
        used_mem[idx] = cards.memory[idx]
        used_cores[idx] = 100
    else:
        used_mem[idx] += memory_needed(req, cards.memory)[idx]
        used_cores[idx] += req.cores
        mode[idx] = HAMI
    return replace(cards, used_num=used_num, used_mem=used_mem, used_cores=used_cores, mode=mode)
