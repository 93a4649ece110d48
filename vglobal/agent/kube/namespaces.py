"""The namespaces a job's objects go into: checked once each, and created when the agent may."""

from __future__ import annotations

import logging

from vglobal.agent.kube import bodies, paths
from vglobal.agent.kube.api import ApiError, KubeApi

log = logging.getLogger(__name__)


class Namespaces:
    def __init__(self, api: KubeApi, cluster: str, create: bool) -> None:
        self.api = api
        self.cluster = cluster
        self.create = create
        self.known: set[str] = set()  # known to exist

    def ensure(self, ns: str) -> None:
        """``ns`` exists (made if the agent may make it); ValueError says why not."""
        if ns in self.known:
            return
        try:
            # short: this runs on the agent's main loop, which must keep its heartbeats going
            self.api.request("GET", paths.namespace(ns), timeout=(2.0, 2.0))
        except ApiError as exc:
            if exc.status != 404:
                log.warning(
                    "cannot check namespace %s (%s); going ahead",
                    ns,
                    exc.rbac_rule() if exc.status == 403 else exc,
                )
                return
            if not self.create:
                raise ValueError(f"namespace {ns} does not exist in cluster {self.cluster}") from None
            self._make(ns)
        self.known.add(ns)

    def _make(self, ns: str) -> None:
        try:
            self.api.request("POST", paths.NAMESPACES, body=bodies.namespace_body(ns), timeout=(2.0, 5.0))
            log.info("created namespace %s", ns)
        except ApiError as exc:
            if exc.status == 409:
                return
            if exc.status == 403:
                raise ValueError(
                    f"cannot create namespace {ns}: the agent's RBAC lacks {exc.rbac_rule()}"
                ) from None
            raise ValueError(f"cannot create namespace {ns}: {exc.message}") from None
