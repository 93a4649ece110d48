"""The Python SDK: a typed client over the gRPC stubs, with one error type.

from vglobal.client import Client
with Client("hub.example.com:50051", ca_file="certs/ca.crt", token=os.environ["VGLOBAL_TOKEN"]) as hub:
    job = hub.submit_job(open("job.yaml").read(), request_id="nightly-42")
    print(hub.explain_job(job.name).reason)
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import grpc
from tenacity import retry, retry_if_exception, stop_after_attempt

from vglobal.api.v1 import (
    clusters_pb2,
    clusters_pb2_grpc,
    cronjobs_pb2,
    cronjobs_pb2_grpc,
    hyperjobs_pb2_grpc,
    jobflows_pb2,
    jobflows_pb2_grpc,
    jobs_pb2,
    jobs_pb2_grpc,
    queues_pb2,
    queues_pb2_grpc,
)
from vglobal.batches import BATCH_SIZE, batches
from vglobal.client_hyperjobs import HyperJobCalls
from vglobal.dial import CLIENT_OPTIONS, DEFAULT_HUB, Dial, DialError
from vglobal.job_filters import Filter, count_request, history_request, list_request
from vglobal.retries import VGlobalError, retry_after, retryable, wait_retry
from vglobal.tls_hint import plaintext_hint

__all__ = ["DEFAULT_HUB", "Client", "Dial", "DialError", "VGlobalError", "default_hub"]
T = TypeVar("T")


# A watch stream broken by these is opened again from the last revision it delivered.
_WATCH_RESUMABLE = (
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.RESOURCE_EXHAUSTED,  # fell behind, or the hub serves too many watches
    grpc.StatusCode.CANCELLED,  # the hub stopped
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
)


def default_hub() -> str:
    return Dial.from_env().target


class JobWatch:
    """An iterator of job events from ``Client.watch_jobs``; ``revision`` is the last one seen."""

    def __init__(
        self,
        stub: jobs_pb2_grpc.JobServiceStub,
        request: jobs_pb2.WatchJobsRequest,
        *,
        reconnect: bool,
        bookmarks: bool,
    ) -> None:
        self._stub = stub
        self._request = request
        self._reconnect = reconnect
        self._bookmarks = bookmarks
        self.revision = request.from_revision
        # Watching "from now" has no position until the stream's first bookmark gives one; from
        # then on a reconnect resumes after it, even when it is revision 0.
        self._known = request.HasField("from_revision")
        self._call: Any = None
        self._closed = threading.Event()
        self._events = self._run()

    def __iter__(self) -> JobWatch:
        return self

    def __next__(self) -> jobs_pb2.JobEvent:
        return next(self._events)

    def __enter__(self) -> JobWatch:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._closed.set()
        if self._call is not None:
            self._call.cancel()

    def _run(self) -> Iterator[jobs_pb2.JobEvent]:
        failures = 0
        while not self._closed.is_set():
            if self._known:
                self._request.from_revision = self.revision
            try:
                self._call = self._stub.WatchJobs(self._request)
            except ValueError:  # the client was closed: nothing more to watch
                return
            told: float | None = None
            try:
                for event in self._call:
                    failures = 0
                    self.revision, self._known = event.revision, True
                    if event.type != jobs_pb2.JobEvent.BOOKMARK or self._bookmarks:
                        yield event
            except grpc.RpcError as exc:
                if self._closed.is_set():
                    return
                if not self._reconnect or exc.code() not in _WATCH_RESUMABLE:
                    raise VGlobalError(exc.code(), exc.details() or str(exc)) from None
                told = retry_after(exc)  # rate limited: the hub says when to come back
            finally:
                self._call.cancel()
            if not self._reconnect:
                return
            failures += 1
            backoff = min(5.0, 0.1 * 2 ** min(failures, 6)) * random.uniform(0.5, 1.0)
            self._closed.wait(min(told, 10.0) if told is not None else backoff)


class Client(HyperJobCalls):
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

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self.channel.close()

    def _call(self, fn: Callable[..., T], request: Any, *, idempotent: bool = True) -> T:
        attempts = self.retries if idempotent else 1

        @retry(
            retry=retry_if_exception(retryable),
            stop=stop_after_attempt(max(1, attempts)),
            wait=wait_retry,
            reraise=True,
        )
        def once() -> T:
            return fn(request, timeout=self.timeout)

        try:
            return once()
        except grpc.RpcError as exc:
            message = exc.details() or str(exc)
            if exc.code() == grpc.StatusCode.UNAVAILABLE and not self.dial.tls:
                message += plaintext_hint(self.target)
            raise VGlobalError(exc.code(), message) from None

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

    def submit_many(
        self,
        items: Iterable[tuple[str, str]],
        *,
        batch_size: int = BATCH_SIZE,
        progress: Callable[[int], None] | None = None,
    ) -> list[jobs_pb2.SubmitJobResponse]:
        """Submit (manifest, request_id) pairs in SubmitJobs calls of ``batch_size``, in order;
        ``progress`` hears how many jobs each stored call took. A batch is stored whole or not at
        all: on an error, the batches before it are stored (give request ids, and submitting the
        same items again returns those jobs instead of storing them twice)."""
        out: list[jobs_pb2.SubmitJobResponse] = []
        for batch in batches(items, size=batch_size):
            out.extend(self.submit_jobs(batch).results)
            if progress is not None:
                progress(len(batch))
        return out

    def get_job(self, name: str, namespace: str = "default") -> jobs_pb2.Job:
        return self._call(self.jobs.GetJob, jobs_pb2.JobRef(name=name, namespace=namespace))

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

    def cancel_job(self, name: str, namespace: str = "default") -> jobs_pb2.Job:
        return self._call(self.jobs.CancelJob, jobs_pb2.JobRef(name=name, namespace=namespace))

    def suspend_job(self, name: str, namespace: str = "default") -> jobs_pb2.Job:
        """Take a job off its cluster, kept Aborted until ``resume_job`` (``vcctl job suspend``)."""
        return self._call(self.jobs.SuspendJob, jobs_pb2.JobRef(name=name, namespace=namespace))

    def resume_job(self, name: str, namespace: str = "default") -> jobs_pb2.Job:
        """Put a suspended (Aborted) job back in its queue."""
        return self._call(self.jobs.ResumeJob, jobs_pb2.JobRef(name=name, namespace=namespace))

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

    # CronJobs
    def apply_cron_job(
        self, manifest: str, *, field_validation: str = ""
    ) -> cronjobs_pb2.ApplyCronJobResponse:
        request = cronjobs_pb2.ApplyCronJobRequest(manifest=manifest, field_validation=field_validation)
        return self._call(self.cronjobs.ApplyCronJob, request)

    def get_cron_job(self, name: str, namespace: str = "default") -> cronjobs_pb2.CronJob:
        return self._call(self.cronjobs.GetCronJob, cronjobs_pb2.CronJobRef(name=name, namespace=namespace))

    def list_cron_jobs(self, namespace: str = "") -> list[cronjobs_pb2.CronJob]:
        req = cronjobs_pb2.ListCronJobsRequest(namespace=namespace)
        return list(self._call(self.cronjobs.ListCronJobs, req).cron_jobs)

    def delete_cron_job(
        self, name: str, namespace: str = "default", *, cascade: bool = False
    ) -> cronjobs_pb2.DeleteCronJobResponse:
        ref = cronjobs_pb2.CronJobRef(name=name, namespace=namespace)
        return self._call(
            self.cronjobs.DeleteCronJob, cronjobs_pb2.DeleteCronJobRequest(ref=ref, cascade=cascade)
        )

    def suspend_cron_job(self, name: str, namespace: str = "default") -> cronjobs_pb2.CronJob:
        return self._call(
            self.cronjobs.SuspendCronJob, cronjobs_pb2.CronJobRef(name=name, namespace=namespace)
        )

    def resume_cron_job(self, name: str, namespace: str = "default") -> cronjobs_pb2.CronJob:
        return self._call(
            self.cronjobs.ResumeCronJob, cronjobs_pb2.CronJobRef(name=name, namespace=namespace)
        )

    def create_job_from_cron_job(
        self, job_name: str, cron_job: str, namespace: str = "default"
    ) -> jobs_pb2.Job:
        """A Job made now from the CronJob's template (``kubectl create job NAME --from=cronjob/CRON``)."""
        req = cronjobs_pb2.CreateJobFromCronJobRequest(
            cron_job=cronjobs_pb2.CronJobRef(name=cron_job, namespace=namespace), job_name=job_name
        )
        return self._call(self.cronjobs.CreateJobFromCronJob, req, idempotent=False)

    # JobTemplates and JobFlows
    def apply_job_template(
        self, manifest: str, *, field_validation: str = ""
    ) -> jobflows_pb2.ApplyJobTemplateResponse:
        request = jobflows_pb2.ApplyFlowObjectRequest(manifest=manifest, field_validation=field_validation)
        return self._call(self.jobflows.ApplyJobTemplate, request)

    def get_job_template(self, name: str, namespace: str = "default") -> jobflows_pb2.JobTemplate:
        return self._call(
            self.jobflows.GetJobTemplate, jobflows_pb2.FlowObjectRef(name=name, namespace=namespace)
        )

    def list_job_templates(self, namespace: str = "") -> list[jobflows_pb2.JobTemplate]:
        req = jobflows_pb2.ListFlowObjectsRequest(namespace=namespace)
        return list(self._call(self.jobflows.ListJobTemplates, req).job_templates)

    def delete_job_template(
        self, name: str, namespace: str = "default"
    ) -> jobflows_pb2.DeleteFlowObjectResponse:
        ref = jobflows_pb2.FlowObjectRef(name=name, namespace=namespace)
        return self._call(self.jobflows.DeleteJobTemplate, ref)

    def apply_job_flow(
        self, manifest: str, *, field_validation: str = ""
    ) -> jobflows_pb2.ApplyJobFlowResponse:
        request = jobflows_pb2.ApplyFlowObjectRequest(manifest=manifest, field_validation=field_validation)
        return self._call(self.jobflows.ApplyJobFlow, request)

    def get_job_flow(self, name: str, namespace: str = "default") -> jobflows_pb2.JobFlow:
        return self._call(
            self.jobflows.GetJobFlow, jobflows_pb2.FlowObjectRef(name=name, namespace=namespace)
        )

    def list_job_flows(self, namespace: str = "") -> list[jobflows_pb2.JobFlow]:
        req = jobflows_pb2.ListFlowObjectsRequest(namespace=namespace)
        return list(self._call(self.jobflows.ListJobFlows, req).job_flows)

    def delete_job_flow(self, name: str, namespace: str = "default") -> jobflows_pb2.DeleteFlowObjectResponse:
        ref = jobflows_pb2.FlowObjectRef(name=name, namespace=namespace)
        return self._call(self.jobflows.DeleteJobFlow, ref)
