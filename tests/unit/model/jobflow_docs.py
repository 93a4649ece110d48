"""The JobFlow manifest the workflow tests share: a diamond a -> (b, c) -> d."""

from __future__ import annotations

from typing import Any

DIAMOND: dict[str, Any] = {
    "apiVersion": "flow.volcano.sh/v1alpha1",
    "kind": "JobFlow",
    "metadata": {"name": "flow", "namespace": "ns"},
    "spec": {
        "flows": [
            {"name": "a"},
            {"name": "b", "dependsOn": {"targets": ["a"]}},
            {"name": "c", "dependsOn": {"targets": ["a"]}},
            {"name": "d", "dependsOn": {"targets": ["b", "c"]}},
        ]
    },
}
