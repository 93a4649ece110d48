"""The seam between the agent's controller/scheduler and a cluster.

A backend owns the truth about nodes and pods. The controller asks it to create, bind and delete
pods and reads back what it observes; it never assumes a request took effect before the backend
reports it. A kube backend maps these calls to pod create / Binding / delete and a pod watch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from vglobal.agent.pods import PodManifest, PodStatus
from vglobal.model.hypernode import ResolvedHyperNode
from vglobal.model.resources import ResourceVector
from vglobal.scheduler.api import NodeSpec


class Backend(Protocol):
    @property
    def cluster_name(self) -> str: ...

    @property
    def cluster_labels(self) -> Mapping[str, str]: ...

    def nodes(self) -> tuple[NodeSpec, ...]:
        """The schedulable inventory (allocatable includes ``pods``)."""
        ...

    def hyper_nodes(self) -> tuple[ResolvedHyperNode, ...]:
        """The cluster's resolved HyperNode tree (manifests and label discovery); empty if none."""
        ...

    def free(self) -> dict[str, ResourceVector]:
        """Per node: allocatable minus the requests (and pod slots) of its unfinished pods."""
        ...

    def create_pod(self, pod: PodManifest) -> None: ...

    def bind_pod(self, uid: str, node: str) -> None: ...

    def delete_pod(self, uid: str) -> None:
        """Remove the pod (unknown uids are ignored: deletes may race with the pod ending)."""
        ...

    def pods(self) -> Mapping[str, PodStatus]:
        """Every pod the backend knows, by uid."""
        ...

    def advance(self, now: float) -> None:
        """Bring observed pod state up to ``now`` (the sim ends pods whose duration elapsed)."""
        ...

    def next_event_time(self) -> float | None:
        """When a pod will change by itself next, if the backend knows (the sim does; kube not)."""
        ...
