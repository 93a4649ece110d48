"""Queue node-group affinity at the hub: a job of a queue with ``spec.affinity`` fits a cluster
only on the nodes the agent's nodegroup plugin would let it use (node label
``volcano.sh/nodegroup-name`` in an allowed group, not in a required anti-affinity group).

The queue tree is always hierarchical at the hub, so a queue without affinity takes its nearest
ancestor's, as Volcano's nodegroup plugin does with ``enableHierarchy``. A queue that names no
group (own or inherited) is confined only on clusters whose agent says it runs the plugin (cluster
label ``vglobal.io/nodegroup-plugin``): to the nodes outside every group ("lenient", the default
conf's strict: false), or to none ("strict"); elsewhere, and wherever no node is in a group, it
stays on the plain placement path. Other nodes of a candidate cluster are held away from the gang
(a Held matrix), so the packing is placement's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

import numpy as np

from vglobal.admission.fit.candidates import Candidates
from vglobal.admission.fit.closest import closest
from vglobal.admission.fit.gang import PreparedGang
from vglobal.admission.fit.node_mask import BLOCKED
from vglobal.admission.fit.placement import Clusters, Held, HeldRows
from vglobal.admission.snapshot import ROOT, QueueSnap
from vglobal.model.queue_affinity import NODE_GROUP_LABEL, NODE_GROUP_MODE_LABEL, QueueAffinity

STRICT, LENIENT = "strict", "lenient"  # the agents' nodegroup modes (scheduler.node_group_mode)
UNNAMED = QueueAffinity()  # the affinity of a queue that names no node group


class NodeGroups:
    """Per queue its effective affinity; per (affinity, cluster) the nodes it allows."""

    def __init__(self, queues: Sequence[QueueSnap], clusters: Clusters) -> None:
        self.clusters = clusters
        by_name = {q.name: q for q in queues}
        self._mode = [c.labels.get(NODE_GROUP_MODE_LABEL, "") for c in clusters.snaps]
        unnamed = UNNAMED if any(self._confines_unnamed(c) for c in range(len(self._mode))) else None
        self._of: dict[str, QueueAffinity | None] = {}
        for name in by_name:
            self._of[name] = _nearest(by_name, name) or unnamed
        self._allowed: dict[tuple[QueueAffinity, int], np.ndarray] = {}
        self._cands: dict[tuple[bytes, QueueAffinity], Candidates] = {}

    def of(self, queue: str) -> QueueAffinity | None:
        """The affinity that confines the queue's jobs (None: not confined)."""
        return self._of.get(queue)

    def _confines_unnamed(self, c: int) -> bool:
        mode = self._mode[c]
        nodes = self.clusters.snaps[c].nodes
        return mode == STRICT or (mode == LENIENT and any(NODE_GROUP_LABEL in n.labels for n in nodes))

    def allowed(self, aff: QueueAffinity, c: int) -> np.ndarray:
        """Per node of cluster c (placement's row order): whether the affinity admits it."""
        key = (aff, c)
        got = self._allowed.get(key)
        if got is None:
            labels = {n.name: n.labels for n in self.clusters.snaps[c].nodes}
            order = sorted(self.clusters.node_col[c], key=self.clusters.node_col[c].__getitem__)
            groups = [labels[n].get(NODE_GROUP_LABEL) for n in order]
            if aff.empty:  # a queue naming no group, as this cluster's agent treats it
                mode = self._mode[c]
                got = np.array(
                    [mode == "" or (mode == LENIENT and g is None) for g in groups], dtype=np.bool_
                )
            else:
                got = np.array([aff.admits(g) for g in groups], dtype=np.bool_)
            self._allowed[key] = got
        return got

    def candidates(self, cand: Candidates, aff: QueueAffinity, queue: str) -> Candidates:
        """The candidates with at least one allowed node; a key of their own, so failures of the
        same gang elsewhere are not taken for this queue's."""
        key = (cand.key, aff)
        got = self._cands.get(key)
        if got is None:
            ids = [c for c in cand.ids if self.allowed(aff, c).any()]
            arr = np.array(ids, dtype=np.int64)
            tag = repr((aff.required, aff.preferred, aff.anti_required, aff.anti_preferred)).encode()
            missing = [self.clusters.names[c] for c in cand.ids if c not in ids]
            if aff.empty:
                note = f"queue {queue} names no node group: the nodegroup plugin keeps it off grouped nodes"
                if missing:
                    note += f"; no node open to it in {', '.join(missing)}"
            else:
                note = f"queue {queue} allows {aff.groups_text()}"
                if missing:
                    note += f"; no node of them in {', '.join(missing)}"
            if cand.note:
                note = f"{cand.note}; {note}"
            got = self._cands[key] = Candidates(
                arr, tuple(ids), arr.tobytes() + b"|" + tag, note, cand.spread, cand.keep_accel
            )
        return got

    def held(self, aff: QueueAffinity, cand: Candidates, base: Mapping[int, Held]) -> dict[int, Held]:
        """Per candidate cluster, what the gang may not use: the nodes outside the allowed groups
        whole, plus what ``base`` (a starvation reservation) keeps."""
        out: dict[int, Held] = {}
        size = self.clusters.index.size
        for c in cand.ids:
            blocked = np.where(self.allowed(aff, c)[:, None], 0, BLOCKED).astype(np.int64)
            matrix = np.broadcast_to(blocked, (blocked.shape[0], size))
            kept = base.get(c)
            out[c] = HeldRows(matrix + kept.matrix if kept is not None else np.array(matrix))
        return out

    def best_effort(self, cand: Candidates, gang: PreparedGang, aff: QueueAffinity) -> str:
        """Which candidate's allowed nodes came closest to holding the gang."""
        if not cand.ids:
            return f"no candidate cluster; {cand.note}"
        wanted = sum(s.count for s in gang.shapes)
        c, placed = closest(self.clusters, cand, gang, partial(self.allowed, aff))
        name = self.clusters.names[c]
        return f"best: the allowed nodes of {name} can hold {placed} of the {wanted} pods; {cand.note}"


def _nearest(queues: Mapping[str, QueueSnap], name: str) -> QueueAffinity | None:
    """The queue's own affinity, else its nearest ancestor's (an empty one confines nothing)."""
    seen: set[str] = set()
    q = queues.get(name)
    while q is not None and q.name not in seen:
        if q.affinity is not None:
            return None if q.affinity.empty else q.affinity
        seen.add(q.name)
        parent = q.parent or ROOT
        q = queues.get(parent) if parent != ROOT else None
    return None
