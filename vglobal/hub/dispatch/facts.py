"""A stored job's static part as admission's facts (``vglobal.admission.inputs``), converted once per job."""

from __future__ import annotations

from vglobal.admission.inputs import JobFacts, Shared
from vglobal.store.repo.jobs import JobStatic

__all__ = ["JobFacts", "Shared", "facts_of"]


def facts_of(s: JobStatic, shared: Shared) -> JobFacts:
    return JobFacts.of(
        uid=s.uid,
        namespace=s.namespace,
        name=s.name,
        queue=s.queue,
        priority=s.priority,
        created=s.created_at.timestamp(),
        request=s.request,
        gang=((p.request, p.count) for p in s.gang.shapes),
        pod_requests=s.pod_requests,
        placement=s.placement,
        shared=shared,
        min_available=s.min_available,
        preemption_policy=s.preemption_policy,
        unpreemptable=s.unpreemptable,
        task_priorities=s.task_priorities,
        anti_affinity=s.anti_affinity,
        template_labels=s.template_labels,
        checkpoint_interval=s.checkpoint_interval,
    )
