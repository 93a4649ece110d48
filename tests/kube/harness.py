"""The agent's kube backend driven step by step in the test's process, against a cluster reached
through a kubeconfig: the emulator (tests/kubeapi) by default, a real cluster when
VGLOBAL_TEST_KUBECONFIG is set. Hub messages are handed to the agent's core directly; what the
cluster holds is read with the official client, as a user would."""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from vglobal.agent.cards import mig_config
from vglobal.agent.core import AgentCore
from vglobal.agent.kube.api import KubeApi, connect
from vglobal.agent.kube.backend import KubeBackend, KubeOptions
from vglobal.agent.kube.recovery import recover
from vglobal.agent.run import JobRun
from vglobal.agent.runtime import ClusterRuntime
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.clock import RealClock

T = TypeVar("T")
BUSYBOX = "busybox:1.36.1"


def job_yaml(
    name: str,
    namespace: str,
    *,
    replicas: int = 2,
    duration: str | None = "1s",
    exit_code: int = 0,
    cpu: str = "100m",
    extra_spec: str = "",
    task_extra: str = "",
    resources: str = "",
    annotations: str = "",
) -> str:
    """A Volcano Job whose pods run ``duration`` then exit with ``exit_code``: by the emulator's
    annotations, or by the busybox command on a real cluster."""
    seconds = duration.rstrip("s") if duration else "3600"
    notes = [f"vglobal.io/sim-exit-code: '{exit_code}'"] + (
        [f"vglobal.io/sim-duration: {duration}"] if duration else []
    )
    if annotations:
        notes.append(annotations)
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  minAvailable: {replicas}{extra_spec}
  tasks:
  - name: main
    replicas: {replicas}{task_extra}
    template:
      metadata:
        annotations: {{{", ".join(notes)}}}
      spec:
        restartPolicy: Never
        terminationGracePeriodSeconds: 1
        containers:
        - name: main
          image: {BUSYBOX}
          command: ["sh", "-c", "sleep {seconds}; exit {exit_code}"]
          resources:
            requests: {{cpu: "{cpu}", memory: 16Mi}}{resources}
"""


def cancel(uid: str, generation: int, reason: str = "job deleted") -> pb.HubMessage:
    return pb.HubMessage(cancel=pb.Cancel(job_uid=uid, generation=generation, reason=reason))


def kinds(msgs: list[pb.AgentMessage]) -> list[str]:
    return [str(m.WhichOneof("body")) for m in msgs]


def dispatch(uid: str, generation: int, manifest: str, queue: str = "default") -> pb.HubMessage:
    doc = yaml.safe_load(manifest)
    return pb.HubMessage(
        dispatch=pb.Dispatch(job_uid=uid, generation=generation, manifest=json.dumps(doc), queue=queue)
    )


def wait_for(
    cond: Callable[[], T | None], timeout: float, what: str, *, step: Callable[[], Any] | None = None
) -> T:
    deadline = time.monotonic() + timeout
    while True:
        if step is not None:
            step()
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


@dataclass
class Agent:
    """One agent (backend + runtime + core) over the cluster, stepped by the test."""

    kubeconfig: Path
    name: str = "test-cluster"
    namespaces: frozenset[str] | None = None
    create_namespaces: bool = False
    discovery: dict[str, Any] | None = None
    qps: float = 0.0
    out: list[pb.AgentMessage] = field(default_factory=list)

    def __post_init__(self) -> None:
        conn = connect(kubeconfig=str(self.kubeconfig), pool=16)
        self.api = KubeApi(conn.client, qps=self.qps, burst=max(1, int(self.qps)))
        options = KubeOptions(
            cluster=self.name,
            namespaces=self.namespaces,
            create_namespaces=self.create_namespaces,
            discovery=self.discovery,
            instance=f"test-{secrets.token_hex(3)}",
        )
        self.backend = KubeBackend(self.api, options)
        self.backend.start(timeout=20)
        self.runtime = ClusterRuntime(self.backend, RealClock())
        self.core = AgentCore(self.runtime, heartbeat_interval=1.0, purge_stopped=True)
        self.connect()

    def connect(self) -> None:
        """As if the hub's stream opened and answered Registered."""
        self.out += self.core.on_connected()
        self.send(pb.HubMessage(registered=pb.Registered(heartbeat_interval_seconds=1.0)))

    def recover(self) -> list[str]:
        found = recover(self.backend, mig_config(self.runtime.conf))
        for run in found:
            self.runtime.adopt(run)
        self.core.adopted()
        return [r.uid for r in found]

    def send(self, msg: pb.HubMessage) -> list[pb.AgentMessage]:
        out = self.core.on_message(msg)
        self.out += out
        return out

    def step(self) -> None:
        self.out += self.core.tick()

    def until(self, cond: Callable[[], T | None], timeout: float = 15.0, what: str = "") -> T:
        return wait_for(cond, timeout, what or str(cond), step=self.step)

    def run(self, uid: str) -> JobRun:
        return self.runtime.runs[uid]

    def finished(self, uid: str) -> JobRun | None:
        run = self.runtime.runs.get(uid)
        return run if run is not None and run.finished else None

    def events(self, uid: str) -> list[str]:
        return [f"{e.reason}: {e.message}" for e in self.run(uid).history]

    def stop(self) -> None:
        self.backend.stop()
        self.api.close()

    def abandon(self) -> None:
        """Stop without a word to the cluster, as a killed process would (threads just end)."""
        self.stop()


class Cluster:
    """What the cluster holds, read with the official client."""

    def __init__(self, kubeconfig: Path) -> None:
        from kubernetes import client, config

        self.api_client = config.new_client_from_config(config_file=str(kubeconfig))
        self.core = client.CoreV1Api(self.api_client)

    def pods(self, namespace: str, selector: str = "") -> list[Any]:
        items: list[Any] = self.core.list_namespaced_pod(namespace, label_selector=selector).items
        return sorted(items, key=lambda p: p.metadata.name)

    def live_pods(self, namespace: str, selector: str = "") -> list[Any]:
        return [p for p in self.pods(namespace, selector) if p.metadata.deletion_timestamp is None]

    def configmaps(self, namespace: str) -> list[str]:
        return sorted(c.metadata.name for c in self.core.list_namespaced_config_map(namespace).items)

    def services(self, namespace: str) -> list[str]:
        return sorted(s.metadata.name for s in self.core.list_namespaced_service(namespace).items)

    def events(self, namespace: str) -> list[str]:
        return [f"{e.reason}: {e.message}" for e in self.core.list_namespaced_event(namespace).items]

    def create_namespace(self, name: str) -> None:
        self.core.create_namespace({"metadata": {"name": name}})

    def delete_namespace(self, name: str) -> None:
        with contextlib.suppress(Exception):  # cleaning up: the test's outcome is already decided
            self.core.delete_namespace(name)

    def close(self) -> None:
        self.api_client.close()
