"""Pure local scheduler: Volcano's session, actions and plugins over a cluster snapshot.

``run_cycle(state, conf)`` is one scheduling session: open (plugins register their functions),
run the conf's actions in order, close (PodGroup phases, reasons). No clock, no randomness, no I/O.

Extending it (topology, devices): a plugin module calls ``registry.register_plugin(name, cls)`` and
is imported from ``vglobal.scheduler.plugins``; in ``on_session_open`` it registers functions on the
session: ``add_predicate_fn`` (node filters over all rows), ``add_node_order_fn(fn, batch)`` and
``add_batch_node_order_fn`` (scores), ``add_hyper_node_order_fn``, ``add_job_allocator_fn`` (take over
allocate for e.g. hard-topology jobs, with ``allocate_for_tasks(..., candidates=rows)`` and
``Statement.save_operations`` / ``recover_operations`` for dry runs), event handlers, votes.
Extra node or job data travels in ``NodeSpec.extensions`` / ``JobSpec.annotations``.
"""

from __future__ import annotations

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
from vglobal.scheduler.conf import DEFAULT_AGENT_CONF, PluginOption, SchedulerConf, parse_conf


def run_cycle(
    state: ClusterSnapshot, conf: SchedulerConf = DEFAULT_AGENT_CONF, *, vectorized: bool = True
) -> CycleResult:
    """One session: open, actions in order, close.

    ``vectorized=False`` scores nodes one by one in Python (for the benchmark comparison only).
    """
    from vglobal.scheduler.session import Session

    ssn = Session(state, conf, vectorized=vectorized)
    ssn.open()
    ssn.run_actions()
    return ssn.close()


__all__ = [
    "DEFAULT_AGENT_CONF",
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
    "parse_conf",
    "run_cycle",
]
