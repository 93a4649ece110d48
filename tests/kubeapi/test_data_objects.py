"""ConfigMaps, Secrets and PersistentVolumeClaims as the API server keeps them: a Secret's
stringData merged into base64 data, bad base64 and keys refused (422), immutable data and a
Secret's type kept, a claim Pending until it names a volume, JSON patches of data."""

from __future__ import annotations

import base64
import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.kubeapi import KubeApiEmulator


@pytest.fixture
def core(kube_api: KubeApiEmulator) -> client.CoreV1Api:
    return client.CoreV1Api(kube_api.api_client())


def test_a_secrets_string_data_is_stored_as_base64_data(core: client.CoreV1Api) -> None:
    s = core.create_namespaced_secret(
        "default", {"metadata": {"name": "s"}, "stringData": {"token": "abc"}, "data": {"x": "eQ=="}}
    )
    assert s.data == {"token": base64.b64encode(b"abc").decode(), "x": "eQ=="} and s.type == "Opaque"
    assert s.string_data is None


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (
            lambda c: c.create_namespaced_secret(
                "default", {"metadata": {"name": "b"}, "data": {"k": "***"}}
            ),
            "data[k]",
        ),
        (
            lambda c: c.create_namespaced_config_map(
                "default", {"metadata": {"name": "b"}, "data": {"a b": "v"}}
            ),
            "data[a b]",
        ),
    ],
)
def test_bad_values_and_keys_are_422_naming_the_field(
    core: client.CoreV1Api, make: object, field: str
) -> None:
    with pytest.raises(ApiException) as e:
        make(core)  # type: ignore[operator]
    assert e.value.status == 422 and field in json.loads(e.value.body)["message"]


def test_immutable_data_and_a_secrets_type_cannot_change(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "frozen"}, "data": {"k": "v"}, "immutable": True}
    )
    with pytest.raises(ApiException) as e:
        core.patch_namespaced_config_map("frozen", "default", {"data": {"k": "w"}})
    assert e.value.status == 422 and "immutable" in json.loads(e.value.body)["message"]
    core.create_namespaced_secret("default", {"metadata": {"name": "t"}, "type": "Opaque"})
    with pytest.raises(ApiException) as e:
        core.patch_namespaced_secret("t", "default", {"type": "kubernetes.io/tls"})
    assert e.value.status == 422


def test_a_json_patch_replaces_a_configmaps_data(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}})
    # a list body goes as application/json-patch+json, as the agent sends its patches
    got = core.patch_namespaced_config_map(
        "c", "default", [{"op": "add", "path": "/data", "value": {"a": "3"}}]
    )
    assert got.data == {"a": "3"}


def test_a_claim_is_pending_until_it_names_a_volume(core: client.CoreV1Api) -> None:
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    assert (
        core.create_namespaced_persistent_volume_claim(
            "default", {"metadata": {"name": "p"}, "spec": spec}
        ).status.phase
        == "Pending"
    )
    bound = {"metadata": {"name": "q"}, "spec": {**spec, "volumeName": "pv-1"}}
    assert core.create_namespaced_persistent_volume_claim("default", bound).status.phase == "Bound"
