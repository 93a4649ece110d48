"""A job's checkpoints through hub and agent processes: the sim agent reports one every
vglobal.io/checkpoint-interval of the run, `describe job` shows them, its owner declares one too
(SDK and CLI; bad input refused naming the field, nothing kept), and a reclaim under --reclaim-rule worth says
the victim loses only the work since its last checkpoint."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from tests.e2e.harness import System, sim_cluster, wait_for
from vglobal.api.v1 import jobs_pb2
from vglobal.cli.main import cli
from vglobal.sdk import VGlobalError

pytestmark = pytest.mark.e2e

QUEUES = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: a}
spec: {weight: 1}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: b}
spec: {weight: 1}
"""


def job(name: str, queue: str, gpus: int, annotations: str = "") -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, annotations: {{vglobal.io/sim-duration: 10m{annotations}}}}}
spec:
  queue: {queue}
  minAvailable: 1
  tasks:
  - name: w
    replicas: 1
    template:
      spec: {{containers: [{{name: w, image: x, resources: {{limits: {{nvidia.com/gpu: "{gpus}"}}}}}}]}}
"""


def _events(c: object, name: str, reason: str) -> list[jobs_pb2.JobEvent]:
    return [e for e in c.explain_job(name).events if e.reason == reason]  # type: ignore[attr-defined]


def _checkpoint_times(c: object, name: str) -> list[datetime]:
    """The checkpoint times the job's Checkpointed events name."""
    return [
        datetime.fromisoformat(e.message.split("checkpoint at ")[1].split(" ")[0])
        for e in _events(c, name, "Checkpointed")
    ]


def test_a_checkpointed_job_is_reclaimed_losing_only_the_work_since(system: System) -> None:
    system.start_hub("--reclaim-rule", "worth")
    system.start_agent("c", sim_cluster("c", 1))
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "c registered", system)
    system.apply_text("a0", QUEUES + "---" + job("a0", "a", 8, ", vglobal.io/checkpoint-interval: 1s"))
    with system.client() as c:
        wait_for(lambda: len(_events(c, "a0", "Checkpointed")) >= 2, 60, "a0's checkpoints", system)
        out = system.cli("describe", "job", "a0").stdout
        assert "Checkpointed" in out and "reported by cluster c" in out, out

        # its owner's declaration: a time in the future is refused, naming the field
        with pytest.raises(VGlobalError, match=r"at: .* is in the future") as bad:
            c.checkpoint_job("a0", at=datetime.now(UTC) + timedelta(hours=1))
        assert bad.value.code.name == "INVALID_ARGUMENT"
        assert not any("declared by" in e.message for e in _events(c, "a0", "Checkpointed"))
        # and with the CLI (run in this process: a process per call costs a second of CPU)
        res = CliRunner().invoke(cli, ["--hub", system.target, "checkpoint", "a0"])
        assert res.exit_code == 0 and "a0 checkpointed" in res.stdout, res.output
        assert any("declared by" in e.message for e in _events(c, "a0", "Checkpointed"))
        res = CliRunner().invoke(cli, ["--hub", system.target, "checkpoint", "a0", "--at", "soon"])
        assert res.exit_code == 1 and "--at: 'soon' is not an RFC 3339 time" in res.output, res.output

        # queue b, below its share, reclaims a0 (a holds twice its share); a0 loses at most a
        # second or so of work, far less than b's gain
        system.apply_text("b0", job("b0", "b", 4))
        wait_for(lambda: _events(c, "a0", "Reclaimed"), 60, "a0 reclaimed", system)
        reclaimed = _events(c, "a0", "Reclaimed")[0]
        said = reclaimed.message
        lost = int(said.split("it loses ")[1].split(" s of work")[0])
        since = datetime.fromisoformat(said.split("since its checkpoint at ")[1])
        # the run since the last checkpoint it reported: the reclaim reads it as it is written,
        # and the stopped run's later reports are not kept (b0 runs 10 minutes: a0 does not run
        # again here, so every Checkpointed event is of the run reclaimed)
        times = _checkpoint_times(c, "a0")
        assert since == max(times) and since > min(times), (said, times)
        assert lost <= (reclaimed.time.ToDatetime(tzinfo=UTC) - since).total_seconds() + 1, said
