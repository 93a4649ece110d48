"""Pure local scheduler: Volcano's session, actions and plugins over a cluster snapshot.

``run_cycle(state, conf)`` is one scheduling session: open (plugins register their functions),
run the conf's actions in order, close (PodGroup phases, reasons). No clock, no randomness, no I/O.
"""

from __future__ import annotations

from vglobal.scheduler.api import (
    ClusterState,
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
    state: ClusterState, conf: SchedulerConf = DEFAULT_AGENT_CONF, *, vectorized: bool = True
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
    "ClusterState",
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
