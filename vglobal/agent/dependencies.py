"""The ConfigMaps and Secrets a Dispatch or an ObjectUpdate carries, as the backends take them."""

from __future__ import annotations

from collections.abc import Iterable

from vglobal.agent.backends.base import DependencyObject
from vglobal.api.v1 import agent_pb2 as pb


def dependencies_of(objects: Iterable[pb.ObjectData]) -> tuple[DependencyObject, ...]:
    return tuple(
        DependencyObject(
            kind=o.kind,
            namespace=o.namespace,
            name=o.name,
            data=dict(o.data),
            text_keys=frozenset(o.text_keys),
            type=o.type,
            immutable=o.immutable,
            labels=dict(o.labels),
            revision=o.revision,
        )
        for o in objects
    )
