"""The kube agent runs the discovery sources of Volcano's controller config: UFM read over HTTP
(an emulated UFM server, credentials from a Secret in the cluster) beside label discovery, every
``interval``, keeping the last good answer when UFM fails and never logging the credentials."""

from __future__ import annotations

import base64
import copy
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.fabric.ufm_server import UfmServer, host_ports
from tests.kube.harness import Agent, Cluster
from tests.unit.topology.test_discovery_sources import SEED

PASSWORD = "pa55-not-in-logs"


@pytest.fixture
def ufm() -> Iterator[UfmServer]:
    with UfmServer(host_ports([("node-2", "leaf-a"), ("node-3", "leaf-a")]), password=PASSWORD) as server:
        yield server


def _config(ufm: UfmServer, interval: str) -> dict[str, Any]:
    config = copy.deepcopy(SEED)
    config["networkTopologyDiscovery"][0]["config"]["endpoint"] = ufm.endpoint
    config["networkTopologyDiscovery"][0]["interval"] = interval
    return config


def _secret(cluster: Cluster, password: str) -> None:
    cluster.create_namespace("volcano-system")
    data = {"username": base64.b64encode(b"admin").decode(), "password": base64.b64encode(password.encode()).decode()}
    cluster.core.create_namespaced_secret("volcano-system", {"metadata": {"name": "ufm-credentials"}, "data": data})


def _tree(agent: Agent) -> dict[str, frozenset[str]]:
    return {h.name: h.nodes for h in agent.backend.hyper_nodes()}


def _with_ufm(agent: Agent) -> dict[str, frozenset[str]] | None:
    tree = _tree(agent)
    return tree if "spine-hn" in tree else None


def test_the_seed_config_builds_ufm_and_label_hypernodes_and_follows_ufm(
    make_agent: Callable[..., Agent], cluster: Cluster, emulator: Any, ufm: UfmServer
) -> None:
    emulator.set_hypernode_crd(False)
    _secret(cluster, PASSWORD)
    for node in ("node-0", "node-1"):
        labels = {"volcano.sh/hypercluster": "hc0", "volcano.sh/hypernode": "sn0"}
        cluster.core.patch_node(node, {"metadata": {"labels": labels}})
    agent = make_agent(discovery=_config(ufm, "200ms"))
    tree = agent.until(lambda: _with_ufm(agent), 10, "UFM's HyperNodes")
    assert tree["leaf-hn-0"] == {"node-2", "node-3"} and tree["spine-hn"] == {"node-2", "node-3"}
    assert {n for n, nodes in tree.items() if nodes == {"node-0", "node-1"}} == {
        "hypernode-topologya3-tier1-sn0",
        "hypernode-topologya3-tier2-hc0",
    }
    seen = len(agent.out)
    ufm.ports = host_ports([("node-2", "leaf-a"), ("node-3", "leaf-b")])  # a recabled host

    def registered_again() -> list[Any]:
        return [m.register for m in agent.out[seen:] if m.WhichOneof("body") == "register"]

    (register,) = agent.until(registered_again, 10, "a new Register with UFM's new tree")
    names = {h.name for h in register.hypernodes}
    assert {"leaf-hn-0", "leaf-hn-1", "spine-hn"} <= names
    assert _tree(agent)["leaf-hn-1"] == {"node-3"}


def test_an_hour_interval_asks_once_and_a_refusing_ufm_keeps_the_last_tree_without_logging_secrets(
    make_agent: Callable[..., Agent], cluster: Cluster, emulator: Any, ufm: UfmServer, caplog: pytest.LogCaptureFixture
) -> None:
    emulator.set_hypernode_crd(False)
    _secret(cluster, PASSWORD)
    caplog.set_level(logging.DEBUG)
    agent = make_agent(discovery=_config(ufm, "1h"))
    assert agent.backend.fabric is not None
    agent.until(lambda: "spine-hn" in _tree(agent), 10, "UFM's HyperNodes")
    time.sleep(1.0)  # held: an hour's interval must not ask again
    assert ufm.requests == 1
    ufm.fail_with = 500
    source = agent.backend.fabric.sources[0]
    agent.backend.fabric.fetch_once(source)
    assert ufm.requests == 2 and "spine-hn" in _tree(agent)
    assert "ufm discovery failed, keeping the last HyperNodes" in caplog.text
    assert PASSWORD not in caplog.text and base64.b64encode(f"admin:{PASSWORD}".encode()).decode() not in caplog.text


def test_wrong_credentials_build_no_ufm_hypernodes(
    make_agent: Callable[..., Agent], cluster: Cluster, emulator: Any, ufm: UfmServer, caplog: pytest.LogCaptureFixture
) -> None:
    emulator.set_hypernode_crd(False)
    _secret(cluster, "wrong")
    agent = make_agent(discovery=_config(ufm, "1h"))
    assert agent.backend.fabric is not None
    agent.until(lambda: agent.backend.fabric.fetches >= 1, 10, "the first UFM answer")  # type: ignore[union-attr]
    assert "spine-hn" not in _tree(agent) and "401" in caplog.text
