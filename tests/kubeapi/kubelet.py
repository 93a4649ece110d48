"""A fake kubelet for every node: bound pods go Pending -> Running -> Succeeded/Failed after the
``vglobal.io/sim-duration`` annotation with the ``vglobal.io/sim-exit-code`` code (the simulator's
annotations; a real kubelet ignores them), containers restart as restartPolicy says, graceful
deletions finish, and on request a node goes NotReady or has its pods evicted or OOM-killed.

A pod on a node that is missing or NotReady is left alone, as by a kubelet that is gone: it neither
starts nor finishes, and its graceful deletion waits (a deletion with gracePeriodSeconds=0 still
removes it). An image whose name contains ``does-not-exist`` cannot be pulled: the pod stays Pending
with its containers waiting in ImagePullBackOff."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from typing import Any

from tests.kubeapi.clock import rfc3339
from tests.kubeapi.crud import Api
from tests.kubeapi.journal import seconds_left
from tests.kubeapi.kinds import NODES, PODS, Kind
from tests.kubeapi.status import not_found
from tests.kubeapi.store import DELETED, Obj
from vglobal.agent.backends.sim import pod_runtime

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
KILLED = (
    137  # SIGKILL: what a container killed at the end of its grace period, evicted or OOM-killed exits with
)
EVICTED_MESSAGE = "The node was low on resource: memory. "
UNPULLABLE = "does-not-exist"  # an image whose name holds this cannot be pulled (ImagePullBackOff)


def node_ready(node: Obj | None) -> bool:
    conditions = ((node or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _condition(type_: str, ok: bool, at: str, reason: str = "") -> Obj:
    out: Obj = {
        "type": type_,
        "status": "True" if ok else "False",
        "lastProbeTime": None,
        "lastTransitionTime": at,
    }
    if reason:
        out["reason"] = reason
    return out


class Kubelet:
    def __init__(
        self,
        api: Api,
        loop: asyncio.AbstractEventLoop,
        *,
        enabled: bool = True,
        start_delay: float = 0.0,
        termination_delay: float = 0.0,
    ) -> None:
        self.api, self.store, self.loop = api, api.store, loop
        self.enabled, self.start_delay, self.termination_delay = enabled, start_delay, termination_delay
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._ends: dict[str, float] = {}  # uid -> loop time the running containers exit
        self._terminating: set[str] = set()
        self._ips = itertools.count(1)
        self.store.listeners.append(self._on_change)

    # -- reacting to changes ---------------------------------------------------------------------
    def _on_change(self, kind: Kind, type_: str, obj: Obj, old: Obj | None) -> None:
        if kind is NODES:
            if type_ != DELETED and node_ready(obj) and not node_ready(old):
                self.loop.call_soon(self.resync_node, obj["metadata"]["name"])
            return
        if kind is not PODS:
            return
        uid = obj["metadata"]["uid"]
        if type_ == DELETED:
            self._cancel(uid)
            self._ends.pop(uid, None)
            self._terminating.discard(uid)
            return
        self._plan(obj)

    def _plan(self, pod: Obj) -> None:
        meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        uid = meta["uid"]
        if not self.enabled or not spec.get("nodeName"):
            return
        key = (meta["namespace"], meta["name"], uid)
        if meta.get("deletionTimestamp"):
            if uid not in self._terminating:
                self._cancel(uid)
                self._terminating.add(uid)
                self._after(uid, self.termination_delay, self._terminate, key)
            return
        if uid in self._timers:
            return
        if status.get("phase") == "Pending":
            self._after(uid, self.start_delay, self._start, key)
        elif status.get("phase") == "Running" and uid in self._ends:
            self._after(uid, max(0.0, self._ends[uid] - self.loop.time()), self._exit, key)

    def _after(self, uid: str, delay: float, fn: Any, key: tuple[str, str, str]) -> None:
        def fire() -> None:
            self._timers.pop(uid, None)
            fn(*key)

        self._timers[uid] = self.loop.call_later(delay, fire)

    def _cancel(self, uid: str) -> None:
        timer = self._timers.pop(uid, None)
        if timer is not None:
            timer.cancel()

    def _pod(self, namespace: str, name: str, uid: str) -> tuple[Obj, Obj] | None:
        """The pod (same incarnation) and its node, when a live kubelet runs it."""
        pod = self.store.get(PODS, namespace, name)
        if pod is None or pod["metadata"]["uid"] != uid or not self.enabled:
            return None
        node = self.store.get(NODES, "", (pod.get("spec") or {}).get("nodeName", ""))
        if node is None or not node_ready(node):
            return None
        return pod, node

    def set_enabled(self, enabled: bool) -> None:
        self.enabled = enabled
        if enabled:
            self.resync_node(None)

    def resync_node(self, node_name: str | None) -> None:
        """A node back to Ready (None: every node): its kubelet picks up where it stopped."""
        for entry in self.store.items(PODS):
            pod = entry.obj
            if node_name is None or (pod.get("spec") or {}).get("nodeName") == node_name:
                self._cancel(pod["metadata"]["uid"])
                self._terminating.discard(pod["metadata"]["uid"])
                self._plan(pod)

    def recover(self) -> None:
        """After a restart from the journal: a running pod ends when its startTime says, and every
        pod is taken up where it was."""
        for entry in self.store.items(PODS):
            pod = entry.obj
            duration, _ = self._runtime(pod)
            if duration is not None and (pod.get("status") or {}).get("phase") == "Running":
                self._ends[pod["metadata"]["uid"]] = self.loop.time() + seconds_left(pod, duration)
        self.resync_node(None)

    # -- transitions -----------------------------------------------------------------------------
    def _start(self, namespace: str, name: str, uid: str) -> None:
        found = self._pod(namespace, name, uid)
        if found is None:
            return
        pod, node = found
        if pod["metadata"].get("deletionTimestamp") or (pod.get("status") or {}).get("phase") != "Pending":
            return
        if any(UNPULLABLE in str(c.get("image", "")) for c in pod["spec"]["containers"]):
            self._pull_fails(pod)
            return
        duration, _ = self._runtime(pod)
        now = rfc3339()
        host_ip = next(
            (a["address"] for a in node["status"].get("addresses") or [] if a.get("type") == "InternalIP"), ""
        )
        n = next(self._ips)
        pod_ip = f"10.244.{n // 250 % 250}.{n % 250 + 1}"
        spec = pod["spec"]
        status = {
            **pod["status"],
            "phase": "Running",
            "startTime": now,
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "conditions": [
                _condition(t, True, now)
                for t in (
                    "PodReadyToStartContainers",
                    "Initialized",
                    "Ready",
                    "ContainersReady",
                    "PodScheduled",
                )
            ],
            "containerStatuses": [self._running(c, now, 0, {}) for c in spec["containers"]],
        }
        if spec.get("initContainers"):
            status["initContainerStatuses"] = [
                {
                    **self._running(c, now, 0, {}),
                    "ready": True,
                    "started": False,
                    "state": {
                        "terminated": {
                            "exitCode": 0,
                            "reason": "Completed",
                            "startedAt": now,
                            "finishedAt": now,
                        }
                    },
                }
                for c in spec["initContainers"]
            ]
        self._store_status(pod, status)
        if duration is not None:
            self._ends[uid] = self.loop.time() + duration
            self._after(uid, duration, self._exit, (namespace, name, uid))

    def _pull_fails(self, pod: Obj) -> None:
        """The pod stays Pending with its containers waiting in ImagePullBackOff, as a kubelet that
        cannot pull an image leaves it."""
        waiting = [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "ready": False,
                "started": False,
                "restartCount": 0,
                "state": {
                    "waiting": {
                        "reason": "ImagePullBackOff",
                        "message": f'Back-off pulling image "{c.get("image", "")}"',
                    }
                },
                "lastState": {},
            }
            for c in pod["spec"]["containers"]
        ]
        if (pod.get("status") or {}).get("containerStatuses") == waiting:
            return
        self._store_status(pod, {**pod["status"], "startTime": rfc3339(), "containerStatuses": waiting})

    @staticmethod
    def _running(container: Obj, started: str, restarts: int, last: Obj) -> Obj:
        return {
            "name": container["name"],
            "image": container.get("image", ""),
            "imageID": "",
            "containerID": f"containerd://{uuid.uuid4().hex}",
            "ready": True,
            "started": True,
            "restartCount": restarts,
            "state": {"running": {"startedAt": started}},
            "lastState": last,
        }

    @staticmethod
    def _runtime(pod: Obj) -> tuple[float | None, int]:
        try:
            return pod_runtime(pod["metadata"].get("annotations") or {})
        except ValueError:
            return None, 0  # a duration the simulator cannot read: runs until deleted

    def _exit(self, namespace: str, name: str, uid: str, code: int | None = None, reason: str = "") -> None:
        found = self._pod(namespace, name, uid)
        if found is None or (found[0].get("status") or {}).get("phase") != "Running":
            return
        pod = found[0]
        if code is None:
            code = self._runtime(pod)[1]
        reason = reason or ("Completed" if code == 0 else "Error")
        self._ends.pop(uid, None)
        policy = pod["spec"].get("restartPolicy", "Always")
        if policy == "Always" or (policy == "OnFailure" and code != 0):
            self._restart(pod, code, reason)
        else:
            self._store_status(
                pod, self._terminated(pod, code, reason, "Succeeded" if code == 0 else "Failed")
            )

    def _terminated(self, pod: Obj, code: int, reason: str, phase: str) -> Obj:
        now = rfc3339()
        statuses = []
        for cs in pod["status"].get("containerStatuses") or []:
            started = (cs.get("state") or {}).get("running", {}).get("startedAt", now)
            statuses.append(
                {
                    **cs,
                    "ready": False,
                    "started": False,
                    "state": {
                        "terminated": {
                            "exitCode": code,
                            "reason": reason,
                            "startedAt": started,
                            "finishedAt": now,
                            "containerID": cs.get("containerID", ""),
                        }
                    },
                }
            )
        conditions = [
            c
            if c["type"] not in ("Ready", "ContainersReady")
            else _condition(c["type"], False, now, "PodCompleted")
            for c in pod["status"].get("conditions") or []
        ]
        return {**pod["status"], "phase": phase, "conditions": conditions, "containerStatuses": statuses}

    def _restart(self, pod: Obj, code: int, reason: str) -> None:
        now = rfc3339()
        done = self._terminated(pod, code, reason, "Running")
        statuses = [
            self._running(c, now, int(cs.get("restartCount", 0)) + 1, cs["state"])
            for c, cs in zip(pod["spec"]["containers"], done["containerStatuses"], strict=False)
        ]
        self._store_status(pod, {**pod["status"], "containerStatuses": statuses})
        duration, _ = self._runtime(pod)
        if duration is not None:
            meta = pod["metadata"]
            self._ends[meta["uid"]] = self.loop.time() + duration
            self._after(meta["uid"], duration, self._exit, (meta["namespace"], meta["name"], meta["uid"]))

    def _terminate(self, namespace: str, name: str, uid: str) -> None:
        """The end of a graceful deletion: containers killed, then the pod removed (grace period 0)."""
        found = self._pod(namespace, name, uid)
        if found is None:
            return
        pod = found[0]
        if pod["status"].get("phase") == "Running":
            pod = self._store_status(pod, self._terminated(pod, KILLED, "Error", "Failed"))
        self.store.commit(PODS, (namespace, name), None)

    def _store_status(self, pod: Obj, status: Obj) -> Obj:
        return self.api.write(PODS, pod, {**pod, "status": status})

    # -- on request ------------------------------------------------------------------------------
    def set_node_ready(self, node_name: str, ready: bool) -> Obj:
        node = self.store.get(NODES, "", node_name)
        if node is None:
            raise not_found("nodes", node_name)
        now = rfc3339()
        cond = {
            "type": "Ready",
            "status": "True" if ready else "False",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
            "reason": "KubeletReady" if ready else "KubeletNotReady",
            "message": "kubelet is posting ready status" if ready else "container runtime is down",
        }
        conditions = [c for c in node["status"].get("conditions") or [] if c.get("type") != "Ready"] + [cond]
        taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != NOT_READY_TAINT]
        if not ready:
            taints.append({"key": NOT_READY_TAINT, "effect": "NoSchedule", "timeAdded": now})
        spec = {**(node.get("spec") or {}), "taints": taints}
        if not taints:
            spec.pop("taints")
        return self.api.write(
            NODES, node, {**node, "spec": spec, "status": {**node["status"], "conditions": conditions}}
        )

    def evict_node(self, node_name: str, message: str = EVICTED_MESSAGE) -> int:
        """Node-pressure eviction: every pod on the node that has not finished fails with reason Evicted."""
        n = 0
        for entry in self.store.items(PODS):
            pod = entry.obj
            if pod["spec"].get("nodeName") != node_name or pod["status"].get("phase") in (
                "Succeeded",
                "Failed",
            ):
                continue
            self._cancel(pod["metadata"]["uid"])
            now = rfc3339()
            status = (
                self._terminated(pod, KILLED, "Error", "Failed")
                if pod["status"].get("containerStatuses")
                else {**pod["status"], "phase": "Failed"}
            )
            status = {
                **status,
                "reason": "Evicted",
                "message": message,
                "conditions": [
                    *status.get("conditions", []),
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "lastProbeTime": None,
                        "lastTransitionTime": now,
                        "reason": "TerminationByKubelet",
                        "message": message,
                    },
                ],
            }
            self._store_status(pod, status)
            n += 1
        return n

    def kill_container(self, namespace: str, name: str, *, code: int, reason: str = "") -> Obj:
        """Containers exit now (``OOMKilled`` with 137, or any code); restartPolicy applies."""
        pod = self.store.get(PODS, namespace, name)
        if pod is None:
            raise not_found("pods", name)
        uid = pod["metadata"]["uid"]
        self._cancel(uid)
        self._exit(namespace, name, uid, code, reason)
        return self.store.get(PODS, namespace, name) or pod
