"""A job's dependencies: v1 ConfigMaps and Secrets validated as the API server does (errors name
the field, never a value), and what every kind's pod templates reference."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from vglobal.model.dependencies import ObjectRef, parse_dependency, references
from vglobal.model.errors import ManifestError
from vglobal.model.job import Job
from vglobal.model.manifests import load_documents, parse_manifest, parse_manifests

SAMPLES = Path(__file__).parents[2] / "fixtures" / "workloads"
VALUE = "hunter2-do-not-print"


def cm(**body: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "conf"}, **body}


def secret(**body: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": "ml"}, **body}


def test_a_configmap_keeps_text_and_binary_keys_apart() -> None:
    d = parse_dependency(cm(data={"a.py": "print(1)"}, binaryData={"b.bin": base64.b64encode(b"\0\1").decode()}))
    assert (d.kind, d.namespace, d.name) == ("ConfigMap", "default", "conf")
    assert d.data == {"a.py": b"print(1)", "b.bin": b"\0\1"} and d.text_keys == {"a.py"}
    assert d.sizes == {"a.py": 8, "b.bin": 2}


def test_a_secrets_string_data_wins_over_its_data_and_the_repr_holds_no_value() -> None:
    encoded = base64.b64encode(b"old").decode()
    d = parse_dependency(secret(data={"token": encoded}, stringData={"token": VALUE}, type="Opaque"))
    assert d.data == {"token": VALUE.encode()} and d.secret and d.type == "Opaque"
    assert VALUE not in repr(d)


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        (secret(data={"token": VALUE}), "data.token: must be base64"),
        (secret(data={"bad key!": "eA=="}), "data.bad key!: invalid key"),
        (cm(data={"k": "v"}, binaryData={"k": "eA=="}), "binaryData.k: duplicate"),
        (cm(data={"k": 3}), "data.k"),
        ({**cm(), "metadata": {"name": "Bad_Name"}}, "metadata.name"),
        ({**cm(), "metadata": {}}, "metadata.name"),
        (cm(data={"k": "x" * 1_048_577}), "data"),
    ],
)
def test_bad_objects_name_the_field_and_never_the_value(doc: dict[str, Any], field: str) -> None:
    with pytest.raises(ManifestError) as err:
        parse_dependency(doc)
    assert field in str(err.value)
    assert VALUE not in str(err.value)


def test_apply_reads_them_among_jobs_and_strict_validation_refuses_unknown_fields() -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n---\n" + (
        "apiVersion: v1\nkind: Secret\nmetadata: {name: b}\nstringData: {k: v}\n"
    )
    assert [d.kind for d in parse_manifests(text)] == ["ConfigMap", "Secret"]  # type: ignore[union-attr]
    with pytest.raises(ManifestError, match="spec: unknown field"):
        parse_manifest({**cm(), "spec": {}})


POD = {
    "spec": {
        "imagePullSecrets": [{"name": "registry"}],
        "volumes": [
            {"name": "a", "configMap": {"name": "scripts"}},
            {"name": "b", "secret": {"secretName": "tls"}},
            {"name": "c", "persistentVolumeClaim": {"claimName": "data"}},
            {
                "name": "d",
                "projected": {"sources": [{"configMap": {"name": "proj-cm"}}, {"secret": {"name": "proj-s"}}]},
            },
            {"name": "e", "emptyDir": {}},
        ],
        "initContainers": [{"name": "i", "image": "x", "envFrom": [{"secretRef": {"name": "init-env"}}]}],
        "containers": [
            {
                "name": "c",
                "image": "x",
                "envFrom": [{"configMapRef": {"name": "env-cm"}}],
                "env": [
                    {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "key-cm", "key": "a"}}},
                    {"name": "B", "valueFrom": {"secretKeyRef": {"name": "key-s", "key": "b"}}},
                    {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "D", "value": "plain"},
                ],
            }
        ],
    }
}
EVERY = {
    ObjectRef("ConfigMap", n) for n in ("scripts", "proj-cm", "env-cm", "key-cm")
} | {ObjectRef("Secret", n) for n in ("registry", "tls", "proj-s", "init-env", "key-s")} | {
    ObjectRef("PersistentVolumeClaim", "data")
}


def _job(kind_doc: dict[str, Any]) -> Job:
    job = parse_manifest(kind_doc)
    assert isinstance(job, Job)
    return job


def test_a_volcano_jobs_templates_reference_volumes_projections_env_and_pull_secrets() -> None:
    doc = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {
            "tasks": [
                {"name": "a", "replicas": 1, "template": POD},
                {"name": "b", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
            ]
        },
    }
    assert set(references(_job(doc))) == EVERY


def test_a_deployments_template_is_scanned_as_its_reader_reads_it() -> None:
    doc = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "annotations": {"scheduling.volcano.sh/group-min-member": "1"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}}, "template": POD},
    }
    assert set(references(_job(doc))) == EVERY


def test_kuberays_rayjob_sample_references_its_own_configmap() -> None:
    docs = load_documents((SAMPLES / "ray-job.sample.yaml").read_text())
    job = _job(next(d for d in docs if d["kind"] == "RayJob"))
    shipped = next(d for d in docs if d["kind"] == "ConfigMap")
    assert ObjectRef("ConfigMap", shipped["metadata"]["name"]) in references(job)
    assert parse_dependency(shipped).name == shipped["metadata"]["name"]


def test_optional_references_are_left_out_of_what_a_cluster_must_have() -> None:
    pod = {
        "spec": {
            "volumes": [{"name": "a", "configMap": {"name": "maybe", "optional": True}}],
            "containers": [{"name": "c", "image": "x", "envFrom": [{"secretRef": {"name": "must"}}]}],
        }
    }
    doc = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"tasks": [{"name": "a", "replicas": 1, "template": pod}]},
    }
    job = _job(doc)
    assert references(job) == (ObjectRef("ConfigMap", "maybe"), ObjectRef("Secret", "must"))
    assert references(job, required_only=True) == (ObjectRef("Secret", "must"),)
