"""The queue a submitted job goes to and the placement its queue gives it, read once per batch.

A job that names no queue goes to the queue its Namespace's ``scheduling.volcano.sh/queue-name``
annotation names (else ``default``); the queue is then fixed. A job that sets no allowed clusters
or cluster preference of its own takes those of its queue, or of the queue's nearest ancestor that
sets them (``model.queue_policy``), as the queue tree is at submit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from sqlalchemy.orm import Session

from vglobal.hub.auth.access import PRINCIPAL, require
from vglobal.hub.auth.policy import Action
from vglobal.hub.errors import NotFound
from vglobal.model.job import DEFAULT_QUEUE, Job
from vglobal.model.namespace import QUEUE_ANNOTATION
from vglobal.model.queue_policy import QueuePolicy, inherited, with_policy
from vglobal.store.repo import namespaces as namespaces_repo
from vglobal.store.repo import queues as queues_repo

ROOT = "root"


def names_no_queue(job: Job) -> bool:
    return not job.queue_from and job.queue == DEFAULT_QUEUE


def queue_source(job: Job, queue: str) -> str:
    """Where a stored job's queue came from, when not from the job itself ("" otherwise)."""
    if names_no_queue(job) and queue != DEFAULT_QUEUE:
        return f"namespace {job.namespace} annotation {QUEUE_ANNOTATION}"
    return ""


class QueueChoice:
    """Namespaces' queues and queues' policies of one batch, each looked up once."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.namespaces: dict[str, str] = {}
        self.policies: dict[str, QueuePolicy] = {}

    def _namespace_queue(self, namespace: str) -> str:
        if namespace not in self.namespaces:
            found = namespaces_repo.queues_of([namespace], session=self.session)
            queue = found.get(namespace, DEFAULT_QUEUE)
            if queue != DEFAULT_QUEUE and queues_repo.get_queue(queue, session=self.session) is None:
                raise NotFound(
                    f'metadata.namespace: the job names no queue and namespace "{namespace}" names '
                    f'queue "{queue}" ({QUEUE_ANNOTATION}), which is not found'
                )
            self.namespaces[namespace] = queue
        return self.namespaces[namespace]

    def _policy(self, queue: str) -> QueuePolicy:
        if queue not in self.policies:
            chain: list[Mapping[str, str]] = []
            seen: set[str] = set()
            cur: str | None = queue
            while cur and cur != ROOT and cur not in seen:
                seen.add(cur)
                row = queues_repo.get_queue(cur, session=self.session)
                if row is None:
                    break
                chain.append(row.annotations)
                cur = row.parent
            self.policies[queue] = inherited(chain)
        return self.policies[queue]

    def resolve(self, job: Job, *, stored: str = "") -> Job:
        """The job in the queue it goes to, with its queue's placement where it sets none. A
        caller submitting it must be allowed to submit to that queue. A job applied again that
        names no queue stays in the queue it is ``stored`` in."""
        if names_no_queue(job):
            queue = stored or self._namespace_queue(job.namespace)
            if PRINCIPAL.get() is not None:
                require(Action.submit_jobs, queue=queue)
            if queue != job.queue:
                job = dataclasses.replace(job, queue=queue)
        return with_policy(job, self._policy(job.queue))
