"""A workload's checkpoints reach the hub: the pod's vglobal.io/checkpointed-at annotation (set by
the workload on its own pod) and a Checkpointed Event about the pod or the job, the latest time per
job."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from tests.kube.harness import Agent, Cluster, dispatch, job_yaml


def _reported(agent: Agent, uid: str) -> float:
    """The checkpoint time of the agent's last status of the job (0: none)."""
    sent = [m.status for m in agent.out if m.WhichOneof("body") == "status" and m.status.job_uid == uid]
    return sent[-1].checkpointed_at if sent else 0.0


def test_a_pods_checkpoint_annotation_and_event_are_reported(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str
) -> None:
    agent = make_agent()
    agent.send(dispatch("uid-ck", 1, job_yaml("ck", ns, replicas=2, duration=None)))
    agent.until(lambda: agent.run("uid-ck").phase == "Running", 20, "ck running")
    assert _reported(agent, "uid-ck") == 0.0
    first = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=30)
    pod = cluster.pods(ns)[1].metadata.name
    patch = {"metadata": {"annotations": {"vglobal.io/checkpointed-at": first.isoformat().replace("+00:00", "Z")}}}
    cluster.core.patch_namespaced_pod(pod, ns, patch)
    agent.until(lambda: _reported(agent, "uid-ck") == first.timestamp(), 15, "the annotation reported")
    # a later Checkpointed Event about the other pod: the job's latest wins
    later = first + timedelta(seconds=20)
    other = cluster.pods(ns)[0].metadata.name
    event = {
        "metadata": {"name": f"{other}.ck", "namespace": ns},
        "involvedObject": {"kind": "Pod", "name": other, "namespace": ns},
        "reason": "Checkpointed",
        "message": "step 1200 saved",
        "type": "Normal",
        "lastTimestamp": later.isoformat().replace("+00:00", "Z"),
    }
    cluster.core.create_namespaced_event(ns, event)
    agent.until(lambda: _reported(agent, "uid-ck") == later.timestamp(), 15, "the event reported")
    # and one about the job itself, as a training operator posts it
    last = later + timedelta(seconds=5)
    event["metadata"] = {"name": "ck.job", "namespace": ns}
    event["involvedObject"] = {"kind": "Job", "apiVersion": "batch.volcano.sh/v1alpha1", "name": "ck", "namespace": ns}
    event["lastTimestamp"] = last.isoformat().replace("+00:00", "Z")
    cluster.core.create_namespaced_event(ns, event)
    agent.until(lambda: _reported(agent, "uid-ck") == last.timestamp(), 15, "the job's event reported")
    # an older annotation changes nothing
    patch["metadata"]["annotations"]["vglobal.io/checkpointed-at"] = "2020-01-01T00:00:00Z"
    cluster.core.patch_namespaced_pod(pod, ns, patch)
    for _ in range(5):
        agent.step()
    assert _reported(agent, "uid-ck") == last.timestamp()
