"""The built-in actions and plugins, by the names a ``volcano-scheduler.conf`` uses for them.

One explicit table each, built here from the modules that hold them (nothing registers itself on
import). ``run_cycle`` and ``parse_conf`` use these unless given others, as a test or the simulator
may do to add a plugin of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from vglobal.scheduler.actions import allocate, backfill, enqueue, preempt, reclaim
from vglobal.scheduler.plugins.binpack import BinpackPlugin
from vglobal.scheduler.plugins.capacity import CapacityPlugin
from vglobal.scheduler.plugins.conformance import ConformancePlugin
from vglobal.scheduler.plugins.deviceshare import DeviceSharePlugin
from vglobal.scheduler.plugins.drf import DrfPlugin
from vglobal.scheduler.plugins.gang import GangPlugin
from vglobal.scheduler.plugins.network_topology_aware import NetworkTopologyAwarePlugin
from vglobal.scheduler.plugins.nodegroup import NodeGroupPlugin
from vglobal.scheduler.plugins.nodeorder import NodeOrderPlugin
from vglobal.scheduler.plugins.overcommit import OvercommitPlugin
from vglobal.scheduler.plugins.predicates import PredicatesPlugin
from vglobal.scheduler.plugins.priority import PriorityPlugin
from vglobal.scheduler.plugins.proportion import ProportionPlugin
from vglobal.scheduler.plugins.resource_strategy_fit import ResourceStrategyFitPlugin
from vglobal.scheduler.session import ActionFn, PluginFactory

ACTIONS: Mapping[str, ActionFn] = MappingProxyType(
    {
        "enqueue": enqueue.execute,
        "allocate": allocate.execute,
        "backfill": backfill.execute,
        "preempt": preempt.execute,
        "reclaim": reclaim.execute,
    }
)

PLUGINS: Mapping[str, PluginFactory] = MappingProxyType(
    {
        plugin.name: plugin
        for plugin in (
            PriorityPlugin,
            GangPlugin,
            ConformancePlugin,
            DrfPlugin,
            ProportionPlugin,
            CapacityPlugin,
            PredicatesPlugin,
            NodeOrderPlugin,
            BinpackPlugin,
            NodeGroupPlugin,
            OvercommitPlugin,
            ResourceStrategyFitPlugin,
            NetworkTopologyAwarePlugin,
            DeviceSharePlugin,
        )
    }
)
