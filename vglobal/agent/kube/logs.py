"""Pod output from the cluster's pods/log subresource, for the agent's log streams (agent/logs.py).

Runs on a log stream's own thread with its own connection: a followed log holds its connection
for as long as the pod writes, apart from the connections of the agent's writers and informers.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from urllib.parse import quote

from vglobal.agent.kube.api import ApiError, KubeApi
from vglobal.agent.logs import LogError
from vglobal.api.v1 import agent_pb2 as pb

# (connect, read) seconds: a followed pod may write nothing for a long while.
FOLLOW_TIMEOUT = (5.0, 24 * 3600.0)
READ_TIMEOUT = (5.0, 60.0)


def log_query(req: pb.LogRequest) -> list[tuple[str, str]]:
    query = [("container", req.container)] if req.container else []
    for name, on in (("follow", req.follow), ("previous", req.previous), ("timestamps", req.timestamps)):
        if on:
            query.append((name, "true"))
    if req.tail_lines:
        query.append(("tailLines", str(req.tail_lines)))
    if req.since_seconds:
        query.append(("sinceSeconds", str(req.since_seconds)))
    if req.since_time:  # the API reads whole seconds: the caller drops what it already had
        query.append(("sinceTime", req.since_time.partition(".")[0].removesuffix("Z") + "Z"))
    return query


class KubeLogReader:
    def __init__(self, api: KubeApi) -> None:
        self.api = api

    def read(self, req: pb.LogRequest, stop: threading.Event) -> Iterator[list[str]]:
        path = f"/api/v1/namespaces/{quote(req.namespace, safe='')}/pods/{quote(req.pod, safe='')}/log"
        timeout = FOLLOW_TIMEOUT if req.follow else READ_TIMEOUT
        try:
            yield from self.api.text_stream(path, log_query(req), timeout, stop)
        except ApiError as exc:
            if exc.status == 403:
                raise LogError(f"the cluster refused the agent: its RBAC lacks {exc.rbac_rule()}") from None
            raise LogError(exc.message or str(exc)) from None
