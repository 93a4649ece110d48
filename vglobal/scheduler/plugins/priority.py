"""priority: higher task / job priority first; victims must have lower priority."""

from __future__ import annotations

from collections.abc import Sequence

from vglobal.scheduler.framework import PERMIT, Plugin
from vglobal.scheduler.info import JobInfo, TaskInfo
from vglobal.scheduler.session import Session


def _cmp_desc(a: int, b: int) -> int:
    return -1 if a > b else (1 if a < b else 0)


class PriorityPlugin(Plugin[Session]):
    name = "priority"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_task_order_fn(self.name, lambda a, b: _cmp_desc(a.priority, b.priority))
        ssn.add_job_order_fn(self.name, lambda a, b: _cmp_desc(a.priority, b.priority))

        def victims(preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> tuple[list[TaskInfo], int]:
            out = []
            for t in preemptees:
                if t.job is preemptor.job:
                    if t.priority < preemptor.priority:
                        out.append(t)
                elif t.job.priority < preemptor.job.priority:
                    out.append(t)
            return out, PERMIT

        ssn.add_preemptable_fn(self.name, victims)

        def starving(job: JobInfo) -> bool:
            return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)

        ssn.add_job_starving_fn(self.name, starving)
