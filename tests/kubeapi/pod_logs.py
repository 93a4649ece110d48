"""pods/log as the kubelet serves it through the apiserver: text/plain, chunked while following.

An emulated container writes what a simulated pod writes (vglobal.agent.backends.sim_logs): the
lines of its ``vglobal.io/sim-log`` annotation when it starts, then a line per
``vglobal.io/sim-log-interval``; the output is derived from its status (the running state's
``startedAt``; ``previous``: the last terminated state's span), so a restart begins a new output.
Query parameters as the API takes them: ``container``, ``follow``, ``tailLines``, ``sinceSeconds``,
``sinceTime``, ``previous``, ``timestamps``; the refusals are the apiserver's 400s.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any

from aiohttp import web

from tests.kubeapi.crud import Api
from tests.kubeapi.kinds import PODS
from tests.kubeapi.status import bad_request
from tests.kubeapi.store import Obj
from vglobal.agent.backends.sim_logs import log_interval, stamped, written

FOLLOW_POLL = 0.1  # seconds between looks at a followed container


def _seconds(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S%z").timestamp()


def _flag(query: Any, name: str) -> bool:
    return str(query.get(name, "false")).lower() in ("true", "1")


def _int(query: Any, name: str) -> int | None:
    raw = query.get(name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(f"{name}: invalid value {raw!r}") from None
    if value < 0:
        raise bad_request(f"{name}: must be greater than or equal to 0")
    return value


def _container(pod: Obj, wanted: str) -> str:
    name = pod["metadata"]["name"]
    names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
    if not wanted:
        if len(names) != 1:
            raise bad_request(f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]")
        return names[0]
    if wanted not in names:
        raise bad_request(f"container {wanted} is not valid for pod {name}")
    return wanted


def _status(pod: Obj, container: str) -> Obj:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") == container:
            return dict(cs)
    return {}


def _span(pod: Obj, container: str, previous: bool) -> tuple[float, float | None, str]:
    """(started, ended or None while running, container id) of the output asked for."""
    name = pod["metadata"]["name"]
    cs = _status(pod, container)
    state = (cs.get("lastState") if previous else cs.get("state")) or {}
    if previous:
        done = state.get("terminated")
        if not done:
            raise bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        return _seconds(done["startedAt"]), _seconds(done["finishedAt"]), str(done.get("containerID", ""))
    if "running" in state:
        return _seconds(state["running"]["startedAt"]), None, str(cs.get("containerID", ""))
    if "terminated" in state:
        done = state["terminated"]
        return _seconds(done["startedAt"]), _seconds(done["finishedAt"]), str(done.get("containerID", ""))
    reason = (state.get("waiting") or {}).get("reason") or "ContainerCreating"
    raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: {reason}')


async def serve(request: web.BaseRequest, api: Api, namespace: str, name: str) -> web.StreamResponse:
    q = request.query
    pod = api.get(PODS, namespace, name)  # the 404
    container = _container(pod, q.get("container", ""))
    previous, follow, timestamps = _flag(q, "previous"), _flag(q, "follow"), _flag(q, "timestamps")
    tail, since = _int(q, "tailLines"), _int(q, "sinceSeconds")
    since_time = None
    if "sinceTime" in q:
        if since is not None:
            raise bad_request("at most one of sinceTime or sinceSeconds may be specified")
        try:
            since_time = _seconds(q["sinceTime"].replace("Z", "+00:00"))
        except ValueError:
            raise bad_request(f"sinceTime: invalid value {q['sinceTime']!r}") from None
    started, ended, cid = _span(pod, container, previous)
    meta = pod["metadata"]
    annotations, node = meta.get("annotations") or {}, (pod.get("spec") or {}).get("nodeName", "")
    now = time.time()
    lines = written(annotations, name, node, started, now if ended is None else min(now, ended))
    cutoff = since_time if since_time is not None else None if since is None else now - since
    first = [(t, x) for t, x in lines if cutoff is None or t >= cutoff]
    if tail is not None:
        first = first[-tail:] if tail else []
    resp = web.StreamResponse(status=200, headers={"Content-Type": "text/plain"})
    if follow:
        resp.enable_chunked_encoding()
    await resp.prepare(request)
    await resp.write("".join(stamped(t, x, timestamps) + "\n" for t, x in first).encode())
    if not follow or previous:
        ended = ended or now
    try:
        await _follow(resp, api, pod, container, (started, ended, cid), len(lines), timestamps)
    except ConnectionResetError:  # the client hung up
        return resp
    await resp.write_eof()
    return resp


async def _follow(
    resp: web.StreamResponse,
    api: Api,
    pod: Obj,
    container: str,
    span: tuple[float, float | None, str],
    done: int,
    timestamps: bool,
) -> None:
    """New lines as the running container writes them, until it ends or the pod goes."""
    started, ended, cid = span
    meta = pod["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    annotations, node = meta.get("annotations") or {}, (pod.get("spec") or {}).get("nodeName", "")
    while ended is None:
        await asyncio.sleep(min(FOLLOW_POLL, log_interval(annotations) or FOLLOW_POLL))
        now = pod_now = time.time()
        current = api.store.get(PODS, namespace, name)
        if current is None or current["metadata"]["uid"] != meta["uid"]:
            break
        cs = _status(current, container)
        running = (cs.get("state") or {}).get("running")
        if not running or cs.get("containerID") != cid:
            # The container ended (or restarted): its output up to its end, then the stream ends.
            last = (cs.get("lastState") if running else cs.get("state")) or {}
            finished = (last.get("terminated") or {}).get("finishedAt")
            pod_now = _seconds(finished) if finished else now
            ended = pod_now
        lines = written(annotations, name, node, started, pod_now, done)
        if lines:
            await resp.write("".join(stamped(t, x, timestamps) + "\n" for t, x in lines).encode())
            done += len(lines)
