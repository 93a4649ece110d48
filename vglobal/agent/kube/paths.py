"""REST paths of the objects the agent reads and writes."""

from __future__ import annotations

from urllib.parse import quote

HYPERNODE_GROUP = "topology.volcano.sh"
HYPERNODE_VERSION = "v1alpha1"
NODES = "/api/v1/nodes"
ALL_PODS = "/api/v1/pods"
ALL_EVENTS = "/api/v1/events"
NAMESPACES = "/api/v1/namespaces"
HYPERNODES = f"/apis/{HYPERNODE_GROUP}/{HYPERNODE_VERSION}/hypernodes"
HYPERNODE_API = f"/apis/{HYPERNODE_GROUP}/{HYPERNODE_VERSION}"
VERSION = "/version"


def _ns(namespace: str) -> str:
    return f"{NAMESPACES}/{quote(namespace, safe='')}"


def namespace(name: str) -> str:
    return _ns(name)


def pods(namespace: str) -> str:
    return f"{_ns(namespace)}/pods"


def pod(namespace: str, name: str) -> str:
    return f"{pods(namespace)}/{quote(name, safe='')}"


def binding(namespace: str, name: str) -> str:
    return f"{pod(namespace, name)}/binding"


def configmaps(namespace: str) -> str:
    return f"{_ns(namespace)}/configmaps"


def configmap(namespace: str, name: str) -> str:
    return f"{configmaps(namespace)}/{quote(name, safe='')}"


def services(namespace: str) -> str:
    return f"{_ns(namespace)}/services"


def events(namespace: str) -> str:
    return f"{_ns(namespace)}/events"


def leases(namespace: str) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{quote(namespace, safe='')}/leases"


def lease(namespace: str, name: str) -> str:
    return f"{leases(namespace)}/{quote(name, safe='')}"


def secrets(namespace: str) -> str:
    return f"{_ns(namespace)}/secrets"


def secret(namespace: str, name: str) -> str:
    return f"{secrets(namespace)}/{quote(name, safe='')}"


def persistentvolumeclaim(namespace: str, name: str) -> str:
    return f"{_ns(namespace)}/persistentvolumeclaims/{quote(name, safe='')}"


def podtemplates(namespace: str) -> str:
    return f"{_ns(namespace)}/podtemplates"


def podtemplate(namespace: str, name: str) -> str:
    return f"{podtemplates(namespace)}/{quote(name, safe='')}"


def provisioning_requests(namespace: str) -> str:
    return f"/apis/autoscaling.x-k8s.io/v1beta1/namespaces/{quote(namespace, safe='')}/provisioningrequests"


def provisioning_request(namespace: str, name: str) -> str:
    return f"{provisioning_requests(namespace)}/{quote(name, safe='')}"
