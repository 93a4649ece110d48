"""Group commit of concurrent SubmitJob calls: the calls that arrive while a group is being stored
wait, and are then stored together, in one transaction with one NOTIFY.

Each call still gets its own answer: a submission the hub refuses (its queue is missing, its name
is taken under another request) fails alone, and the rest of its group is stored without it. A
request_id submitted twice in one group, or before, gives one job (``submit.store``). A caller's
answer is sent only once its group is committed, so a job acknowledged is durable.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field

from sqlalchemy.orm import Session, sessionmaker

from vglobal.hub.submit import ItemFailed, Submission, store
from vglobal.model.records import JobRow
from vglobal.store.engine import session_scope

log = logging.getLogger(__name__)

# Submissions in one transaction at most; more wait for the next group.
MAX_GROUP = 1000
# Groups stored at once: while one waits on Postgres, the next is being built.
COMMITTERS = 2


@dataclass
class Pending:
    submission: Submission
    answer: Future[tuple[JobRow, bool]] = field(default_factory=Future)


class SubmitGroups:
    """Stores the submissions handed to ``submit`` in groups, on ``COMMITTERS`` threads of its own."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions
        self._waiting: list[Pending] = []
        self._ready = threading.Condition()
        self._threads: list[threading.Thread] = []

    def submit(self, submission: Submission) -> tuple[JobRow, bool]:
        """The stored job and whether this call created it, once its group is committed."""
        return self.enqueue(submission).result()

    def enqueue(self, submission: Submission) -> Future[tuple[JobRow, bool]]:
        """``submit`` without waiting: the answer, set once the submission's group is committed
        (a coroutine awaits it with ``asyncio.wrap_future``)."""
        pending = Pending(submission)
        with self._ready:
            if not self._threads:
                self._start()
            self._waiting.append(pending)
            self._ready.notify()
        return pending.answer

    def _start(self) -> None:
        for i in range(COMMITTERS):
            t = threading.Thread(target=self._run, name=f"submit-group-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._waiting:
                    self._ready.wait()
                group, self._waiting = self._waiting[:MAX_GROUP], self._waiting[MAX_GROUP:]
            self._store(group)

    def _store(self, group: list[Pending]) -> None:
        """Store ``group``; a refused submission is answered with its error and the rest retried."""
        while group:
            try:
                with session_scope(self.sessions) as session:
                    stored = store([p.submission for p in group], session=session)
            except ItemFailed as failed:
                group[failed.index].answer.set_exception(failed.error)
                del group[failed.index]
                continue
            except Exception as exc:  # the database: every caller of the group hears of it
                log.warning("storing a group of %d submissions failed: %s", len(group), exc)
                for p in group:
                    p.answer.set_exception(exc)
                return
            for p, result in zip(group, stored, strict=True):
                p.answer.set_result(result)
            return
