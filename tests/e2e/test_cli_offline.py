"""CLI habits that need no hub, run as the `vglobal` console script: certs init's defaults and
repeated --hub-host, trace files that are missing, what `sim run` skips, `apply --dry-run=client`."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from cryptography import x509

from tests.e2e.cli_run import vglobal

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_certs_init_writes_outside_the_checkout_and_names_every_hub_host(tmp_path: Path) -> None:
    config = tmp_path / "config"
    res = vglobal(
        "certs", "init", "--hub-host", "hub.example.com", "--hub-host", "10.1.2.3", "--cluster", "gpu-east",
        env={"XDG_CONFIG_HOME": str(config)},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    certs = config / "vglobal" / "certs"
    assert f"to {certs}" in res.stdout
    assert (certs / "hub.key").stat().st_mode & 0o077 == 0
    cert = x509.load_pem_x509_certificate((certs / "hub.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "hub.example.com" in sans.get_values_for_type(x509.DNSName)
    assert ipaddress.ip_address("10.1.2.3") in sans.get_values_for_type(x509.IPAddress)
    # A checkout's certs/ is ignored by git, should a user write there with --dir certs.
    assert "certs/" in (ROOT / ".gitignore").read_text().splitlines()


def test_sim_openb_without_the_trace_says_where_it_comes_from(tmp_path: Path) -> None:
    res = vglobal(
        "sim", "openb", "--policy", "fgd",
        "--nodes", str(tmp_path / "openb_node_list_gpu_node.csv"), "--pods", str(tmp_path / "pods.csv"),
    )  # fmt: skip
    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    assert "openb_node_list_gpu_node.csv: no such file" in res.stderr
    assert "Alibaba" in res.stderr and "github.com/alibaba/clusterdata" in res.stderr


def test_sim_run_of_the_examples_says_which_kinds_it_skipped() -> None:
    res = vglobal(
        "sim", "run", "--cluster", str(ROOT / "clusters/gpu-east.yaml"),
        "--cluster", str(ROOT / "clusters/gpu-west.yaml"), "--cluster", str(ROOT / "clusters/cpu-central.yaml"),
        "--jobs", str(ROOT / "examples"),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "skipped 6 objects" in res.stderr
    assert "CronJob default/eval-latest" in res.stderr and "JobFlow default/bakeoff" in res.stderr


BAD_JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: typo}
spec:
  maxRetries: 2
  tasks:
  - name: w
    replica: 3
    template:
      metadata: {labels: {any: label}, annotations: {any/annotation: "x"}}
      spec:
        containers: [{name: c, image: x, resourses: {requests: {cpu: "1"}}}]
"""


def test_apply_dry_run_client_checks_here_and_names_each_unknown_field(tmp_path: Path) -> None:
    # No hub listens at this address: a client dry run sends nothing.
    res = vglobal("--hub", "127.0.0.1:9", "apply", "--dry-run=client", "-f", "-", stdin=BAD_JOB)
    assert res.returncode == 1
    for path in (
        "spec.maxRetries",
        "spec.tasks[0].replica",
        "spec.tasks[0].template.spec.containers[0].resourses",
    ):
        assert f"{path}: unknown field" in res.stderr
    assert "metadata.labels" not in res.stderr and "annotations" not in res.stderr  # free maps
    good = (
        BAD_JOB.replace("maxRetries", "maxRetry")
        .replace("replica:", "replicas:")
        .replace("resourses", "resources")
    )
    res = vglobal("--hub", "127.0.0.1:9", "apply", "--dry-run=client", "-f", "-", stdin=good)
    assert res.returncode == 0, res.stderr
    assert "job.batch.volcano.sh/default/typo created (dry run)" in res.stdout
    # --validate=ignore takes the unknown fields; the tasks still need a pod.
    res = vglobal(
        "--hub", "127.0.0.1:9", "apply", "--dry-run=client", "--validate=ignore", "-f", "-", stdin=BAD_JOB
    )
    assert res.returncode == 1
    assert "spec.tasks: the tasks have 0 replicas in all" in res.stderr
    assert "unknown field" not in res.stderr
