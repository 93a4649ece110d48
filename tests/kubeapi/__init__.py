"""An emulated Kubernetes API server over real HTTP, with a fake kubelet, for tests and benches that
drive the official ``kubernetes`` client (see README.md in this folder)."""

from tests.kubeapi.cluster import node_manifest, simple_nodes
from tests.kubeapi.control import Knobs
from tests.kubeapi.handles import EmulatorProcess, KubeApiEmulator, api_client, write_kubeconfig
from tests.kubeapi.server import EmulatorConfig

__all__ = [
    "EmulatorConfig",
    "EmulatorProcess",
    "Knobs",
    "KubeApiEmulator",
    "api_client",
    "node_manifest",
    "simple_nodes",
    "write_kubeconfig",
]
