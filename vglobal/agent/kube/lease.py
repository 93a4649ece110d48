"""One active agent per cluster: leader election through a ``coordination.k8s.io/v1`` Lease in the
agent's own namespace, as client-go's leaderelection does it.

A candidate takes the Lease when it is free, or when its record has not changed for the lease's
duration as this candidate measured it (its own clock, so skewed clocks between replicas do not
matter). Updates carry the resourceVersion they read, so two candidates never both win. The
leader renews every ``retry`` seconds; if it cannot renew within ``renew_deadline`` it must stop
acting (``lost`` is set and the agent exits; Kubernetes restarts it as a candidate). Stopping
cleanly gives the Lease up, so the standby takes over at once instead of after the duration.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from vglobal.agent.kube import paths
from vglobal.agent.kube.api import ApiError, KubeApi

log = logging.getLogger(__name__)


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        api: KubeApi,
        *,
        namespace: str,
        name: str,
        identity: str,
        duration: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.duration = duration
        self.renew_deadline = duration * 2 / 3
        self.retry = max(0.2, duration / 7.5)
        # a hung request must not carry a leader past its renew deadline
        self._timeout = (max(0.5, self.retry), max(0.5, self.retry))
        self.clock = clock
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._observed: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._thread = threading.Thread(target=self._renew_loop, name="lease-renew", daemon=True)

    @property
    def path(self) -> str:
        return paths.lease(self.namespace, self.name)

    def acquire(self, stop: threading.Event) -> bool:
        """Wait as a standby until this candidate holds the Lease (True) or ``stop`` is set."""
        logged = False
        while not stop.is_set():
            if self.try_acquire_or_renew():
                log.info("holding Lease %s/%s as %s: active", self.namespace, self.name, self.identity)
                return True
            if not logged:
                holder = (self._observed or {}).get("holderIdentity", "")
                log.info("Lease %s/%s is held by %s: standing by", self.namespace, self.name, holder)
                logged = True
            stop.wait(self.retry)
        return False

    def start_renewing(self) -> None:
        self._thread.start()

    def release(self) -> None:
        """Stop renewing and give the Lease up, so a standby takes over at once."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.retry + 5.0)
        if self.lost.is_set():
            return
        try:
            lease = self.api.request("GET", self.path, timeout=(2.0, 2.0))
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") == self.identity:
                lease["spec"] = {
                    **spec,
                    "holderIdentity": "",
                    "leaseDurationSeconds": 1,
                    "renewTime": _micro_time(),
                }
                self.api.request("PUT", self.path, body=lease, timeout=(2.0, 2.0))
                log.info("gave up Lease %s/%s", self.namespace, self.name)
        except ApiError as exc:
            log.warning("could not give up Lease %s/%s: %s", self.namespace, self.name, exc)

    # ---- one round

    def try_acquire_or_renew(self) -> bool:
        try:
            lease = self.api.request("GET", self.path, timeout=self._timeout)
        except ApiError as exc:
            if exc.status != 404:
                self._log_error(exc)
                return False
            return self._create()
        spec = lease.get("spec") or {}
        record = {
            k: spec.get(k)
            for k in ("holderIdentity", "renewTime", "leaseDurationSeconds", "leaseTransitions")
        }
        if record != self._observed:
            self._observed, self._observed_at = record, self.clock()
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.duration)
        if holder and holder != self.identity and self._observed_at + duration > self.clock():
            return False
        now = _micro_time()
        fresh = {
            **spec,
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.duration),
            "renewTime": now,
        }
        if holder != self.identity:
            fresh["acquireTime"] = now
            fresh["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        lease["spec"] = fresh  # metadata keeps the resourceVersion read: a racing writer gets 409
        try:
            self.api.request("PUT", self.path, body=lease, timeout=self._timeout)
        except ApiError as exc:
            if exc.status != 409:
                self._log_error(exc)
            return False
        self._observed, self._observed_at = None, self.clock()
        return True

    def _create(self) -> bool:
        now = _micro_time()
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": int(self.duration),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }
        try:
            self.api.request("POST", paths.leases(self.namespace), body=body, timeout=self._timeout)
        except ApiError as exc:
            if exc.status != 409:
                self._log_error(exc)
            return False
        return True

    def _log_error(self, exc: ApiError) -> None:
        if exc.status == 403:
            log.error(
                "Lease %s/%s: forbidden; the agent's RBAC lacks: %s",
                self.namespace,
                self.name,
                exc.rbac_rule(),
            )
        else:
            log.warning("Lease %s/%s: %s", self.namespace, self.name, exc)

    def _renew_loop(self) -> None:
        last_ok = self.clock()
        while not self._stop.wait(self.retry):
            if self.try_acquire_or_renew():
                last_ok = self.clock()
            elif self.clock() - last_ok + self.retry > self.renew_deadline:  # the next try is too late
                log.error(
                    "could not renew Lease %s/%s for %.0fs: no longer active",
                    self.namespace,
                    self.name,
                    self.renew_deadline,
                )
                self.lost.set()
                return
