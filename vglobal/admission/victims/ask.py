"""What one job asks of a plan of victims (preemption, reclaim), made once per decision: the job,
its GPU-card packer and the plans' card test, the nodes its gang may use and the key of those."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from vglobal.admission.fit.devices import CardPacker
from vglobal.admission.fit.gang import PreparedGang
from vglobal.admission.fit.index import IntArray
from vglobal.admission.fit.node_mask import NodeMask, everywhere
from vglobal.admission.prepare import Job

# Whether a gang's GPU cards fit cluster c's free rows (victims' resources back) once these
# victims' cards are back too.
CardCheck = Callable[[int, IntArray, Iterable[str]], bool]


@dataclass(frozen=True, slots=True)
class Ask:
    job: Job
    packer: CardPacker | None = None  # None unless it asks for GPU cards
    cards: CardCheck | None = None  # the packer's test of a plan
    mask: NodeMask = everywhere  # per cluster, the nodes its gang may use: victims count only there
    # What sets its mask apart from its queue's (whose jobs share node groups): pod anti-affinity,
    # whose candidates carry a key of their own; a failed preemption plan is remembered under it.
    key: str = ""


def mask_key(job: Job) -> str:
    key = job.cand.key.hex() if job.anti else ""
    topo = job.snap.network_topology
    if topo is not None and topo[0] == "hard":
        key += f"/hard<={topo[1]}"  # its victims come from one HyperNode, not the whole cluster
    return key


def card_check(packer: CardPacker, gang: PreparedGang) -> CardCheck:
    """A preemption or reclaim plan's card test for this gang."""

    def check(c: int, free: IntArray, victims: Iterable[str]) -> bool:
        return packer.check(c, free, gang, victims)

    return check
