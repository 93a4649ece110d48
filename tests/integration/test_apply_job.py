"""ApplyJob through the real gRPC API on a real Postgres (no cluster: every job waits): a waiting
job takes a new manifest whole, server-side conflicts between field managers, and bad input
stores nothing."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from click.testing import CliRunner

from tests.integration.test_jobs_api import job
from vglobal.cli.main import cli
from vglobal.client import Client, VGlobalError
from vglobal.hub.server import Hub

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: %d
  template:
    spec:
      containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]
"""


def test_a_waiting_job_takes_the_new_manifest_whole(client: Client) -> None:
    first = client.apply_job(job(cpu="4"))
    assert first.result == "created" and first.job.spec_generation == 1
    assert client.apply_job(job(cpu="4")).result == "unchanged"
    got = client.apply_job(job(cpu="8"))
    assert got.result == "configured" and got.job.uid == first.job.uid
    assert got.job.spec_generation == 2 and got.job.observed_generation == 0
    # The request is made of the new manifest: 2 cpu + 3 x 8 cpu.
    assert got.job.request.quantities["cpu"] == "26"
    events = client.explain_job("train", "team-a").events
    assert any(e.reason == "Configured" and "generation 2" in e.message for e in events)


def test_nothing_is_stored_for_bad_input_or_a_dry_run(client: Client) -> None:
    client.apply_job(job())
    with pytest.raises(VGlobalError) as err:
        client.apply_job(job(cpu="lots"))
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "invalid quantity" in err.value.message
    with pytest.raises(VGlobalError) as err:
        client.apply_job(job(queue="nowhere"))
    assert err.value.code == grpc.StatusCode.NOT_FOUND
    dry = client.apply_job(job(cpu="8"), dry_run=True)
    assert dry.result == "configured" and dry.job.spec_generation == 2
    live = client.get_job("train", "team-a")
    assert live.spec_generation == 1 and '"cpu": "4"' in live.manifest


def test_server_side_conflicts_name_the_field_and_its_manager(client: Client) -> None:
    client.apply_job(DEPLOYMENT % 2)
    assert client.scale_job("web", 5).result == "configured"
    with pytest.raises(VGlobalError) as err:
        client.apply_job(DEPLOYMENT % 2, server_side=True)
    assert err.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert 'Apply failed with 1 conflict: conflict with "vglobal-scale": .spec.replicas' in err.value.message
    assert client.get_job("web").spec_generation == 2
    # The same value is no conflict; forced, the field changes hands.
    assert client.apply_job(DEPLOYMENT % 5, server_side=True).result == "unchanged"
    forced = client.apply_job(DEPLOYMENT % 3, server_side=True, force_conflicts=True)
    assert forced.result == "configured" and '"replicas": 3' in forced.job.manifest
    with pytest.raises(VGlobalError) as err:
        client.scale_job("web", 2, task="main")
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "--task" in err.value.message


def test_the_cli_reports_server_side_conflicts_as_kubectl(hub: Hub, client: Client, tmp_path: Path) -> None:
    path = tmp_path / "web.yaml"
    path.write_text(DEPLOYMENT % 2)
    base = ["--hub", f"127.0.0.1:{hub.port}", "apply", "--server-side", "-f", str(path)]
    first = CliRunner().invoke(cli, base)
    assert "deployment.apps/default/web created" in first.stdout, first.output
    assert client.scale_job("web", 4).result == "configured"
    clash = CliRunner().invoke(cli, base)
    assert clash.exit_code == 1
    assert 'conflict with "vglobal-scale": .spec.replicas' in clash.stderr, clash.output
    forced = CliRunner().invoke(cli, [*base, "--force-conflicts"])
    assert "deployment.apps/default/web configured" in forced.stdout, forced.output
    assert client.get_job("web").spec_generation == 3
