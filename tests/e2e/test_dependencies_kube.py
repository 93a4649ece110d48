"""A job's ConfigMap and Secret travel with it (emulated Kubernetes clusters, the kube backend):
applied once at the hub, both are created in the cluster that runs the job before its pods, and
again in the cluster a failover moves it to; a change at the hub reaches the running copy; the
Secret's value appears in no log, no table, no answer."""

from __future__ import annotations

import base64
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tests.e2e.harness import System, wait_for
from tests.kubeapi import EmulatorProcess
from tests.kubeapi.handles import api_client
from vglobal.hub.secret_box import generate_key
from vglobal.store.tables import metadata

pytestmark = pytest.mark.e2e

VALUE = "s3cr3t-value-never-shown"
OBJECTS_AND_JOB = f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: scripts}}
data: {{run.py: "print('v1')"}}
---
apiVersion: v1
kind: Secret
metadata: {{name: creds}}
stringData: {{token: {VALUE}}}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: trainer}}
spec:
  minAvailable: 1
  tasks:
  - name: main
    replicas: 1
    template:
      spec:
        volumes: [{{name: code, configMap: {{name: scripts}}}}]
        containers:
        - name: app
          image: x
          resources: {{requests: {{cpu: "1"}}}}
          volumeMounts: [{{name: code, mountPath: /code}}]
          env: [{{name: TOKEN, valueFrom: {{secretKeyRef: {{name: creds, key: token}}}}}}]
"""


NEEDS = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: needs-data}
spec:
  minAvailable: 1
  tasks:
  - name: main
    replicas: 1
    template:
      spec:
        volumes:
        - {name: data, persistentVolumeClaim: {claimName: data}}
        - {name: extra, configMap: {name: maybe, optional: true}}
        containers:
        - name: app
          image: x
          resources: {requests: {cpu: "1"}}
          envFrom: [{configMapRef: {name: site-config}}]
"""
CLAIM = {
    "accessModes": ["ReadWriteOnce"],
    "resources": {"requests": {"storage": "1Gi"}},
    "volumeName": "pv-1",
}


def create(emu: EmulatorProcess, kind: str, body: dict[str, Any]) -> None:
    from kubernetes import client

    api = api_client(emu.kubeconfig)
    try:
        core = client.CoreV1Api(api)
        if kind == "ConfigMap":
            core.create_namespaced_config_map("default", body)
        else:
            core.create_namespaced_persistent_volume_claim("default", body)
    finally:
        api.close()


@pytest.fixture
def emulators(tmp_path: Path) -> Iterator[dict[str, EmulatorProcess]]:
    started: dict[str, EmulatorProcess] = {}
    try:
        for name in ("kube-a", "kube-b"):
            started[name] = EmulatorProcess(tmp_path / f"{name}.kubeconfig", "--name", name, "--nodes", "2")
        yield started
    finally:
        for e in started.values():
            e.stop()


def read(emu: EmulatorProcess, kind: str, name: str) -> dict[str, Any] | None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    api = api_client(emu.kubeconfig)
    try:
        core = client.CoreV1Api(api)
        call = core.read_namespaced_secret if kind == "Secret" else core.read_namespaced_config_map
        out: dict[str, Any] = api.sanitize_for_serialization(call(name, "default"))
        return out
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    finally:
        api.close()


def created_before_the_pods(emu: EmulatorProcess) -> dict[str, int]:
    """How many configmaps and secrets the cluster created before its first pod, and after."""
    creates = [r for r in emu.requests(verb="create") if r["code"] == 201]
    first_pod = min(r["seq"] for r in creates if r["resource"] == "pods")
    out = {"configmaps": 0, "secrets": 0, "later": 0}
    for r in creates:
        if r["resource"] in ("configmaps", "secrets"):
            out[r["resource"] if r["seq"] < first_pod else "later"] += 1
    return out


def test_a_jobs_configmap_and_secret_go_where_it_runs_and_follow_a_failover(
    system: System, emulators: dict[str, EmulatorProcess], tmp_path: Path
) -> None:
    keys = tmp_path / "secret.keys"
    keys.write_text(generate_key() + "\n")
    system.start_hub(
        "--cluster-timeout",
        "2s",
        "--failover-after",
        "2s",
        "--exclude-for",
        "1s",
        "--secret-keys-file",
        str(keys),
    )
    a, b = emulators["kube-a"], emulators["kube-b"]
    system.start_kube_agent("a", a.kubeconfig, "--lease-duration", "0")
    sdk = system.client()
    wait_for(lambda: len(sdk.list_clusters()) == 1, 60, "kube-a registered", system)
    out = system.apply_text("trainer", OBJECTS_AND_JOB).stdout
    assert "configmap/default/scripts created" in out and "secret/default/creds created" in out
    wait_for(lambda: sdk.get_job("trainer").phase == "Running", 60, "trainer running on kube-a", system)
    assert sdk.get_job("trainer").cluster == "kube-a"
    secret = read(a, "Secret", "creds")
    assert secret is not None and base64.b64decode(secret["data"]["token"]).decode() == VALUE
    assert (read(a, "ConfigMap", "scripts") or {}).get("data") == {"run.py": "print('v1')"}
    assert created_before_the_pods(a) == {"configmaps": 2, "secrets": 1, "later": 0}  # owner, scripts

    refused = system.cli("delete", "secret", "creds", check=False)
    assert refused.returncode != 0 and "used by running jobs: default/trainer" in refused.stderr

    system.start_kube_agent("b", b.kubeconfig, "--lease-duration", "0")
    wait_for(lambda: len(sdk.list_clusters()) == 2, 60, "kube-b registered", system)
    system.kill("agent-a", signal.SIGKILL)
    wait_for(
        lambda: (j := sdk.get_job("trainer")).cluster == "kube-b" and j.phase == "Running",
        90,
        "trainer running on kube-b",
        system,
    )
    assert created_before_the_pods(b) == {"configmaps": 2, "secrets": 1, "later": 0}
    moved = read(b, "Secret", "creds")
    assert moved is not None and base64.b64decode(moved["data"]["token"]).decode() == VALUE
    assert [o["name"] for o in moved["metadata"]["ownerReferences"]] == ["trainer-vglobal"]

    system.apply_text(
        "scripts-v2", OBJECTS_AND_JOB.split("---", maxsplit=1)[0].replace("print('v1')", "print('v2')")
    )
    wait_for(
        lambda: (read(b, "ConfigMap", "scripts") or {}).get("data") == {"run.py": "print('v2')"},
        30,
        "the running copy updated",
        system,
    )

    # What the hub does not hold is looked for in the cluster: missing there, the job is handed back
    # naming it (and the cluster passed over); there, the job runs.
    system.apply_text("needs", NEEDS)
    wait_for(
        lambda: any(
            "cluster kube-b lacks configmap/site-config, persistentvolumeclaim/data in namespace default"
            in e.message
            for e in sdk.explain_job("needs-data").events
        ),
        60,
        "needs-data handed back",
        system,
    )
    create(b, "ConfigMap", {"metadata": {"name": "site-config"}, "data": {"k": "v"}})
    create(b, "PersistentVolumeClaim", {"metadata": {"name": "data"}, "spec": CLAIM})
    wait_for(lambda: sdk.get_job("needs-data").phase == "Running", 60, "needs-data running on kube-b", system)

    answers = [
        system.cli("get", "secrets", "-o", "json").stdout,
        system.cli("describe", "secret", "creds").stdout,
        system.cli("describe", "job", "trainer").stdout,
        system.cli("get", "jobs", "-o", "yaml").stdout,
    ]
    assert "token" in answers[1] and f"{len(VALUE)} bytes" in answers[1]
    shown = json.loads(answers[0])
    assert [(s["name"], s["data"]) for s in shown] == [("creds", 1)]
    encoded = base64.b64encode(VALUE.encode()).decode()
    engine = sa.create_engine(system.database_url)
    try:
        with engine.connect() as conn:
            dump = "\n".join(
                str(r[0])
                for t in metadata.tables
                for r in conn.execute(sa.text(f"SELECT CAST(x AS text) FROM {t} x"))
            )
    finally:
        engine.dispose()
    logs = [system.whole_log(n) for n in ("hub", "agent-a", "agent-b")]
    for text in [*answers, dump, *logs]:
        assert VALUE not in text and encoded not in text
    sdk.close()
