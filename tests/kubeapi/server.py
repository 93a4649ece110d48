"""The emulator in one event loop: the store, the API and control listeners, the background
controllers, the fake kubelet, and the knobs tests turn."""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.kubeapi import control
from tests.kubeapi.collector import Collector
from tests.kubeapi.crud import Api
from tests.kubeapi.ctl_autoscaler import PODTEMPLATES, PROVISIONING_REQUESTS, Autoscaler, EmulatedPool
from tests.kubeapi.faults import Faults
from tests.kubeapi.http_api import ApiHandler
from tests.kubeapi.journal import Journal
from tests.kubeapi.kinds import (
    ALL,
    BUILTIN,
    CRDS,
    HYPERNODE_CRD,
    HYPERNODES,
    NAMESPACES,
    NODES,
    Kind,
    hypernode_crd,
)
from tests.kubeapi.kubelet import Kubelet
from tests.kubeapi.store import Obj, Store
from tests.kubeapi.watching import WatchSettings, send_bookmarks
from tests.kubeapi.workload_ctl import Controllers
from tests.kubeapi.workload_kinds import BUILTIN_WORKLOADS, CUSTOM_WORKLOADS, crd_doc, crd_name

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_ALWAYS = (*BUILTIN, *BUILTIN_WORKLOADS, PODTEMPLATES)
# the kinds served only while their CustomResourceDefinition exists, by the CRD's name
CRD_KINDS: dict[str, Kind] = {
    HYPERNODE_CRD: HYPERNODES,
    **{crd_name(k): k for k in (*CUSTOM_WORKLOADS, PROVISIONING_REQUESTS)},
}


@dataclass
class EmulatorConfig:
    host: str = "127.0.0.1"
    port: int = 0
    control_port: int = 0
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    name: str = "emulated"
    kubelet: bool = True
    kubelet_start_delay: float = 0.0
    kubelet_termination_delay: float = 0.0
    hypernode_crd: bool = True
    workload_crds: tuple[str, ...] = tuple(crd_name(k) for k in CUSTOM_WORKLOADS)  # installed at start
    controllers: bool = True  # the workload kinds' controllers (off: objects stay as written)
    history_limit: int = 20_000
    bookmark_interval: float = 60.0
    default_watch_timeout: float = 1800.0
    nodes: list[Obj] = field(default_factory=list)
    hypernodes: list[Obj] = field(default_factory=list)
    namespaces: tuple[str, ...] = SYSTEM_NAMESPACES
    pools: list[EmulatedPool] = field(default_factory=list)  # an emulated autoscaler grows them
    provisioning_requests: bool = True  # with pools: the ProvisioningRequest CRD is installed
    state_file: str = ""  # the journal (tests/kubeapi/journal.py): a restart carries on from it


class EmulatorServer:
    def __init__(self, config: EmulatorConfig) -> None:
        self.config = config
        self.token = config.token
        kinds = (*ALL, *BUILTIN_WORKLOADS, *CUSTOM_WORKLOADS, PODTEMPLATES, PROVISIONING_REQUESTS)
        self.store = Store(kinds, history_limit=config.history_limit)
        self.api = Api(self.store)
        self.faults = Faults()
        self.watch_settings = WatchSettings(config.bookmark_interval, config.default_watch_timeout)
        self.kubelet: Kubelet | None = None
        self._api_runner: web.ServerRunner | None = None
        self._control_runner: web.AppRunner | None = None
        self._api_site: web.TCPSite | None = None
        self.port = 0
        self.control_port = 0
        self._routes: dict[tuple[str, ...], dict[tuple[str, str, str], Kind]] = {}
        self.journal = Journal(Path(config.state_file)) if config.state_file else None

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.port}"

    @property
    def control_url(self) -> str:
        return f"http://{self.config.host}:{self.control_port}"

    def installed_crds(self) -> tuple[str, ...]:
        return tuple(name for name in CRD_KINDS if self.store.get(CRDS, "", name) is not None)

    def served_kinds(self) -> tuple[Kind, ...]:
        return (*_ALWAYS, *(CRD_KINDS[name] for name in self.installed_crds()))

    def served_routes(self) -> dict[tuple[str, str, str], Kind]:
        """(group, version, plural) -> kind, for the router."""
        installed = self.installed_crds()
        routes = self._routes.get(installed)
        if routes is None:
            kinds = (*_ALWAYS, *(CRD_KINDS[name] for name in installed))
            routes = self._routes[installed] = {(k.group, k.version, k.plural): k for k in kinds}
        return routes

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        Collector(self.api, loop.call_soon)
        controllers = Controllers(self.api, loop.call_soon) if self.config.controllers else None
        self.kubelet = Kubelet(
            self.api,
            loop,
            enabled=self.config.kubelet,
            start_delay=self.config.kubelet_start_delay,
            termination_delay=self.config.kubelet_termination_delay,
        )
        objects, rv = self.journal.load(self.store.kinds()) if self.journal else ({}, 0)
        if objects:
            self.store.restore(objects, rv)
        if self.journal is not None:
            self.journal.open(objects, self.store.rv)
            self.store.journal = self.journal.append
        if objects:
            self.kubelet.recover()
            if controllers is not None:
                controllers.resync()
        else:
            self._seed()
        if self.config.pools:
            Autoscaler(self.api, loop, self.config.pools)
        # aiohttp's low-level server: one handler for every path, no router or middleware on the hot path
        self._api_runner = web.ServerRunner(
            web.Server(ApiHandler(self).handle, access_log=None), handle_signals=False
        )
        await self._api_runner.setup()
        await self._open_api_site(self.config.port)
        self._control_runner = web.AppRunner(control.app(self), access_log=None, handle_signals=False)
        await self._control_runner.setup()
        site = web.TCPSite(self._control_runner, self.config.host, self.config.control_port)
        await site.start()
        self.control_port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _open_api_site(self, port: int) -> None:
        assert self._api_runner is not None
        self._api_site = web.TCPSite(self._api_runner, self.config.host, port, reuse_address=True)
        await self._api_site.start()
        self.port = self._api_site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        self.faults.resume()
        for w in self.store.all_watchers():
            w.close()
        for runner in (self._control_runner, self._api_runner):
            if runner is not None:
                await runner.cleanup()
        if self.journal is not None:
            self.journal.close()

    def _seed(self) -> None:
        for ns in self.config.namespaces:
            self.api.create(NAMESPACES, "", {"metadata": {"name": ns}})
        if self.config.hypernode_crd:
            self.api.create(CRDS, "", hypernode_crd())
        for name in self.config.workload_crds:
            self.api.create(CRDS, "", crd_doc(CRD_KINDS[name]))
        if self.config.pools and self.config.provisioning_requests:
            self.api.create(CRDS, "", crd_doc(PROVISIONING_REQUESTS))
        for node in self.config.nodes:
            self.api.create(NODES, "", node)
        for hn in self.config.hypernodes:
            self.api.create(HYPERNODES, "", hn)

    # -- knobs (run on the loop) -----------------------------------------------------------------
    def drop_watches(self, abort: bool = False) -> int:
        watchers = self.store.all_watchers()
        for w in watchers:
            w.close(abort=abort)
        return len(watchers)

    def compact(self) -> int:
        return self.store.compact()

    def send_bookmarks(self) -> int:
        return send_bookmarks(self.store)

    async def pause(self, refuse: bool = False) -> None:
        """Stop answering, as an unreachable API server: requests hang (``refuse``: connections are
        refused and open ones cut), open watches go silent and are cut on resume."""
        self.faults.pause(refuse=refuse)
        for w in self.store.all_watchers():
            w.wake.set()
        if refuse and self._api_site is not None:
            await self._api_site.stop()
            self._api_site = None
            assert self._api_runner is not None and self._api_runner.server is not None
            for conn in self._api_runner.server.connections:
                conn.force_close()

    async def resume(self) -> None:
        refused = self.faults.refusing
        self.faults.resume()
        if refused and self._api_site is None:
            await self._open_api_site(self.port)

    def set_hypernode_crd(self, installed: bool) -> bool:
        return self.set_crd(HYPERNODE_CRD, installed)

    def set_crd(self, name: str, installed: bool) -> bool:
        """Install or remove a CRD (e.g. ``rayclusters.ray.io``); removing it deletes every object of
        its kind, as on a cluster."""
        kind = CRD_KINDS.get(name)
        if kind is None:
            raise ValueError(f"no CRD {name!r}; known: {', '.join(sorted(CRD_KINDS))}")
        present = self.store.get(CRDS, "", name) is not None
        if installed and not present:
            self.api.create(CRDS, "", hypernode_crd() if kind is HYPERNODES else crd_doc(kind))
        elif not installed and present:
            for entry in self.store.items(kind):
                meta = entry.obj["metadata"]
                self.store.commit(kind, (meta.get("namespace", ""), meta["name"]), None)
            self.store.commit(CRDS, ("", name), None)
        return installed

    def state(self) -> dict[str, Any]:
        return {
            "resourceVersion": self.store.rv,
            "url": self.url,
            "paused": self.faults.paused,
            "watches": len(self.store.all_watchers()),
            "objects": {
                f"{t.kind.plural}.{t.kind.group}".rstrip("."): len(t.objects)
                for t in self.store.tables.values()
            },
        }
