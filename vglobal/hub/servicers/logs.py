"""JobService.StreamLogs: a job's pod output, read by its cluster's agent and relayed here.

The call is checked and audited in one transaction (the job, the caller's "read logs" permission
in its queue, the pods it names), then one LogRequest per pod goes to the agent stream of the job's
cluster on this hub (agents/log_relay.py) and the chunks come back to the caller as they arrive,
merged across pods. The caller hanging up cancels every request at the agent.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator
from datetime import datetime

from vglobal.api.v1 import agent_pb2, jobs_pb2
from vglobal.hub.agents.log_relay import LogRelay, LogStream, Unavailable
from vglobal.hub.auth.access import who
from vglobal.hub.auth.policy import Action
from vglobal.hub.context import HubContext
from vglobal.hub.errors import FailedPrecondition, InvalidArgument, NotFound
from vglobal.hub.servicers.jobs import find_job
from vglobal.model.forms import PodPlacement
from vglobal.model.phases import ClusterState
from vglobal.store.engine import session_scope
from vglobal.store.repo import clusters as clusters_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo.events import NewEvent

MAX_PODS = 32  # pods read at once by one call (kubectl's --max-log-requests is 5 by default)
MAX_TAIL = 100_000


def _check(req: jobs_pb2.LogsRequest) -> None:
    if not (req.job.uid or req.job.name):
        raise InvalidArgument("job: a job name or uid is required")
    if req.tail_lines < 0 or req.tail_lines > MAX_TAIL:
        raise InvalidArgument(f"tail_lines: must be between 0 and {MAX_TAIL}")
    if req.since_seconds < 0:
        raise InvalidArgument("since_seconds: must be >= 0")
    if req.pod and req.task:
        raise InvalidArgument("task: name a pod or a task, not both")
    if req.since_time:
        if req.since_seconds:
            raise InvalidArgument("since_time: give since_time or since_seconds, not both")
        try:
            datetime.fromisoformat(req.since_time.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidArgument(
                f"since_time: {req.since_time[:40]!r} is not an RFC 3339 time (2026-01-02T03:04:05Z)"
            ) from None


def _pods(job: str, placements: tuple[PodPlacement, ...], req: jobs_pb2.LogsRequest) -> list[str]:
    """The pods to read, as their cluster names them (a workload's pods: not as the hub does)."""
    known = sorted(p.real_name for p in placements)
    if req.pod:
        found = next((p for p in placements if req.pod in (p.pod, p.real_name)), None)
        if found is None:
            have = ", ".join(known[:10]) or "none reported yet"
            raise NotFound(f'pod: job {job} has no pod "{req.pod}" (its pods: {have})')
        return [found.real_name]
    pods = sorted(p.real_name for p in placements if not req.task or p.task == req.task)
    if not pods:
        what = f'task "{req.task}" of job {job}' if req.task else f"job {job}"
        raise FailedPrecondition(f"{what} has no pods on its cluster yet")
    if len(pods) > MAX_PODS:
        raise FailedPrecondition(f"{job} has {len(pods)} pods; read at most {MAX_PODS} at once (name a pod)")
    return pods


class LogsCall:
    def __init__(self, ctx: HubContext, relay: LogRelay) -> None:
        self.ctx = ctx
        self.relay = relay

    def _prepare(self, req: jobs_pb2.LogsRequest, caller: str) -> tuple[str, str, str, list[str]]:
        with session_scope(self.ctx.sessions) as session:
            row = find_job(req.job, session=session, action=Action.read_logs)
            job = f"{row.namespace}/{row.name}"
            if row.cluster is None:
                raise FailedPrecondition(f"job {job} runs on no cluster (binding {row.binding_phase})")
            pods = _pods(job, row.placements, req)
            events_repo.add_events(
                [
                    NewEvent(
                        "LogsRead",
                        f"logs of {', '.join(pods)} on cluster {row.cluster} read by {caller}",
                        job_uid=row.uid,
                        cluster=row.cluster,
                        principal=caller,
                    )
                ],
                session=session,
            )
        return row.uid, row.namespace, row.cluster, pods

    async def serve(self, req: jobs_pb2.LogsRequest) -> AsyncIterator[jobs_pb2.LogLines]:
        _check(req)
        caller = who()
        # In the loop's pool (the API's), with the caller's context: find_job checks its rights.
        call = contextvars.copy_context()
        uid, namespace, cluster, pods = await asyncio.get_running_loop().run_in_executor(
            None, call.run, self._prepare, req, caller
        )
        streams: dict[str, LogStream] = {}
        try:
            for pod in pods:
                try:
                    streams[pod] = self.relay.open(cluster, caller, self._request(req, uid, namespace, pod))
                except Unavailable:
                    gone = await asyncio.get_running_loop().run_in_executor(None, self._gone, cluster)
                    if gone:
                        raise Unavailable(gone) from None
                    raise
            async for out in self._merge(streams):
                yield out
        finally:
            for stream in streams.values():
                self.relay.close(stream)

    def _gone(self, cluster: str) -> str:
        """Why the cluster's agent is not there, when the hub knows it is gone ("": it may be
        connected to another replica)."""
        with session_scope(self.ctx.sessions) as session:
            row = clusters_repo.get_cluster(cluster, session=session)
        if row is None:
            return f'cluster "{cluster}" is gone: it was removed from the hub'
        if row.state == ClusterState.NotReady:
            seen = row.last_heartbeat.strftime("%Y-%m-%dT%H:%M:%SZ")
            return f'cluster "{cluster}" is gone: NotReady, its agent last reported at {seen}'
        return ""

    @staticmethod
    def _request(req: jobs_pb2.LogsRequest, uid: str, namespace: str, pod: str) -> agent_pb2.LogRequest:
        return agent_pb2.LogRequest(
            job_uid=uid,
            namespace=namespace,
            pod=pod,
            container=req.container,
            follow=req.follow,
            tail_lines=req.tail_lines,
            since_seconds=req.since_seconds,
            previous=req.previous,
            timestamps=req.timestamps,
            since_time=req.since_time,
        )

    @staticmethod
    async def _merge(streams: dict[str, LogStream]) -> AsyncIterator[jobs_pb2.LogLines]:
        """Chunks of every pod as they come, until each pod's stream ended."""
        waiting = {asyncio.ensure_future(s.chunks.get()): pod for pod, s in streams.items()}
        try:
            while waiting:
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                for fut in done:
                    pod = waiting.pop(fut)
                    chunk = fut.result()
                    if chunk is None:
                        raise Unavailable(f"pod {pod}: {streams[pod].ended}")
                    if chunk.lines:
                        yield jobs_pb2.LogLines(pod=pod, lines=chunk.lines)
                    if chunk.error:
                        raise FailedPrecondition(f"pod {pod}: {chunk.error}")
                    if not chunk.eof:
                        waiting[asyncio.ensure_future(streams[pod].chunks.get())] = pod
        finally:
            for fut in waiting:
                fut.cancel()
