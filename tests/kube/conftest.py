"""Contract tests of the kube backend. They run against the emulated API server (tests/kubeapi, one
per test, in this process) or, when VGLOBAL_TEST_KUBECONFIG names a kubeconfig, against that real
cluster: each test then works in a namespace of its own, deleted afterwards, and the tests that
need the emulator's fault knobs or its node set are skipped."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kube.harness import Agent, Cluster

REAL = os.environ.get("VGLOBAL_TEST_KUBECONFIG")
NODE = {"cpu": "8", "memory": "32Gi", "pods": "110"}


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Any]:
    if REAL:
        pytest.skip("needs the emulator's knobs (VGLOBAL_TEST_KUBECONFIG points at a real cluster)")
    from tests.kubeapi import EmulatorConfig, KubeApiEmulator, simple_nodes

    config = EmulatorConfig(nodes=simple_nodes(4, NODE), bookmark_interval=1.0)
    with KubeApiEmulator(config, tmp_path / "kubeconfig") as emu:
        yield emu


@pytest.fixture
def kubeconfig(request: pytest.FixtureRequest) -> Path:
    if REAL:
        return Path(REAL)
    emu = request.getfixturevalue("emulator")
    path: Path = emu.kubeconfig
    return path


@pytest.fixture
def cluster(kubeconfig: Path) -> Iterator[Cluster]:
    c = Cluster(kubeconfig)
    yield c
    c.close()


@pytest.fixture
def ns(cluster: Cluster) -> Iterator[str]:
    name = f"vg-{secrets.token_hex(4)}"
    cluster.create_namespace(name)
    yield name
    cluster.delete_namespace(name)


@pytest.fixture
def make_agent(kubeconfig: Path) -> Iterator[Callable[..., Agent]]:
    made: list[Agent] = []

    def make(**kwargs: Any) -> Agent:
        agent = Agent(kubeconfig, **kwargs)
        made.append(agent)
        return agent

    yield make
    for a in made:
        with contextlib.suppress(Exception):  # stopped already (abandoned)
            a.stop()
