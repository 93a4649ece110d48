"""Syncs of many agent streams run together, in one transaction.

A stream asks for a sync when it is woken (an admission to its cluster, a fence, its interval).
The syncs asked for while a group runs go together in the next group: one transaction, so one
connection checkout, begin and commit for all, and what every sync reads alike (the queues, their
rooms, the changed objects) read once. At 100 connected clusters that part was most of what a
sync cost, and every stream paid it every second. Up to ``PARALLEL`` groups run at once, the
waiting requests shared among them: a group's statements wait on the database more than they
compute, and one group at a time made 100 streams' deliveries wait in line. A group that fails
is run again request by request (``alone``), so one stream's failure ends that stream only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

R = TypeVar("R")
T = TypeVar("T")

MAX_GROUP = 200  # syncs in one transaction at most
PARALLEL = 3  # groups at once (of the agent streams' pool of 8 threads, for syncs and for reports each)


class SyncGroups(Generic[R, T]):
    """``together(requests)`` runs a group, ``alone(request)`` one request, each through ``run``
    (the pool the database work runs in); up to ``PARALLEL`` groups at a time."""

    def __init__(
        self,
        together: Callable[[list[R]], list[T]],
        alone: Callable[[R], T],
        run: Callable[..., Awaitable[Any]],
    ) -> None:
        self.together = together
        self.alone = alone
        self.run = run
        self.waiting: list[tuple[R, asyncio.Future[T]]] = []
        self.running = 0  # groups' drains
        self.drainers: set[asyncio.Future[None]] = set()
        self.groups = 0  # run so far (for tests and the curious)

    async def __call__(self, request: R) -> T:
        fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self.waiting.append((request, fut))
        if self.running < PARALLEL:
            self.running += 1
            drainer = asyncio.ensure_future(self._drain())
            self.drainers.add(drainer)
            drainer.add_done_callback(self.drainers.discard)
        return await fut

    async def _drain(self) -> None:
        group: list[tuple[R, asyncio.Future[T]]] = []
        try:
            while self.waiting:
                size = min(MAX_GROUP, -(-len(self.waiting) // self.running))  # shared with the others
                group, self.waiting = self.waiting[:size], self.waiting[size:]
                group = [(r, f) for r, f in group if not f.done()]  # a stream that ended meanwhile
                if not group:
                    continue
                self.groups += 1
                try:
                    outs = await self.run(self.together, [r for r, _ in group])
                except Exception as exc:
                    if len(group) > 1:
                        log.warning("a group of %d agent syncs failed (%s): each again", len(group), exc)
                    await self._alone(group)
                    continue
                for (_, fut), out in zip(group, outs, strict=True):
                    if not fut.done():
                        fut.set_result(out)
                group = []
        except BaseException:
            for _, fut in [*group, *self.waiting]:
                fut.cancel()
            self.waiting = []
            raise
        finally:
            self.running -= 1

    async def _alone(self, group: list[tuple[R, asyncio.Future[T]]]) -> None:
        for request, fut in group:
            try:
                out = await self.run(self.alone, request)
            except Exception as exc:
                if not fut.done():
                    fut.set_exception(exc)
                continue
            if not fut.done():
                fut.set_result(out)
