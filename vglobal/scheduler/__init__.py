"""Pure local scheduler: Volcano's session, actions and plugins over a cluster snapshot.

``run_cycle(state, conf)`` is one scheduling session: open (plugins register their functions),
run the conf's actions in order, close (PodGroup phases, reasons). No clock, no randomness, no I/O.

Extending it (topology, devices): a plugin is a ``Plugin[Session]`` class in ``vglobal.scheduler.plugins``
with a row in ``vglobal.scheduler.tables.PLUGINS`` (an action: a function with a row in ``ACTIONS``);
``run_cycle`` and ``parse_conf`` take other tables too. In ``on_session_open`` it registers functions on the
session: ``add_predicate_fn`` (node filters over all rows), ``add_node_order_fn(fn, batch)`` and
``add_batch_node_order_fn`` (scores), ``add_hyper_node_order_fn``, ``add_job_allocator_fn`` (take over
allocate for e.g. hard-topology jobs, with ``allocate_for_tasks(..., candidates=rows)`` and
``Statement.save_operations`` / ``recover_operations`` for dry runs), event handlers, votes.
Extra node or job data travels in ``NodeSpec.extensions`` / ``JobSpec.annotations``.
"""

from __future__ import annotations

from collections.abc import Mapping

from vglobal.scheduler.api import (
    ClusterSnapshot,
    CycleResult,
    JobSpec,
    NodeSpec,
    QueueSpec,
    Taint,
    TaskSpec,
    TaskStatus,
)
from vglobal.scheduler.conf import DEFAULT_AGENT_CONF, PluginOption, SchedulerConf, node_group_mode
from vglobal.scheduler.conf import parse_conf as _parse_conf
from vglobal.scheduler.session import ActionFn, PluginFactory, Session
from vglobal.scheduler.tables import ACTIONS, PLUGINS


def parse_conf(
    text: str, *, actions: Mapping[str, ActionFn] = ACTIONS, plugins: Mapping[str, PluginFactory] = PLUGINS
) -> SchedulerConf:
    """Parse a volcano-scheduler.conf document that may name the tables' actions and plugins."""
    return _parse_conf(text, actions=actions, plugins=plugins)


def run_cycle(
    state: ClusterSnapshot,
    conf: SchedulerConf = DEFAULT_AGENT_CONF,
    *,
    vectorized: bool = True,
    actions: Mapping[str, ActionFn] = ACTIONS,
    plugins: Mapping[str, PluginFactory] = PLUGINS,
) -> CycleResult:
    """One session: open, actions in order, close.

    ``vectorized=False`` scores nodes one by one in Python (for the benchmark comparison only).
    """
    ssn = Session(state, conf, actions=actions, plugins=plugins, vectorized=vectorized)
    ssn.open()
    ssn.run_actions()
    return ssn.close()


__all__ = [
    "ACTIONS",
    "DEFAULT_AGENT_CONF",
    "PLUGINS",
    "ClusterSnapshot",
    "CycleResult",
    "JobSpec",
    "NodeSpec",
    "PluginOption",
    "QueueSpec",
    "SchedulerConf",
    "Taint",
    "TaskSpec",
    "TaskStatus",
    "node_group_mode",
    "parse_conf",
    "run_cycle",
]
