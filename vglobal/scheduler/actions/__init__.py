"""Scheduler actions; importing this package registers them."""

from vglobal.scheduler.actions import allocate, backfill, enqueue, preempt, reclaim

__all__ = ["allocate", "backfill", "enqueue", "preempt", "reclaim"]
