"""Built-in plugins; importing this package registers them by their conf names."""

from vglobal.scheduler.plugins import (
    binpack,
    capacity,
    conformance,
    deviceshare,
    drf,
    gang,
    network_topology_aware,
    nodegroup,
    nodeorder,
    overcommit,
    predicates,
    priority,
    proportion,
    resource_strategy_fit,
)

__all__ = [
    "binpack",
    "capacity",
    "conformance",
    "deviceshare",
    "drf",
    "gang",
    "network_topology_aware",
    "nodegroup",
    "nodeorder",
    "overcommit",
    "predicates",
    "priority",
    "proportion",
    "resource_strategy_fit",
]
