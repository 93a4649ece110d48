"""The forecast loop (leader only): every ``--forecast-interval`` it replays admission forward from
the dispatcher's last committed cycle (admission/forecast.py) and stores, for each waiting job, when
it is expected to start, where, and behind how many jobs of its queue.

Its CPU is bounded: a replay that took more than ``--forecast-budget`` replays half as many cycles
next time (the jobs it does not reach are "unknown"), one well under it twice as many; when even the
shortest replay costs more (a deep backlog: one admit() over 100k pending jobs takes over a
second), the next one waits longer, so the loop never takes more than budget/interval of a core.
"""

from __future__ import annotations

import logging
import time

from vglobal.admission import Wait
from vglobal.admission.forecast import Estimate, forecast
from vglobal.hub.context import HubContext
from vglobal.hub.forecast.durations import RunTimes
from vglobal.hub.loop_runner import LeaderLoop
from vglobal.store.engine import session_scope
from vglobal.store.repo import estimates as estimates_repo

log = logging.getLogger(__name__)

HISTORY = 5000  # completed jobs the run-time medians are taken over
HISTORY_EVERY = 600.0  # seconds between reads of that history
OVERDUE = 60.0  # a run past its expected end is expected to end this much later
MIN_CYCLES, MAX_CYCLES = 4, 2000


class ForecastLoop(LeaderLoop):
    name = "forecast"

    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx
        self.min_gap = self.max_wait = ctx.settings.forecast_interval
        self.cycles = 64
        self.written: dict[str, tuple[float | None, str, int]] = {}
        self.hints: dict[str, tuple[str | None, object]] = {}  # uid -> (annotation, deadline)
        self.times = RunTimes(())
        self.times_at = -HISTORY_EVERY

    def lead(self) -> None:
        self.written = {}  # another leader may have written since: write every row again

    def tick(self, woken: bool) -> float:
        last = self.ctx.last_cycle
        if last is None:
            return self.max_wait
        snapshot, result = last
        waiting = [p for p in snapshot.pending if isinstance(result.decisions.get(p.uid), Wait)]
        with session_scope(self.ctx.sessions) as session:
            if time.monotonic() - self.times_at >= HISTORY_EVERY:
                self.times = RunTimes(estimates_repo.run_times(HISTORY, session=session))
                self.times_at = time.monotonic()
            known = {p.uid for p in snapshot.pending} | {r.uid for r in snapshot.running}
            self.hints = {u: h for u, h in self.hints.items() if u in known}
            new = [u for u in known if u not in self.hints]
            self.hints.update(estimates_repo.hints(new, session=session))
        durations = {}
        for p in snapshot.pending:
            d = self.times.expected(p.queue, p.name, *self.hints.get(p.uid, (None, None)))
            if d is not None:
                durations[p.uid] = d
        ends = {}
        for r in snapshot.running:
            d = self.times.expected(r.queue, r.name, *self.hints.get(r.uid, (None, None)))
            if d is not None:
                since = snapshot.now if r.running_since is None else r.running_since
                ends[r.uid] = max(since + d, snapshot.now + OVERDUE)
        cpu = time.thread_time()
        horizon = self.ctx.settings.forecast_horizon
        fc = forecast(snapshot, ends, durations, max_cycles=self.cycles, horizon=horizon)
        cpu = time.thread_time() - cpu
        if cpu > self.ctx.settings.forecast_budget:
            self.cycles = max(MIN_CYCLES, self.cycles // 2)
        elif cpu < self.ctx.settings.forecast_budget / 4 and fc.cycles >= self.cycles:
            self.cycles = min(MAX_CYCLES, self.cycles * 2)
        rows = {p.uid: _row(fc.estimates[p.uid]) for p in waiting}
        changed = {u: r for u, r in rows.items() if self.written.get(u) != r}
        gone = [u for u in self.written if u not in rows]
        with session_scope(self.ctx.sessions) as session:
            estimates_repo.write(changed, gone, snapshot.now, session=session)
            estimates_repo.touch(snapshot.now, session=session)
        self.written = rows
        log.debug("forecast: %d waiting, %d cycles, cpu %.3f s", len(rows), fc.cycles, cpu)
        return max(self.max_wait, self.max_wait * cpu / self.ctx.settings.forecast_budget)


def _row(e: Estimate) -> tuple[float | None, str, int]:
    return (e.start, e.cluster, e.ahead)
