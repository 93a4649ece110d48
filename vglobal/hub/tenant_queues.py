"""Sub-queues a tenant manages: a caller that may not manage queues (role ``tenant``) applies or
deletes a queue only under a queue its grant names, itself named within the grant, and never
beyond its parent: capability and deserved within the parent's capability, and the children's
guarantees within the parent's guarantee (Volcano's hierarchical capacity rule, checked at apply)."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.orm import Session

from vglobal.hub.auth.access import current_principal, require
from vglobal.hub.auth.policy import Action, may
from vglobal.hub.errors import InvalidArgument
from vglobal.model.quantity import format_units
from vglobal.model.queue import ROOT, Queue
from vglobal.store.repo import queues as queues_repo


def manages_all_queues() -> bool:
    return may(current_principal(), Action.manage_queues)


def _within(field: str, child: Mapping[str, int], limit: Mapping[str, int] | None, what: str) -> None:
    if limit is None:
        return
    for resource, units in sorted(child.items()):
        cap = limit.get(resource)
        if cap is not None and units > cap:
            raise InvalidArgument(
                f"{field}.{resource}: {format_units(resource, units)} is more than the "
                f"{format_units(resource, cap)} of {what}"
            )


def check_sub_queue(queue: Queue, *, session: Session) -> None:
    """For a tenant: ``queue`` goes under a queue it was granted and stays within it."""
    if manages_all_queues():
        return
    parent = queue.parent or ROOT
    require(Action.manage_subqueues, queue=parent)
    require(Action.manage_subqueues, queue=queue.name)
    before = queues_repo.get_queue(queue.name, session=session)
    if before is not None and before.parent and before.parent != parent:
        require(Action.manage_subqueues, queue=before.parent)  # a move takes it from there too
    row = queues_repo.get_queue(parent, session=session)
    if row is None:
        return  # the tree check says the parent is missing
    what = f'parent queue "{parent}"'
    if queue.capability is not None:
        _within("spec.capability", dict(queue.capability.items()), row.capability, f"{what}'s capability")
    if queue.deserved is not None:
        _within("spec.deserved", dict(queue.deserved.items()), row.capability, f"{what}'s capability")
    guaranteed = dict(queue.guarantee.items())
    if guaranteed:
        for sibling in queues_repo.list_queues(session=session):
            if sibling.parent == parent and sibling.name != queue.name:
                for r, units in sibling.guarantee.items():
                    guaranteed[r] = guaranteed.get(r, 0) + units
        _within(
            "spec.guarantee.resource",
            guaranteed,
            row.guarantee if row.guarantee else {r: 0 for r in guaranteed},
            f"{what}'s guarantee (with its other children's)",
        )


def check_sub_queue_delete(name: str, parent: str | None) -> None:
    """For a tenant: only a queue it manages, under a queue it was granted."""
    if manages_all_queues():
        return
    require(Action.manage_subqueues, queue=parent or ROOT)
    require(Action.manage_subqueues, queue=name)
