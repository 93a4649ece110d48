"""The cluster fit of one job's gang, as a lone job and a HyperJob's child both take it.

The queue's node groups (nodegroups.py) and pod anti-affinity (pod_anti.py) hold nodes away; the
gang goes to HyperNodes of its partitions' tiers within one of the job's tier (partitions.py), or
one HyperNode of its network topology's tier (topology.py), or anywhere on one cluster
(placement.py), within its queue's per node group limits (group_limits.py) and, when it asks for
GPU cards, onto the cards its agents reported (devices.py). One implementation, so a child placed by
a HyperJob's decision can be placed in its cluster exactly as a lone job could.

A HyperJob's children are placed at a checkpoint of the cycle's ledger (ledger.py): what they
take, cards and node-group counts included, is kept or taken back with it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial

import numpy as np

from vglobal.admission.explain import no_hypernode_reason, no_partition_fit_reason
from vglobal.admission.fit.candidates import Candidates
from vglobal.admission.fit.devices import CardPacker, DeviceFit
from vglobal.admission.fit.node_mask import NodeMask, closed_rows, everywhere
from vglobal.admission.fit.partitions import place_partitioned, prepare_partitions
from vglobal.admission.fit.placement import Held, HeldRows, Placement
from vglobal.admission.fit.pod_anti import job_mask
from vglobal.admission.fit.topology import HyperNodes, place
from vglobal.admission.prepare import Job, Prepared
from vglobal.admission.snapshot import PROVISIONABLE
from vglobal.admission.victims.ask import Ask, card_check, mask_key
from vglobal.admission.victims.preempt import Plan


def subset(cand: Candidates, ids: Sequence[int]) -> Candidates:
    """The candidates among ``cand`` with these ids (in index order); its own key, since caches
    keyed by candidates hold what a ranking or a failure of exactly these clusters was."""
    keep = set(ids)
    chosen = [c for c in cand.ids if c in keep]
    arr = np.array(chosen, dtype=np.int64)
    key = arr.tobytes() + b"|" + cand.key
    return Candidates(arr, tuple(chosen), key, cand.note, cand.spread, cand.keep_accel)


class GangFit:
    """Places gangs on the cycle's clusters, committing what it places (the caller charges)."""

    def __init__(self, prep: Prepared, devices: DeviceFit) -> None:
        self.prep, self.devices = prep, devices
        self.clusters = prep.clusters
        self.hypernodes = HyperNodes(prep.clusters)
        self.card_misfit: dict[str, str] = {}  # job uid -> why its GPU cards fit no cluster
        self.ledger = prep.clusters.ledger
        # per cluster, the rows of the nodes its pools can add (after its real nodes), with their pool
        cols = self.clusters.node_col
        self.grows = [
            {cols[c][n.name]: n.labels[PROVISIONABLE] for n in snap.nodes if PROVISIONABLE in n.labels}
            for c, snap in enumerate(self.clusters.snaps)
        ]
        self.grown: dict[str, tuple[tuple[str, int], ...]] = {}  # job uid -> (pool, nodes) it counts on

    def ask(self, job: Job, packer: CardPacker | None) -> Ask:
        """What the job asks of a plan of victims (ask.py)."""
        mask: NodeMask = everywhere
        if job.affinity is not None or job.anti:
            mask = job_mask(job.snap, job.affinity, self.prep.nodegroups, self.prep.anti)
        cards = None if packer is None else card_check(packer, job.gang)
        return Ask(job, packer, cards, mask, mask_key(job))

    def held(self, job: Job, held: Mapping[int, Held]) -> Mapping[int, Held]:
        """``held`` (a starvation reservation) and the nodes the job's node groups and pod
        anti-affinity keep it off."""
        if job.affinity is not None:
            held = self.prep.nodegroups.held(job.affinity, job.cand, held)
        if job.anti:
            held = self.prep.anti.held(job.snap, job.cand, held)
        return held

    def place(self, job: Job, held: Mapping[int, Held], cards: CardPacker | None) -> int | None:
        """The cluster among ``job.cand`` the gang went to, committed; None if none holds it."""
        held = self.held(job, held)
        if self.clusters.stages.orders(job.snap):
            found = self._staged(job, held, cards)
        else:
            found = self._preferred(job, held, cards) if job.snap.preferred_clusters else None
            if found is None:
                found = self._on_real_nodes(job, held, cards)
            if found is None:
                found = self.placement(job, held, cards)
        if found is None:
            if cards is not None and not self.card_misfit.get(job.snap.uid):  # a child's first answer
                self.card_misfit[job.snap.uid] = self._card_reason(job, held, cards)
            return None
        c, placement = found
        self._commit(c, placement, job, cards)
        if self.grows[c]:
            pools = Counter(pool for r in placement.rows if (pool := self.grows[c].get(r)) is not None)
            if pools:
                self.grown[job.snap.uid] = tuple(sorted(pools.items()))
        return c

    def _preferred(
        self, job: Job, held: Mapping[int, Held], cards: CardPacker | None
    ) -> tuple[int, Placement] | None:
        """The first of the job's preferred clusters (vglobal.io/cluster-preference) that holds
        it now; None sends it to the others in the placement policy's order (spillover)."""
        col = self.clusters.col
        allowed = set(job.cand.ids)
        for name in job.snap.preferred_clusters:
            c = col.get(name)
            if c is not None and c in allowed:
                found = self.placement(replace(job, cand=subset(job.cand, [c])), held, cards)
                if found is not None:
                    return found
        return None

    def _staged(
        self, job: Job, held: Mapping[int, Held], cards: CardPacker | None
    ) -> tuple[int, Placement] | None:
        """The candidates in the groups the placement stages' scores make (stages.py), each tried
        in turn: the first group with a cluster that holds the gang takes it."""
        for group in self.clusters.stages.groups(job.snap, job.cand.ids):
            part = replace(job, cand=subset(job.cand, group))
            found = self._on_real_nodes(part, held, cards) or self.placement(part, held, cards)
            if found is not None:
                return found
        return None

    def _on_real_nodes(
        self, job: Job, held: Mapping[int, Held], cards: CardPacker | None
    ) -> tuple[int, Placement] | None:
        """Where the gang goes with the nodes pools can add kept off it, when some candidate has
        any: a gang that fits real nodes of any cluster grows no pool. None when none holds it
        so (or no candidate can grow), and the nodes pools can add are tried then."""
        grows, clusters = self.grows, self.clusters
        pooled = [c for c in job.cand.ids if grows[c]]
        if not pooled:
            return None
        real = dict(held)
        for c in pooled:
            blocked = closed_rows(clusters.free(c), list(grows[c]))
            assert blocked is not None
            kept = held.get(c)
            real[c] = HeldRows(blocked if kept is None else blocked + kept.matrix)
        return self.placement(job, real, cards)

    def _commit(self, c: int, placement: Placement, job: Job, cards: CardPacker | None) -> None:
        self.clusters.commit(c, placement, job.gang)
        if cards is not None:
            cards.commit()
        elif self.ledger.open:  # told to the card fit once what it placed is kept
            self.ledger.when_kept(partial(self.devices.placed, c, job.snap))
        else:
            self.devices.placed(c, job.snap)

    def place_freed(self, job: Job, plan: Plan, cards: CardPacker | None) -> tuple[str, ...]:
        """The gang placed, committed, where the plan's victims free room (on the rows the plan
        leaves it, and with the victims' GPU cards back): the nodes it went to, which its agent
        tries first (Volcano's nominatedNodeName). The plan packed the gang before it was made."""
        clusters, c = self.clusters, plan.cluster
        clusters.release(c, plan.freed_rows)
        closed = closed_rows(clusters.free(c), plan.closed)
        if cards is None:
            placement = clusters.fit(c, job.gang, closed)
        else:
            victims = [*plan.whole, *(u for pods in plan.pods.values() for u in pods)]
            held = None if closed is None else HeldRows(closed)
            placement = cards.on(clusters, c, job.gang, held, victims)
        assert placement is not None, "a plan packs the gang before it is made"
        self._commit(c, placement, job, cards)
        return clusters.node_names(c, placement.rows)

    def placement(
        self, job: Job, held: Mapping[int, Held], cards: CardPacker | None
    ) -> tuple[int, Placement] | None:
        """Where the gang goes (its HyperNodes, partitions, node-group limits and GPU cards too),
        not committed."""
        hypernodes = self.hypernodes
        if job.snap.partitions:
            prepared = prepare_partitions(job.snap, self.prep.index, self.prep.scale)
            return place_partitioned(hypernodes, job, held, prepared, cards)
        topo = job.snap.network_topology
        if not job.limited:
            return place(hypernodes, job.cand, job.gang, held, topo, cards)

        def fit(holds: Mapping[int, Held]) -> tuple[int, Placement] | None:
            return place(hypernodes, job.cand, job.gang, holds, topo, cards)

        # within the queue's per node group limits (group_limits.py)
        return self.prep.group_limits.place(self.prep.tree.names[job.leaf], job.cand, job.gang, held, fit)

    def _card_reason(self, job: Job, held: Mapping[int, Held], cards: CardPacker) -> str:
        """Why the gang waits when its GPU cards are what keeps it out ("" when its resources or
        HyperNodes alone do: their reasons say it)."""
        why = cards.why
        if self.placement(job, held, None) is None:
            return ""
        if not job.snap.partitions and job.snap.network_topology is None:
            return why
        if cards.place(self.clusters, job.cand, job.gang, held) is None:
            return cards.why
        return "no HyperNode the job's topology allows has both the room and the GPU cards for the gang"

    def why_not(self, job: Job) -> tuple[str, bool]:
        """Why the gang fits none of ``job.cand``, and whether that is the plain gang fit's answer
        (a failure cache may keep it for bigger gangs; a card, partition or HyperNode answer is
        the job's own)."""
        if job.affinity is None:
            best = self.clusters.best_effort(job.cand, job.gang)
        else:
            best = self.prep.nodegroups.best_effort(job.cand, job.gang, job.affinity)
        topo = job.snap.network_topology
        card_misfit = self.card_misfit.get(job.snap.uid)
        if card_misfit:
            return card_misfit, False  # the totals may hold the gang; its cards do not
        if job.snap.partitions:  # every partition must also fit one HyperNode
            return no_partition_fit_reason(job.snap.partitions, topo, best), False
        if topo is not None and topo[0] == "hard":
            return no_hypernode_reason(topo[1], best), False
        return best, True
