"""`vglobal apply` and Volcano PodGroups: the pods of the files that name a PodGroup of the same
files travel with it (in its ``vglobal.io/pods`` annotation), so the hub admits them as one job."""

from __future__ import annotations

from dataclasses import replace

from vglobal.cli.documents import Document
from vglobal.model.kinds import pod_group


def attach_pods(docs: list[Document]) -> list[Document]:
    """The documents without the pods of their PodGroups, each PodGroup carrying its pods."""
    if not any(pod_group.is_pod_group(d.body) for d in docs):
        return docs
    all_bodies = [d.body for d in docs]
    taken = pod_group.members(all_bodies)
    kept = [d for i, d in enumerate(docs) if i not in taken]
    bodies = pod_group.carry(all_bodies)
    return [d if body is d.body else replace(d, body=body) for d, body in zip(kept, bodies, strict=True)]
