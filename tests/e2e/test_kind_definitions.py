"""A kind vglobal has no code for, run through a KindDefinition (tests/fixtures/kinds): hub and
agents given ``--kinds-file`` take Project CodeFlare's AppWrapper sample (unchanged but for its name,
cluster and the time its pod runs) as a job of its defined gang; on the API emulator the agent writes
it, the emulated AppWrapper controller (tests/kubeapi/ctl_appwrapper.py) wraps its Job, whose pod the
agent binds, and the run ends as the status rules say; on a simulated cluster it runs as its pods.
A kind with no definition is refused, naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.e2e.harness import System, wait_for
from tests.e2e.test_kube_training_kinds import emulator, obj
from tests.e2e.test_training_kinds_sim import CLUSTER

pytestmark = pytest.mark.e2e
KINDS = Path(__file__).parents[1] / "fixtures" / "kinds"
DEFINED = str(KINDS / "appwrapper.kinds.yaml")
QUEUE = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: user-queue}\nspec: {weight: 1}\n"
WIDGET = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {}\n"


def wrapped(name: str, cluster: str) -> str:
    (doc,) = yaml.safe_load_all((KINDS / "wrapped-job.yaml").read_text())
    doc["metadata"]["name"] = name
    doc["metadata"]["annotations"]["vglobal.io/clusters"] = cluster
    pod = doc["spec"]["components"][0]["template"]["spec"]["template"]
    pod["metadata"] = {"annotations": {"vglobal.io/sim-duration": "2s"}}
    return yaml.safe_dump(doc)


def test_an_appwrapper_runs_by_its_definition_on_a_kube_cluster_and_a_simulated_one(
    system: System, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emu = emulator(tmp_path, "kube-a")
    try:
        system.start_hub("--kinds-file", DEFINED)
        system.start_kube_agent("kube-a", emu.kubeconfig, "--lease-duration", "0", "--kinds-file", DEFINED)
        system.start_agent("sim", CLUSTER % {"name": "sim", "nodes": 1}, "--kinds-file", DEFINED)
        with system.client() as c:
            wait_for(lambda: len(c.list_clusters()) == 2, 60, "agents registered", system)
            kube = next(x for x in c.list_clusters() if x.name == "kube-a")
            assert kube.labels["workloads.vglobal.io/appwrappers.workload.codeflare.dev"] == "served"
            text = "---\n".join([QUEUE, wrapped("aw-kube", "kube-a"), wrapped("aw-sim", "sim")])
            applied = system.apply_text("aw", text).stdout
            assert "appwrapper.workload.codeflare.dev/default/aw-kube created" in applied, applied
            running = wait_for(
                lambda: (j := c.get_job("aw-kube")).phase == "Running" and j, 60, "aw-kube running", system
            )
            got = obj(
                emu.kubeconfig, ("workload.codeflare.dev", "v1beta2", "appwrappers"), "default", "aw-kube"
            )
            assert got is not None and got["metadata"]["labels"]["vglobal.io/job-uid"] == running.uid
            for name, cluster in (("aw-kube", "kube-a"), ("aw-sim", "sim")):
                done = wait_for(
                    lambda n=name: (j := c.get_job(n)).phase in ("Completed", "Failed") and j,
                    90,
                    f"{name} ends",
                    system,
                )
                assert (done.phase, done.cluster, done.queue) == ("Completed", cluster, "user-queue"), done
        monkeypatch.setenv("VGLOBAL_KINDS_FILE", DEFINED)  # the CLI reads the gang as the hub does
        described = system.cli("describe", "job", "aw-sim").stdout
        assert "Gang (derived from the AppWrapper)" in described and "every pod (the kind's" in described
        monkeypatch.delenv("VGLOBAL_KINDS_FILE")
        refused = system.apply_text("widget", WIDGET, check=False)
        assert refused.returncode != 0 and 'unknown kind "Widget"' in refused.stderr, refused.stderr
    finally:
        emu.stop()
