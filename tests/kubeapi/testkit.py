"""Small helpers for tests against the emulator: object bodies and polling."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
DURATION = "vglobal.io/sim-duration"
EXIT_CODE = "vglobal.io/sim-exit-code"


def pod_body(
    name: str,
    *,
    duration: str | None = None,
    exit_code: int | None = None,
    restart: str = "Never",
    node: str | None = None,
    labels: dict[str, str] | None = None,
    owner: dict[str, Any] | None = None,
    scheduler: str = "vglobal",
) -> dict[str, Any]:
    annotations = {}
    if duration is not None:
        annotations[DURATION] = duration
    if exit_code is not None:
        annotations[EXIT_CODE] = str(exit_code)
    meta: dict[str, Any] = {"name": name, "labels": labels or {}, "annotations": annotations}
    if owner is not None:
        meta["ownerReferences"] = [owner_ref(owner)]
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "busybox:1.36"}],
        "restartPolicy": restart,
        "schedulerName": scheduler,
    }
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def owner_ref(owner: Any) -> dict[str, Any]:
    """An ownerReference to an object given as a dict or as a client model."""
    if not isinstance(owner, dict):
        owner = owner.to_dict() if hasattr(owner, "to_dict") else dict(owner)
        meta = owner["metadata"]
        return {
            "apiVersion": owner.get("api_version") or owner.get("apiVersion"),
            "kind": owner["kind"],
            "name": meta["name"],
            "uid": meta["uid"],
        }
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
    }


def binding(name: str, node: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "annotations": annotations or {}},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def wait_until(
    fn: Callable[[], T | None], timeout: float = 10.0, interval: float = 0.02, what: str = ""
) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or fn}")
        time.sleep(interval)
