"""What admission needs of a stored job that never changes after submit, read for many jobs at once
(``statics``), each row turned into a JobStatic by ``static_row``; or streamed with the JSON columns
as their stored text (``static_texts``), for a caller that decodes each distinct text once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from vglobal.model.errors import Problems
from vglobal.model.forms import Gang, Placement
from vglobal.model.pod_anti_affinity import AntiTerm, terms_of
from vglobal.model.preemptable import preemption_policy, unpreemptable_tasks
from vglobal.model.queue_tuning import CHECKPOINT_ANNOTATION, checkpoint_interval
from vglobal.model.workloads import long_running
from vglobal.store.engine import joined
from vglobal.store.repo.live import STREAM_CHUNK, cursor


@dataclass(frozen=True)
class JobStatic:
    """What admission needs of a job that never changes after submit."""

    uid: str
    namespace: str
    name: str
    queue: str
    priority: int
    created_at: datetime
    request: dict[str, int]
    gang: Gang
    pod_requests: dict[str, dict[str, int]]
    placement: Placement
    min_available: int = 0
    preemption_policy: str = "PreemptLowerPriority"  # its PriorityClass's
    # Tasks whose pods are annotated (or, with no annotation, labelled) volcano.sh/preemptable:
    # "false" on the task's template, or annotated so on the job and not set otherwise on the
    # template: never preemption or reclaim victims. Every task of a long-running kind (RayCluster,
    # LeaderWorkerSet, Deployment, StatefulSet) too, unless the object says "true".
    unpreemptable: frozenset[str] = frozenset()
    # Tasks whose template names its own PriorityClass: that class's value for their pods.
    task_priorities: dict[str, int] = field(default_factory=dict)
    # The required pod anti-affinity terms of its task templates, and the templates' labels (tasks
    # with labels only): admission weighs a gang's anti-affinity against running pods' labels.
    anti_affinity: tuple[AntiTerm, ...] = ()
    template_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    checkpoint_interval: float = 0.0  # vglobal.io/checkpoint-interval, seconds (0 = none)


def task_priorities(job: str) -> str:
    """SQL: the jobs row ``job``'s tasks that name their own PriorityClass, with that class's value
    as it is now (Volcano resolves a class when it reads the pod); NULL when none has one."""
    return (
        f"(SELECT jsonb_object_agg(t.key, tc.value) FROM jsonb_each_text({job}.facts->'pcs') t "
        "JOIN priority_classes tc ON tc.name = t.value)"
    )


# One row per job, read with the driver (no SQLAlchemy row processing: a snapshot reads thousands).
# The facts read as text as the manifest's were (``->>``), the rest from the decoded column.
_STATICS = (
    "SELECT j.uid, j.namespace, j.name, j.queue, j.priority, j.created_at, j.request, j.gang, "
    "j.pod_requests, j.placement, j.min_available, "
    "COALESCE(pc.preemption_policy, 'PreemptLowerPriority'), j.facts, j.facts->>'ja', "
    f"j.facts->>'jl', j.facts->>'api', j.facts->>'kind', {task_priorities('j')} "
    "FROM jobs j LEFT JOIN priority_classes pc ON pc.name = j.priority_class_name "
    "WHERE j.uid = ANY(string_to_array(%(u)s, ','))"
)


# The same, the JSON columns as the text Postgres stores them in, so that jobs made from one template
# (most of a big backlog) are decoded once: the text is what the driver would decode.
_STATIC_TEXTS = (
    "SELECT j.uid, j.namespace, j.name, j.queue, j.priority, j.created_at, CAST(j.request AS text), "
    "CAST(j.gang AS text), CAST(j.pod_requests AS text), CAST(j.placement AS text), j.min_available, "
    "COALESCE(pc.preemption_policy, 'PreemptLowerPriority'), CAST(j.facts AS text), j.facts->>'ja', "
    f"j.facts->>'jl', j.facts->>'api', j.facts->>'kind', CAST({task_priorities('j')} AS text) "
    "FROM jobs j LEFT JOIN priority_classes pc ON pc.name = j.priority_class_name "
    "WHERE j.uid = ANY(string_to_array(%(u)s, ','))"
)
# A job's identity (uid, namespace, name, queue, priority, created_at), and the rest of its static
# columns as stored (equal for jobs of one template: the key their decoded form is shared under).
Identity = tuple[str, str, str, str, int, datetime]
StaticTexts = tuple[Any, ...]


def static_texts(uids: list[str], *, session: Session) -> Iterator[tuple[Identity, StaticTexts]]:
    """These jobs' static columns, streamed in chunks (the caller consumes them before it uses the
    session again)."""
    if not uids:
        return
    with cursor(session) as cur:
        for row in cur.stream(_STATIC_TEXTS, {"u": joined(uids)}, size=STREAM_CHUNK):
            yield row[:6], row[6:]


def _load(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def static_of_texts(ident: Identity, texts: StaticTexts) -> JobStatic:
    """The JobStatic ``statics`` reads of the same row."""
    request, gang, pods, where, min_available, policy, facts, ja, jl, api, kind, task_prios = texts
    uid, ns, name, queue, prio, created = ident
    return static_row(
        uid, ns, name, queue, prio, created,
        _load(request), Gang.from_json(_load(gang)), _load(pods), Placement.from_json(_load(where)),
        min_available, policy, _load(facts), ja, jl, api, kind, _load(task_prios),
    )  # fmt: skip


_NONE: frozenset[str] = frozenset()


def _unpreemptable(
    flags: tuple[Any, Any, Any, Any],
    job_annotation: str | None,
    job_label: str | None,
    tasks: Any,
    kind: tuple[str | None, str | None],
) -> frozenset[str]:
    default = not long_running(*kind)
    if default and job_annotation is None and job_label is None and not any(flags):
        return _NONE  # no value anywhere: every pod preemptable (most jobs)
    annotated, annotations, labelled, labels = (list(f or ()) for f in flags)
    return unpreemptable_tasks(
        job_annotation,
        job_label,
        {str(t): str(v) for t, v in zip(annotated, annotations, strict=False)},
        {str(t): str(v) for t, v in zip(labelled, labels, strict=False)},
        tasks or (),
        default=default,
    )


def statics(uids: list[str], *, session: Session) -> Iterator[JobStatic]:
    """These jobs' static parts. Read at once, typed one at a time as the caller takes them: a
    caller that converts each further keeps no typed form of them all alive together."""
    if not uids:
        return iter(())
    with cursor(session) as cur:
        cur.execute(_STATICS, {"u": joined(uids)})
        rows = cur.fetchall()
    return (
        static_row(uid, ns, name, queue, prio, created, request, Gang.from_json(gang), pods,
                Placement.from_json(where), *more)
        for (uid, ns, name, queue, prio, created, request, gang, pods, where, *more) in rows
    )  # fmt: skip


def static_row(
    uid: str,
    ns: str,
    name: str,
    queue: str,
    prio: int,
    created: datetime,
    request: dict[str, int],
    gang: Gang,
    pods: dict[str, dict[str, int]],
    where: Placement,
    min_available: int,
    policy: str,
    facts: dict[str, Any],
    job_annotation: str | None,
    job_label: str | None,
    api: str | None,
    kind: str | None,
    task_prios: dict[str, Any] | None,
) -> JobStatic:
    return JobStatic(
        uid,
        ns,
        name,
        queue,
        prio,
        created,
        request,
        gang,
        pods,
        where,
        int(min_available),
        preemption_policy(policy, facts.get("pp", ()), len(pods)),
        _unpreemptable(
            (facts.get("a"), facts.get("av"), facts.get("l"), facts.get("lv")),
            job_annotation,
            job_label,
            pods,
            (api, kind),
        ),
        {str(t): int(v) for t, v in (task_prios or {}).items()},
        terms_of(facts.get("anti", ())),
        {
            str(t): {str(k): str(v) for k, v in (lab or {}).items()}
            for t, lab in zip(facts.get("ln", ()), facts.get("lt", ()), strict=False)
        },
        _checkpoint(facts.get("ck")),
    )


def _checkpoint(value: Any) -> float:
    """The stored annotation's interval (checked at submit; 0 if absent)."""
    if not isinstance(value, str):
        return 0.0
    return checkpoint_interval(Problems(), {CHECKPOINT_ANNOTATION: value})
