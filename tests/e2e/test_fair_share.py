"""Global fair share through the CLI: one cluster of 64 GPUs, queues a (weight 3) and b (weight 1)."""

from __future__ import annotations

import pytest

from tests.e2e.harness import System, sim_cluster, wait_for

pytestmark = pytest.mark.e2e

QUEUES = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: a}
spec: {weight: 3}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: b}
spec: {weight: 1}
"""

JOB = """
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: %(queue)s-%(i)02d}
spec:
  queue: %(queue)s
  tasks:
  - name: t
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1", nvidia.com/gpu: "8"}}}]
"""


def gpus(queue: dict[str, object]) -> str:
    alloc = queue["allocated"]
    assert isinstance(alloc, dict)
    return str(alloc.get("nvidia.com/gpu", "0"))


def test_three_to_one_weights_split_64_gpus_48_16(system: System) -> None:
    system.start_hub()
    path = system.tmp / "work.yaml"
    path.write_text(QUEUES + "".join(JOB % {"queue": q, "i": i} for q in "ab" for i in range(20)))
    system.cli("apply", "-f", str(path))
    # The cluster joins after all 40 jobs wait, so one admission cycle sees both queues' demand.
    system.start_agent("gpu", sim_cluster("gpu", nodes=8, gpus=8))
    queues = wait_for(
        lambda: (
            (qs := {q["name"]: q for q in system.get_json("queues")})
            and qs["a"]["runningJobs"] + qs["b"]["runningJobs"] == 8
            # the queue figures follow the admissions in the cycle's second transaction
            and qs["a"]["deserved"].get("nvidia.com/gpu")
            and qs
        ),
        60,
        "8 jobs admitted",
        system,
    )
    assert (gpus(queues["a"]), gpus(queues["b"])) == ("48", "16")
    assert (queues["a"]["runningJobs"], queues["b"]["runningJobs"]) == (6, 2)
    assert (queues["a"]["pendingJobs"], queues["b"]["pendingJobs"]) == (14, 18)
    assert queues["a"]["deserved"].get("nvidia.com/gpu") == "48"
    assert queues["b"]["deserved"].get("nvidia.com/gpu") == "16"
    waiting = next(j for j in system.get_json("jobs") if j["bindingPhase"] == "Suspended")
    assert waiting["reason"]  # written with the queue figures
    described = system.cli("describe", "job", waiting["name"]).stdout
    assert waiting["reason"].split(":")[0] in described
