"""The cluster's network topology: Volcano HyperNode objects where their CRD is served, and/or
HyperNodes discovered as Volcano's controller configures it (``--hypernode-discovery FILE``:
``networkTopologyDiscovery`` with label, roce and ufm sources, or ``networkTopologyTypes``).

Whether the CRD is served is asked through API discovery (a 404 for the group version means no),
never by reading CustomResourceDefinitions, which the agent's RBAC does not allow.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from vglobal.agent.fabric_fetch import Credentials, FabricFetcher
from vglobal.agent.kube import paths
from vglobal.agent.kube.api import ApiError, KubeApi
from vglobal.agent.kube.informer import Change
from vglobal.model.cluster_topology import cluster_hyper_nodes
from vglobal.model.errors import ManifestError
from vglobal.model.hypernode import ResolvedHyperNode
from vglobal.model.topology_sources import discovery_plan

log = logging.getLogger(__name__)


def load_discovery(path: Path) -> dict[str, Any]:
    """The discovery config file; ValueError naming the file (and the field) when it is not usable."""
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"--hypernode-discovery {path}: {exc}") from exc
    if not isinstance(doc, dict) or not ({"networkTopologyDiscovery", "networkTopologyTypes"} & doc.keys()):
        raise ValueError(
            f"--hypernode-discovery {path}: expected networkTopologyDiscovery (Volcano's controller "
            "config) or networkTopologyTypes"
        )
    try:
        plan = discovery_plan(doc, where=f"--hypernode-discovery {path}")
    except ManifestError as exc:
        raise ValueError(str(exc)) from exc
    if plan.disabled:
        log.info("discovery sources off (enabled is not true): %s", ", ".join(plan.disabled))
    return doc


def secret_credentials(api: KubeApi) -> Credentials:
    """Reads a fabric manager's username and password from a Secret (at every fetch: rotation)."""

    def read(ref: tuple[str, str]) -> tuple[str, str]:
        namespace, name = ref
        try:
            data = api.request("GET", f"/api/v1/namespaces/{namespace}/secrets/{name}").get("data") or {}
        except ApiError as exc:
            raise ValueError(f"Secret {namespace}/{name}: {exc.status} {exc.reason}") from exc
        missing = [k for k in ("username", "password") if k not in data]
        if missing:
            raise ValueError(f"Secret {namespace}/{name} has no {' or '.join(missing)}")
        return base64.b64decode(data["username"]).decode(), base64.b64decode(data["password"]).decode()

    return read


def hypernode_crd_served(api: KubeApi) -> bool:
    """True if the API server serves topology.volcano.sh/v1alpha1 hypernodes."""
    try:
        doc = api.request("GET", paths.HYPERNODE_API)
    except ApiError as exc:
        if exc.status == 404:
            return False
        raise
    return any(r.get("name") == "hypernodes" for r in doc.get("resources") or [])


def hypernode_doc(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What resolution needs of a HyperNode object (its status and bookkeeping dropped)."""
    meta = obj.get("metadata") or {}
    return {
        "apiVersion": obj.get("apiVersion", paths.HYPERNODE_GROUP + "/" + paths.HYPERNODE_VERSION),
        "kind": obj.get("kind", "HyperNode"),
        "metadata": {"name": meta.get("name")},
        "spec": obj.get("spec") or {},
    }


class Topology:
    """The resolved tree, kept up to date with HyperNode objects and node labels."""

    def __init__(self, discovery: Mapping[str, Any] | None, fetcher: FabricFetcher | None = None) -> None:
        self.discovery = discovery
        self.fetcher = fetcher
        self.docs: dict[str, dict[str, Any]] = {}
        self.version = 0
        self._tree: tuple[ResolvedHyperNode, ...] = ()
        self._resolved_for: tuple[int, int, int] | None = None  # (docs, nodes, fetched) versions
        self._docs_version = 0

    def apply(self, change: Change[Any]) -> None:
        if change.kind == "replace":
            fresh = {d["metadata"]["name"]: d for d in change.items}
            if fresh != self.docs:
                self.docs = fresh
                self._docs_version += 1
            return
        doc: dict[str, Any] = change.item or {}
        name = doc["metadata"]["name"]
        if change.kind == "delete":
            if self.docs.pop(name, None) is not None:
                self._docs_version += 1
        elif self.docs.get(name) != doc:
            self.docs[name] = doc
            self._docs_version += 1

    def tree(
        self, node_labels: Mapping[str, Mapping[str, str]], node_version: int
    ) -> tuple[ResolvedHyperNode, ...]:
        key = (self._docs_version, node_version, self.fetcher.version if self.fetcher else 0)
        if key == self._resolved_for:
            return self._tree
        self._resolved_for = key
        try:
            fetched = self.fetcher.found() if self.fetcher else None
            tree = cluster_hyper_nodes(
                [self.docs[n] for n in sorted(self.docs)], self.discovery, node_labels, fetched
            )
        except ManifestError as exc:
            log.error("the cluster's HyperNodes do not form a tree; keeping the last good one: %s", exc)
            return self._tree
        if tree != self._tree:
            self._tree = tree
            self.version += 1
            log.info("network topology: %d HyperNodes", len(tree))
        return self._tree
