"""Fetching the network-topology sources that live outside the cluster (UFM's REST API).

One thread asks each remote source every ``interval`` and keeps the last good answer as HyperNode
manifests; a failed fetch is logged (never the credentials) and the last good answer stays, as
Volcano's discoverer keeps the HyperNodes it made. Credentials are read again at every fetch, so a
rotated Secret is used from the next one.
"""

from __future__ import annotations

import base64
import logging
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from vglobal.model.fabric_topology import ufm_hyper_nodes
from vglobal.model.hypernode import HyperNodeManifest
from vglobal.model.topology_sources import DiscoveryPlan, DiscoverySource

log = logging.getLogger(__name__)

UFM_PORTS_PATH = "/ufmRest/resources/ports"
MAX_BODY = 100 << 20  # Volcano's limit on a UFM answer
TIMEOUT = 30.0
# (namespace, name) -> (username, password); raises when the Secret cannot be read
Credentials = Callable[[tuple[str, str]], tuple[str, str]]


class FabricFetcher:
    def __init__(self, plan: DiscoveryPlan, credentials: Credentials) -> None:
        self.sources = plan.remote
        self._credentials = credentials
        self._found: dict[str, tuple[HyperNodeManifest, ...]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.version = 0
        self.fetches = 0  # answers taken (good or not), for tests and logs

    def start(self) -> None:
        if self.sources and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="fabric-fetch", daemon=True)
            self._thread.start()
            log.info("network topology discovery from %s started", ", ".join(s.source for s in self.sources))
            for s in self.sources:
                if s.config.get("insecureSkipVerify") is True:
                    log.warning("%s discovery: TLS certificate verification is off (insecureSkipVerify)",
                                s.source)

    def stop(self) -> None:
        self._stop.set()

    def found(self) -> Mapping[str, tuple[HyperNodeManifest, ...]]:
        with self._lock:
            return dict(self._found)

    def _run(self) -> None:
        due = {s.source: 0.0 for s in self.sources}
        while not self._stop.is_set():
            now = time.monotonic()
            for source in self.sources:
                if due[source.source] <= now:
                    self.fetch_once(source)
                    due[source.source] = time.monotonic() + source.interval
            self._stop.wait(max(0.0, min(due.values()) - time.monotonic()))

    def fetch_once(self, source: DiscoverySource) -> None:
        try:
            manifests = ufm_hyper_nodes(self._ufm_ports(source))
        except (OSError, ValueError, urllib.error.URLError, KeyError) as exc:
            log.warning("%s discovery failed, keeping the last HyperNodes it found: %s", source.source, exc)
            self.fetches += 1
            return
        with self._lock:
            changed = self._found.get(source.source) != manifests
            self._found[source.source] = manifests
            if changed:
                self.version += 1
        self.fetches += 1
        if changed:
            log.info("%s discovery: %d HyperNodes", source.source, len(manifests))

    def _ufm_ports(self, source: DiscoverySource) -> Any:
        endpoint = str(source.config["endpoint"]).rstrip("/")
        if not endpoint.startswith(("http://", "https://")):
            endpoint = "https://" + endpoint
        assert source.secret_ref is not None  # the plan requires it for ufm
        user, password = self._credentials(source.secret_ref)
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        request = urllib.request.Request(
            endpoint + UFM_PORTS_PATH, headers={"Authorization": f"Basic {token}"}
        )
        context = None
        if endpoint.startswith("https://"):
            context = ssl.create_default_context()
            if source.config.get("insecureSkipVerify") is True:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
        with urllib.request.urlopen(request, timeout=TIMEOUT, context=context) as answer:
            body = answer.read(MAX_BODY + 1)
        if len(body) > MAX_BODY:
            raise ValueError(f"UFM answer over {MAX_BODY} bytes")
        return orjson.loads(body)
