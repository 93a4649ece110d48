"""Every loop a hub runs, in one table: its name, how it runs, and whether only the leader runs it.

A leader-only loop runs on every replica but ticks only while its own check says this replica
holds the leader lock (loop_runner.py); the others (the NOTIFY listener, the watch feed) serve
every replica alike. Each runs on a thread of its own until the hub's ``stop`` is set.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from vglobal.hub.context import HubContext
from vglobal.hub.counts_loop import JobCountsLoop
from vglobal.hub.cron.loop import CronLoop
from vglobal.hub.dispatch.loop import DispatchLoop
from vglobal.hub.failover import FailoverLoop
from vglobal.hub.flows.loop import FlowLoop
from vglobal.hub.forecast.loop import ForecastLoop
from vglobal.hub.leader import Leader
from vglobal.hub.loop_runner import LeaderLoop, LoopState, run_leader_loop
from vglobal.hub.notify import listen_forever
from vglobal.hub.queue_history import QueueHistoryLoop
from vglobal.hub.retention import RetentionLoop
from vglobal.hub.watch.feed import WatchFeed
from vglobal.hub.watch.log_loop import ChangeLog


@dataclass(frozen=True)
class LoopEnv:
    """What the loops of one hub are given."""

    ctx: HubContext
    leader: Leader
    stop: threading.Event
    feed: WatchFeed
    dsn: str  # the database, as the NOTIFY listener connects to it


@dataclass(frozen=True)
class LoopDef:
    name: str
    run: Callable[[LoopEnv, LoopState], None]
    leader_only: bool


def _leader_loop(make: Callable[[HubContext], LeaderLoop]) -> Callable[[LoopEnv, LoopState], None]:
    def run(env: LoopEnv, state: LoopState) -> None:
        run_leader_loop(make(env.ctx), env.ctx, env.leader, env.stop, state)

    return run


def _forecast(env: LoopEnv, state: LoopState) -> None:
    if env.ctx.settings.forecast_interval > 0:
        _leader_loop(ForecastLoop)(env, state)


def _retention(env: LoopEnv, state: LoopState) -> None:
    if env.ctx.settings.finished_job_ttl > 0:  # else finished jobs are kept forever
        _leader_loop(RetentionLoop)(env, state)


LOOPS: tuple[LoopDef, ...] = (
    LoopDef("notify", lambda env, _: listen_forever(env.dsn, env.ctx.wakeups, env.stop), leader_only=False),
    LoopDef("dispatcher", _leader_loop(DispatchLoop), leader_only=True),
    LoopDef("failover", _leader_loop(FailoverLoop), leader_only=True),
    LoopDef("cron", _leader_loop(CronLoop), leader_only=True),
    LoopDef("jobflows", _leader_loop(FlowLoop), leader_only=True),
    LoopDef("watch-log", _leader_loop(ChangeLog), leader_only=True),
    LoopDef("watch-feed", lambda env, _: env.feed.run(env.stop), leader_only=False),
    LoopDef("retention", _retention, leader_only=True),
    LoopDef("queue-history", _leader_loop(QueueHistoryLoop), leader_only=True),
    LoopDef("job-counts", _leader_loop(JobCountsLoop), leader_only=True),
    LoopDef("forecast", _forecast, leader_only=True),
)


@dataclass(eq=False)
class RunningLoop:
    loop: LoopDef
    state: LoopState
    thread: threading.Thread


def start_loops(env: LoopEnv, loops: tuple[LoopDef, ...] = LOOPS) -> list[RunningLoop]:
    """Each loop on a daemon thread named for it; its state's ``ended`` is set when it returns."""
    running = []
    for loop in loops:
        state = LoopState(loop.name)
        t = threading.Thread(target=_run, args=(loop, env, state), name=loop.name, daemon=True)
        t.start()
        running.append(RunningLoop(loop, state, t))
    return running


def _run(loop: LoopDef, env: LoopEnv, state: LoopState) -> None:
    try:
        loop.run(env, state)
    finally:
        state.ended.set()
