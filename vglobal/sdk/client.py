"""The Python SDK: a typed client over the gRPC stubs, with one error type.

from vglobal.sdk import Client
with Client("hub.example.com:50051", ca_file="certs/ca.crt", token=os.environ["VGLOBAL_TOKEN"]) as hub:
    job = hub.submit_job(open("job.yaml").read(), request_id="nightly-42")
    print(hub.explain_job(job.name).reason)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar, overload

import grpc
from tenacity import retry, retry_if_exception, stop_after_attempt

from vglobal.api.v1 import (
    clusters_pb2,
    clusters_pb2_grpc,
    cronjobs_pb2_grpc,
    hyperjobs_pb2_grpc,
    jobflows_pb2_grpc,
    jobs_pb2,
    jobs_pb2_grpc,
    objects_pb2_grpc,
    queues_pb2,
    queues_pb2_grpc,
)
from vglobal.dial import CLIENT_OPTIONS, DEFAULT_HUB, Dial, DialError
from vglobal.sdk.applying import apply_request, scale_request
from vglobal.sdk.batches import BATCH_SIZE, batches
from vglobal.sdk.errors import hub_error, refused_item
from vglobal.sdk.hyperjobs import HyperJobCalls
from vglobal.sdk.job_filters import Filter, count_request, history_request, list_request
from vglobal.sdk.logs import LogStream, logs_request
from vglobal.sdk.objects import ObjectCalls
from vglobal.sdk.retries import VGlobalError, refused, retryable, wait_retry
from vglobal.sdk.watch import JobWatch
from vglobal.sdk.workflows import WorkflowCalls

__all__ = ["DEFAULT_HUB", "Client", "Dial", "DialError", "JobWatch", "VGlobalError", "default_hub"]
T = TypeVar("T")
Outcome = jobs_pb2.SubmitJobResponse | VGlobalError


def default_hub() -> str:
    return Dial.from_env().target


class Client(HyperJobCalls, ObjectCalls, WorkflowCalls):
    """The hub's API. TLS files and token default to VGLOBAL_CA_FILE, VGLOBAL_CERT, VGLOBAL_KEY and
    VGLOBAL_TOKEN (or VGLOBAL_TOKEN_FILE); ``dial`` gives them all at once instead."""

    def __init__(
        self,
        hub: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 4,
        ca_file: str | Path | None = None,
        cert: str | Path | None = None,
        key: str | Path | None = None,
        token: str | None = None,
        dial: Dial | None = None,
    ) -> None:
        self.dial = Dial.for_client(hub, dial=dial, ca_file=ca_file, cert=cert, key=key, token=token)
        self.target = self.dial.target
        self.timeout = timeout
        self.retries = retries
        self.channel = self.dial.channel(options=CLIENT_OPTIONS)
        self.jobs = jobs_pb2_grpc.JobServiceStub(self.channel)
        self.queues = queues_pb2_grpc.QueueServiceStub(self.channel)
        self.clusters = clusters_pb2_grpc.ClusterServiceStub(self.channel)
        self.cronjobs = cronjobs_pb2_grpc.CronJobServiceStub(self.channel)
        self.jobflows = jobflows_pb2_grpc.JobFlowServiceStub(self.channel)
        self.hyperjobs = hyperjobs_pb2_grpc.HyperJobServiceStub(self.channel)
        self.objects = objects_pb2_grpc.ObjectServiceStub(self.channel)

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self.channel.close()

    def _call(self, fn: Callable[..., T], request: Any, *, idempotent: bool = True) -> T:
        # A call that is not idempotent is sent again only when the hub refused it unread.
        again = retryable if idempotent else refused

        @retry(
            retry=retry_if_exception(again),
            stop=stop_after_attempt(max(1, self.retries)),
            wait=wait_retry,
            reraise=True,
        )
        def once() -> T:
            return fn(request, timeout=self.timeout)

        try:
            return once()
        except grpc.RpcError as exc:
            raise hub_error(
                exc,
                plaintext_to=None if self.dial.tls else self.target,
                tls_to=self.target if self.dial.tls else None,
            ) from None

    # Jobs
    def submit_job(
        self, manifest: str, *, request_id: str = "", field_validation: str = "", dry_run: bool = False
    ) -> jobs_pb2.SubmitJobResponse:
        """``field_validation``: "Strict" (default), "Warn" or "Ignore" unknown fields; ``dry_run``:
        the hub validates and authorizes, stores nothing."""
        # Safe to retry only with a request_id: the hub then returns the first submission.
        return self._call(
            self.jobs.SubmitJob,
            jobs_pb2.SubmitJobRequest(
                manifest=manifest, request_id=request_id, field_validation=field_validation, dry_run=dry_run
            ),
            idempotent=bool(request_id) or dry_run,
        )

    def submit_jobs(
        self, items: list[tuple[str, str]], *, field_validation: str = "", dry_run: bool = False
    ) -> jobs_pb2.SubmitJobsResponse:
        reqs = [
            jobs_pb2.SubmitJobRequest(
                manifest=m, request_id=r, field_validation=field_validation, dry_run=dry_run
            )
            for m, r in items
        ]
        return self._call(
            self.jobs.SubmitJobs,
            jobs_pb2.SubmitJobsRequest(jobs=reqs),
            idempotent=all(r for _, r in items) or dry_run,
        )

    @overload
    def submit_many(
        self,
        items: Iterable[tuple[str, str]],
        *,
        batch_size: int = ...,
        progress: Callable[[int], None] | None = ...,
        field_validation: str = ...,
        dry_run: bool = ...,
        keep_going: Literal[False] = ...,
    ) -> list[jobs_pb2.SubmitJobResponse]: ...

    @overload
    def submit_many(
        self,
        items: Iterable[tuple[str, str]],
        *,
        batch_size: int = ...,
        progress: Callable[[int], None] | None = ...,
        field_validation: str = ...,
        dry_run: bool = ...,
        keep_going: Literal[True],
    ) -> list[Outcome]: ...

    def submit_many(
        self,
        items: Iterable[tuple[str, str]],
        *,
        batch_size: int = BATCH_SIZE,
        progress: Callable[[int], None] | None = None,
        field_validation: str = "",
        dry_run: bool = False,
        keep_going: bool = False,
    ) -> list[jobs_pb2.SubmitJobResponse] | list[Outcome]:
        """Submit (manifest, request_id) pairs in SubmitJobs calls of ``batch_size``, in order;
        ``progress`` hears how many jobs each call settled. A batch is stored whole or not at all:
        on an error, the batches before it are stored (give request ids, and submitting the same
        items again returns those jobs instead of storing them twice).

        ``keep_going``: an error does not stop the rest. A document the hub refuses gets its error
        in its place in the result and the rest of its batch is sent again; a call that fails as a
        whole (after the retries request ids allow) gives its error to each of its batch's items."""
        out: list[Outcome] = []
        for batch in batches(items, size=batch_size):
            out.extend(self._submit_batch(batch, field_validation, dry_run, keep_going))
            if progress is not None:
                progress(len(batch))
        return out

    def _submit_batch(
        self, batch: list[tuple[str, str]], field_validation: str, dry_run: bool, keep_going: bool
    ) -> list[Outcome]:
        """The batch's outcomes in its order: refused documents taken out one by one and the rest
        sent again, until a call is stored whole."""
        refused: dict[int, VGlobalError] = {}
        left = list(range(len(batch)))
        while left:
            try:
                reply = self.submit_jobs(
                    [batch[i] for i in left], field_validation=field_validation, dry_run=dry_run
                )
            except VGlobalError as exc:
                if not keep_going:
                    raise
                one = refused_item(exc, len(left))
                if one is None:  # the call itself failed
                    refused.update((i, exc) for i in left)
                    break
                refused[left.pop(one[0])] = one[1]
                continue
            stored: dict[int, Outcome] = dict(zip(left, reply.results, strict=True))
            return [refused[i] if i in refused else stored[i] for i in range(len(batch))]
        return [refused[i] for i in range(len(batch))]

    def get_job(self, name: str, namespace: str = "default") -> jobs_pb2.Job:
        return self._call(self.jobs.GetJob, jobs_pb2.JobRef(name=name, namespace=namespace))

    def apply_job(self, manifest: str, **options: Any) -> jobs_pb2.ApplyJobResponse:
        """kubectl's apply of one job: ``.result`` is "created", "configured" or "unchanged".
        Options: request_id, field_validation, dry_run, field_manager, server_side, force_conflicts."""
        return self._call(self.jobs.ApplyJob, apply_request(manifest, **options), idempotent=True)

    def scale_job(
        self, name: str, replicas: int, namespace: str = "default", *, task: str = "", dry_run: bool = False
    ) -> jobs_pb2.ApplyJobResponse:
        """Set a Deployment's, StatefulSet's, LeaderWorkerSet's replicas (a RayCluster's worker
        group's, a Volcano Job's task's: ``task``), as ``vglobal scale`` does."""
        request = scale_request(self.get_job(name, namespace), replicas, task, dry_run)
        return self._call(self.jobs.ApplyJob, request, idempotent=True)

    def list_jobs(self, *, labels: Mapping[str, str] | None = None, **query: Filter) -> list[jobs_pb2.Job]:
        """Every job that matches, in the order asked. ``query``: the filters queue, namespace,
        phase, cluster, name_contains, submitted_by (text) and created_after, created_before,
        finished_after (datetimes), and sort_by and descending, as ListJobsRequest has them."""
        return self.list_jobs_at(labels=labels, **query)[0]

    def list_jobs_at(
        self, *, labels: Mapping[str, str] | None = None, **query: Filter
    ) -> tuple[list[jobs_pb2.Job], int]:
        """The jobs, and a revision to watch them from (``watch_jobs(from_revision=...)``)."""
        out: list[jobs_pb2.Job] = []
        revision = 0
        for resp in self._job_pages(0, labels, query):
            out.extend(resp.jobs)
            # The first page's: every later page shows at least the changes up to it.
            revision = revision or resp.revision
        return out, revision

    def job_pages(
        self, page_size: int = 0, *, labels: Mapping[str, str] | None = None, **query: Filter
    ) -> Iterator[list[jobs_pb2.Job]]:
        """The jobs page by page (``page_size`` 0: the hub's default), so a million of them
        need not be held at once. ``query`` as ``list_jobs``."""
        for resp in self._job_pages(page_size, labels, query):
            yield list(resp.jobs)

    def job_page(
        self,
        page_size: int = 0,
        page_token: str = "",
        *,
        labels: Mapping[str, str] | None = None,
        **query: Filter,
    ) -> jobs_pb2.ListJobsResponse:
        """One page from ``page_token`` (a page's next_page_token; empty: the first), for a table
        that pages on the server. ``query`` as ``list_jobs``."""
        req = list_request(page_size=page_size, page_token=page_token, labels=labels, query=query)
        return self._call(self.jobs.ListJobs, req)

    def _job_pages(
        self, page_size: int, labels: Mapping[str, str] | None, query: Mapping[str, Filter]
    ) -> Iterator[jobs_pb2.ListJobsResponse]:
        token = ""
        while True:
            resp = self.job_page(page_size, token, labels=labels, **query)
            yield resp
            token = resp.next_page_token
            if not token:
                return

    def count_jobs(
        self, group_by: Sequence[str] = (), *, labels: Mapping[str, str] | None = None, **filters: Filter
    ) -> jobs_pb2.CountJobsResponse:
        """How many jobs match, per group of ``group_by`` values (phase, binding_phase, queue,
        cluster, namespace); ``filters`` as ``list_jobs``."""
        return self._call(self.jobs.CountJobs, count_request(group_by, labels=labels, filters=filters))

    def job_dispatches(self, name: str, namespace: str = "default") -> list[jobs_pb2.JobDispatch]:
        """Every dispatch of the job, one per generation, oldest first."""
        ref = jobs_pb2.JobRef(name=name, namespace=namespace)
        return list(self._call(self.jobs.ListJobDispatches, ref).dispatches)

    def watch_jobs(
        self,
        *,
        from_revision: int | None = None,
        queue: str = "",
        namespace: str = "",
        name: str = "",
        labels: Mapping[str, str] | None = None,
        reconnect: bool = True,
        bookmarks: bool = False,
    ) -> JobWatch:
        """Every change of the matching jobs after ``from_revision`` (None: from now on), in order.
        A list's revision may be 0 (nothing logged yet): watching from 0 gives every change since.

        A broken stream (hub restarted, leader changed, this reader fell behind) is opened again
        from the last revision seen, so nothing is missed or seen twice. A revision the hub no
        longer keeps raises VGlobalError with code OUT_OF_RANGE: list again (``list_jobs_at``)
        and watch from the revision the list returns. ``close()`` (from any thread) ends it.
        """
        request = jobs_pb2.WatchJobsRequest(
            from_revision=from_revision, queue=queue, namespace=namespace, name=name, labels=labels or {}
        )
        return JobWatch(self.jobs, request, reconnect=reconnect, bookmarks=bookmarks)

    def logs(
        self,
        name: str,
        namespace: str = "default",
        *,
        pod: str = "",
        task: str = "",
        container: str = "",
        follow: bool = False,
        tail: int | None = None,
        since: timedelta | float | None = None,
        previous: bool = False,
        timestamps: bool = False,
    ) -> LogStream:
        """The output of the job's pods, line by line, as its cluster's agent reads it (kube: the
        pods' log subresource); ``follow`` keeps reading as they write. ``pod`` names one pod,
        ``task`` takes every pod of a task; neither: every pod of the job. ``tail``: the last lines
        only; ``since``: the last seconds only. Needs the "read logs" permission in its queue."""
        request = logs_request(
            name, namespace, pod=pod, task=task, container=container, follow=follow, tail=tail,
            since=since, previous=previous, timestamps=timestamps,
        )  # fmt: skip
        return LogStream(self.jobs, request)

    def cancel_job(self, name: str, namespace: str = "default") -> jobs_pb2.Job:
        return self._call(self.jobs.CancelJob, jobs_pb2.JobRef(name=name, namespace=namespace))

    def suspend_job(self, name: str, namespace: str = "default") -> jobs_pb2.Job:
        """Take a job off its cluster, kept Aborted until ``resume_job`` (``vcctl job suspend``)."""
        return self._call(self.jobs.SuspendJob, jobs_pb2.JobRef(name=name, namespace=namespace))

    def resume_job(self, name: str, namespace: str = "default") -> jobs_pb2.Job:
        """Put a suspended (Aborted) job back in its queue."""
        return self._call(self.jobs.ResumeJob, jobs_pb2.JobRef(name=name, namespace=namespace))

    def checkpoint_job(
        self, name: str, namespace: str = "default", *, at: datetime | None = None
    ) -> jobs_pb2.Job:
        """Declare that the job's current run saved its work at ``at`` (default: now): a reclaim
        that stops it then loses only the run since (the worth reclaim rule)."""
        request = jobs_pb2.CheckpointJobRequest(job=jobs_pb2.JobRef(name=name, namespace=namespace))
        if at is not None:
            request.at.FromDatetime(at if at.tzinfo else at.astimezone())
        return self._call(self.jobs.CheckpointJob, request)

    def delete_job(self, name: str, namespace: str = "default") -> jobs_pb2.DeleteJobResponse:
        return self._call(self.jobs.DeleteJob, jobs_pb2.JobRef(name=name, namespace=namespace))

    def explain_job(self, name: str, namespace: str = "default") -> jobs_pb2.ExplainJobResponse:
        return self._call(self.jobs.ExplainJob, jobs_pb2.JobRef(name=name, namespace=namespace))

    # Queues and priority classes
    def apply_queue(
        self, manifest: str, *, field_validation: str = "", dry_run: bool = False
    ) -> queues_pb2.Queue:
        request = queues_pb2.ApplyRequest(
            manifest=manifest, field_validation=field_validation, dry_run=dry_run
        )
        return self._call(self.queues.ApplyQueue, request)

    def get_queue(self, name: str) -> queues_pb2.Queue:
        return self._call(self.queues.GetQueue, queues_pb2.QueueRef(name=name))

    def list_queues(self) -> list[queues_pb2.Queue]:
        return list(self._call(self.queues.ListQueues, queues_pb2.ListQueuesRequest()).queues)

    def queue_history(
        self,
        name: str = "",
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        max_samples: int = 0,
    ) -> list[queues_pb2.QueueHistory]:
        """The queue's samples (``name`` empty: every queue's) in [since, until); by default the
        last 24 hours, each sample (one a minute) or ``max_samples`` of them evenly spread."""
        req = history_request(name, since=since, until=until, max_samples=max_samples)
        return list(self._call(self.queues.GetQueueHistory, req).queues)

    def delete_queue(self, name: str, *, force: bool = False) -> queues_pb2.DeleteQueueResponse:
        """Delete a queue without unfinished jobs; ``force`` also removes its finished jobs' records."""
        return self._call(self.queues.DeleteQueue, queues_pb2.DeleteQueueRequest(name=name, force=force))

    def open_queue(self, name: str) -> queues_pb2.Queue:
        return self._call(self.queues.OpenQueue, queues_pb2.QueueRef(name=name))

    def close_queue(self, name: str) -> queues_pb2.Queue:
        return self._call(self.queues.CloseQueue, queues_pb2.QueueRef(name=name))

    def apply_priority_class(
        self, manifest: str, *, field_validation: str = "", dry_run: bool = False
    ) -> queues_pb2.PriorityClass:
        request = queues_pb2.ApplyRequest(
            manifest=manifest, field_validation=field_validation, dry_run=dry_run
        )
        return self._call(self.queues.ApplyPriorityClass, request)

    def list_priority_classes(self) -> list[queues_pb2.PriorityClass]:
        reply = self._call(self.queues.ListPriorityClasses, queues_pb2.ListPriorityClassesRequest())
        return list(reply.priority_classes)

    def delete_priority_class(self, name: str) -> queues_pb2.PriorityClass:
        return self._call(self.queues.DeletePriorityClass, queues_pb2.PriorityClassRef(name=name))

    # Namespaces (the queue of jobs that name none)
    def apply_namespace(
        self, manifest: str, *, field_validation: str = "", dry_run: bool = False
    ) -> queues_pb2.Namespace:
        request = queues_pb2.ApplyRequest(
            manifest=manifest, field_validation=field_validation, dry_run=dry_run
        )
        return self._call(self.queues.ApplyNamespace, request)

    def list_namespaces(self) -> list[queues_pb2.Namespace]:
        return list(self._call(self.queues.ListNamespaces, queues_pb2.ListNamespacesRequest()).namespaces)

    def delete_namespace(self, name: str) -> queues_pb2.Namespace:
        return self._call(self.queues.DeleteNamespace, queues_pb2.NamespaceRef(name=name))

    # Clusters
    def list_clusters(self) -> list[clusters_pb2.Cluster]:
        return list(self._call(self.clusters.ListClusters, clusters_pb2.ListClustersRequest()).clusters)

    def get_cluster(self, name: str) -> clusters_pb2.Cluster:
        return self._call(self.clusters.GetCluster, clusters_pb2.ClusterRef(name=name))

    def cordon_cluster(self, name: str) -> clusters_pb2.Cluster:
        return self._call(self.clusters.CordonCluster, clusters_pb2.ClusterRef(name=name))

    def uncordon_cluster(self, name: str) -> clusters_pb2.Cluster:
        return self._call(self.clusters.UncordonCluster, clusters_pb2.ClusterRef(name=name))

    def drain_cluster(self, name: str) -> clusters_pb2.Cluster:
        return self._call(self.clusters.DrainCluster, clusters_pb2.ClusterRef(name=name))

    def delete_cluster(
        self, name: str, *, drain: bool = False, force: bool = False
    ) -> clusters_pb2.DeleteClusterResponse:
        """Remove a cluster (admin only); refused while jobs are admitted there unless ``drain``
        (re-queue them as drain_cluster does) or ``force`` (re-queue them as failed over)."""
        request = clusters_pb2.DeleteClusterRequest(name=name, drain=drain, force=force)
        return self._call(self.clusters.DeleteCluster, request)
