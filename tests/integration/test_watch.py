"""WatchJobs through the real gRPC API on a real Postgres: resuming, revisions too old, filters,
a reader too slow, and two watchers through a burst of a thousand jobs."""

from __future__ import annotations

import threading
import time
from typing import Any

import grpc
import pytest

from tests.integration.agent_driver import ScriptedAgent
from tests.integration.polling import wait
from vglobal.api.v1 import jobs_pb2, jobs_pb2_grpc
from vglobal.client import Client, JobWatch, VGlobalError
from vglobal.config import HubSettings
from vglobal.hub.server import Hub
from vglobal.store.engine import session_scope
from vglobal.store.repo import job_changes as changes_repo

ADDED, MODIFIED, DELETED, BOOKMARK = (
    jobs_pb2.JobEvent.ADDED,
    jobs_pb2.JobEvent.MODIFIED,
    jobs_pb2.JobEvent.DELETED,
    jobs_pb2.JobEvent.BOOKMARK,
)
SMALL = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: %(name)s, namespace: %(ns)s, labels: {team: %(team)s}}
spec:
  queue: %(queue)s
  tasks:
  - name: w
    replicas: 1
    template: {spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]}}
"""


def small(name: str, ns: str = "default", team: str = "a", queue: str = "default") -> str:
    return SMALL % {"name": name, "ns": ns, "team": team, "queue": queue}


class Watcher:
    """Reads a watch on a thread into a list, as a client would."""

    def __init__(self, events: JobWatch) -> None:
        self.events: list[jobs_pb2.JobEvent] = []
        self.error: BaseException | None = None
        self._it = events
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for ev in self._it:
                self.events.append(ev)
        except BaseException as exc:
            self.error = exc

    def names(self, kind: int | None = None) -> list[str]:
        return [e.job.name for e in self.events if kind is None or e.type == kind]

    def close(self) -> None:
        self._it.close()
        self._thread.join(5)


def last_revision(hub: Hub) -> int:
    with session_scope(hub.ctx.sessions) as session:
        return changes_repo.last_revision(session=session)


def test_a_watch_resumes_from_the_last_revision_it_saw(client: Client) -> None:
    _, start = client.list_jobs_at()
    w = Watcher(client.watch_jobs(from_revision=start))
    client.submit_job(small("first"))
    wait(lambda: w.names(ADDED) == ["first"], what="first added")
    seen = w.events[0].revision
    w.close()
    client.submit_job(small("second"))  # while nobody watches
    client.cancel_job("first")
    again = Watcher(client.watch_jobs(from_revision=seen))
    wait(
        lambda: any(e.job.name == "first" and e.job.phase == "Aborted" for e in again.events),
        what="the missed cancellation",
    )
    assert again.names(ADDED) == ["second"]  # nothing seen before comes again
    assert [e.revision for e in again.events] == sorted({e.revision for e in again.events})
    assert all(e.revision > seen for e in again.events)
    assert [e.job.binding_phase for e in again.events if e.job.name == "first"][-1] == "Aborted"
    again.close()


def test_a_list_of_an_empty_log_is_followed_from_revision_zero(hub: Hub, client: Client) -> None:
    jobs, start = client.list_jobs_at()
    assert jobs == [] and start == 0  # a fresh hub has logged nothing yet
    client.submit_job(small("early"))  # after the list, before the watch opens
    wait(lambda: last_revision(hub) >= 1, what="the submission logged")
    # Revision 0 is a place in the log like any other, not "from now": nothing is skipped.
    w = Watcher(client.watch_jobs(from_revision=start))
    wait(lambda: w.names(ADDED) == ["early"], what="the change made before the watch opened")
    w.close()
    # Unset is "from now": its first bookmark is already past that change.
    now = client.watch_jobs(bookmarks=True)
    first = next(now)
    assert first.type == BOOKMARK and first.revision >= 1
    now.close()


def test_a_revision_no_longer_kept_is_out_of_range(hub: Hub, client: Client) -> None:
    for i in range(3):
        client.submit_job(small(f"j{i}"))
    wait(lambda: last_revision(hub) >= 3, what="three revisions")
    with session_scope(hub.ctx.sessions) as session:
        assert changes_repo.prune(session=session, keep=1, older_than=hub.ctx.now()) > 0
        pruned, last = changes_repo.bounds(session=session)
    for too_old in (1, pruned - 1):
        with pytest.raises(VGlobalError) as err:
            next(client.watch_jobs(from_revision=too_old))
        assert err.value.code == grpc.StatusCode.OUT_OF_RANGE
        assert "list again" in err.value.message
    with pytest.raises(VGlobalError) as future:
        next(client.watch_jobs(from_revision=last + 100))
    assert future.value.code == grpc.StatusCode.OUT_OF_RANGE
    # Listing again gives a revision the watch takes.
    jobs, revision = client.list_jobs_at()
    assert len(jobs) == 3 and revision >= pruned
    w = Watcher(client.watch_jobs(from_revision=revision))
    client.delete_job("j0")
    wait(lambda: w.names(DELETED) == ["j0"], what="the deletion")
    w.close()


def test_filters_by_queue_namespace_labels_and_name(client: Client) -> None:
    client.apply_queue("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: other}\n")
    _, start = client.list_jobs_at()
    watchers = {
        "queue": Watcher(client.watch_jobs(from_revision=start, queue="other")),
        "namespace": Watcher(client.watch_jobs(from_revision=start, namespace="ns2")),
        "labels": Watcher(client.watch_jobs(from_revision=start, labels={"team": "b"})),
        "name": Watcher(client.watch_jobs(from_revision=start, name="x")),
    }
    client.submit_job(small("x"))
    client.submit_job(small("y", queue="other"))
    client.submit_job(small("z", ns="ns2"))
    client.submit_job(small("w", team="b"))
    # Last, one job every filter matches: once each watcher has it, it has had all before it.
    client.submit_job(small("x", ns="ns2", team="b", queue="other"))
    for w in watchers.values():
        wait(
            lambda w=w: any(e.job.namespace == "ns2" and e.job.name == "x" for e in w.events),
            what="the last job",
        )
    added = {
        k: sorted(f"{e.job.namespace}/{e.job.name}" for e in w.events if e.type == ADDED)
        for k, w in watchers.items()
    }
    assert added == {
        "queue": ["default/y", "ns2/x"],
        "namespace": ["ns2/x", "ns2/z"],
        "labels": ["default/w", "ns2/x"],
        "name": ["default/x", "ns2/x"],
    }
    assert dict(watchers["labels"].events[0].job.labels) == {"team": "b"}
    for w in watchers.values():
        w.close()


def test_a_reader_too_slow_is_cut_off_and_resumes(database_url: str) -> None:
    settings = HubSettings(listen="127.0.0.1:0", database_url=database_url, watch_buffer=300)
    hub = Hub(settings)
    hub.start()
    try:
        target = f"127.0.0.1:{hub.port}"
        # A client that does not read: flow control fills up, then it falls behind the buffer.
        channel = grpc.insecure_channel(target, options=[("grpc.http2.bdp_probe", 0)])
        stream = jobs_pb2_grpc.JobServiceStub(channel).WatchJobs(jobs_pb2.WatchJobsRequest())
        start = next(stream).revision
        with Client(target, timeout=30, retries=1) as client:
            fast = Watcher(client.watch_jobs(from_revision=start))
            for batch in range(10):
                client.submit_jobs([(small(f"s{batch}-{i}"), "") for i in range(100)])
            wait(lambda: len(fast.names(ADDED)) == 1000, timeout=30, what="the reader that keeps up")
            assert fast.error is None  # a reader that keeps up is not cut off by the burst
            wait(lambda: hub.feed.subscribers == 1, what="the slow reader dropped by the feed")
            before: list[jobs_pb2.JobEvent] = []
            with pytest.raises(grpc.RpcError) as cut:
                for ev in stream:
                    before.append(ev)
            assert cut.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "resume from revision" in (cut.value.details() or "")
            assert 0 < len(names(before)) < 1000  # cut off before it had everything
            # Resumed from the last revision it read, it gets the rest, each change once.
            rest = Watcher(client.watch_jobs(from_revision=before[-1].revision))
            wait(lambda: len({*names(before), *rest.names(ADDED)}) == 1000, what="every job added")
            assert len(names(before)) + len(rest.names(ADDED)) == 1000
            rest.close()
            fast.close()
        channel.close()
    finally:
        hub.shutdown()


def names(events: list[jobs_pb2.JobEvent]) -> list[str]:
    return [e.job.name for e in events if e.type == ADDED]


def _quiet(hub: Hub, for_seconds: float = 1.5) -> int:
    """The last revision once no new one has come for ``for_seconds``."""
    last, since = last_revision(hub), time.monotonic()
    while time.monotonic() - since < for_seconds:
        time.sleep(0.2)
        now = last_revision(hub)
        if now != last:
            last, since = now, time.monotonic()
    return last


def _state(j: Any) -> tuple[Any, ...]:
    return (j.phase, j.binding_phase, j.cluster, j.generation, j.reason)


def test_two_watchers_see_every_change_of_a_burst_in_order(hub: Hub, client: Client) -> None:
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "east", nodes=2)
    agent.connect()
    try:
        _, start = client.list_jobs_at()
        one = Watcher(client.watch_jobs(from_revision=start))
        two = Watcher(client.watch_jobs(from_revision=start))
        for batch in range(0, 1000, 100):  # calls that stay well within their deadline on a busy machine
            client.submit_jobs([(small(f"b{i:04d}"), "") for i in range(batch, batch + 100)])
        for i in range(0, 100, 2):
            client.cancel_job(f"b{i:04d}")
            client.delete_job(f"b{i + 1:04d}")
        end = _quiet(hub)
        for w in (one, two):
            wait(
                lambda w=w: w.events and w.events[-1].revision >= end,
                timeout=30,
                what="the watcher caught up",
            )
        seen = [
            [(e.revision, e.type, e.job.name, _state(e.job)) for e in w.events if e.revision <= end]
            for w in (one, two)
        ]
        assert seen[0] == seen[1]
        revisions = [r for r, *_ in seen[0]]
        assert revisions == list(range(start + 1, end + 1))  # every change, each once, in order
        # Each job begins with ADDED; the last event of each shows it as the database holds it.
        first: dict[str, int] = {}
        last: dict[str, Any] = {}
        for _, kind, name, state in seen[0]:
            first.setdefault(name, kind)
            last[name] = (kind, state)
        assert len(first) == 1000 and set(first.values()) == {ADDED}
        assert sum(1 for k, _ in last.values() if k == DELETED) == 50
        stored = {j.name: _state(j) for j in client.list_jobs()}
        assert {n: s for n, (k, s) in last.items() if k != DELETED} == stored
        assert sum(1 for s in stored.values() if s[1] == "Dispatched") > 100  # the burst was admitted too
    finally:
        agent.close()
