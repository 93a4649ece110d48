"""A stored job's static part as admission's facts (``vglobal.admission.inputs``), converted once per job
(``facts_of``), or for many jobs at once with one conversion per distinct stored form (``read_facts``)."""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy.orm import Session

from vglobal.admission.inputs import JobFacts, Shared
from vglobal.store.repo.job_statics import StaticTexts, static_of_texts, static_texts
from vglobal.store.repo.jobs import JobStatic

__all__ = ["JobFacts", "Shared", "Templates", "facts_of", "read_facts"]

# Facts already made, by their stored static columns' text: every job with the same texts has the
# same facts but for its identity. Kept by the dispatcher with its Shared (and dropped with it).
Templates = dict[StaticTexts, JobFacts]


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


def read_facts(uids: list[str], shared: Shared, made: Templates, *, session: Session) -> Iterator[JobFacts]:
    """These jobs' facts, equal to ``facts_of`` of each one's ``statics``, read streamed: a job whose
    stored static columns are those of one made before shares that one's decoded parts (they are
    immutable), and only its identity is its own. A backlog of a few templates decodes a few."""
    new = object.__new__
    for ident, texts in static_texts(uids, session=session):
        like = made.get(texts)
        if like is None:
            made[texts] = got = facts_of(static_of_texts(ident, texts), shared)
            yield got
            continue
        # A copy with its own identity: a frozen dataclass's fields live in its __dict__, and
        # replace() (which runs __init__ over every field) costs several times more per job.
        got = new(JobFacts)
        d = got.__dict__
        d.update(like.__dict__)
        d["uid"], d["namespace"], d["name"], d["queue"], d["priority"], created = ident
        d["created"] = created.timestamp()
        yield got
