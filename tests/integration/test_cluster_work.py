"""GetCluster's work (what runs on each node) through a TLS hub with roles: pods placed by the
agent's reports, grouped by node and job, and only the jobs of queues the caller may read."""

from __future__ import annotations

from tests.integration.agent_driver import ScriptedAgent
from tests.integration.polling import wait
from tests.integration.secure_hub import SecureHub
from tests.integration.test_job_queries import teams
from vglobal.api.v1 import clusters_pb2

__all__ = ["teams"]


def work(c: clusters_pb2.Cluster) -> dict[str, list[tuple[str, str, int]]]:
    return {w.node: [(j.queue, j.name, len(j.pods)) for j in w.jobs] for w in c.work}


def test_get_cluster_says_what_runs_on_each_node_to_those_who_may_read_the_jobs(teams: SecureHub) -> None:
    agent = ScriptedAgent(
        teams.agent_target, "gpu-east", nodes=2, channel=teams.agent_dial("gpu-east").channel()
    )
    agent.connect()
    try:
        where = {"a1": "gpu-east-0", "a2": "gpu-east-1", "b1": "gpu-east-0"}
        runs: dict[str, tuple[str, int]] = {}
        while len(runs) < 3:
            d = agent.expect("dispatch").dispatch
            name = next(n for n in where if f"name: {n}" in d.manifest or f'"name": "{n}"' in d.manifest)
            runs[name] = (d.job_uid, d.generation)
            agent.accept(d.job_uid, d.generation)
            agent.status(d.job_uid, d.generation, "Running", node=where[name])
        with teams.client("ada") as ada:
            wait(lambda: {j.name: j.phase for j in ada.list_jobs()} == dict.fromkeys(where, "Running"),
                 timeout=20.0, what="the jobs running")  # fmt: skip
            # Pods whose report names no node yet hold none: a2 goes back to waiting for one.
            agent.status(*runs["a2"], "Running", pods=0)
            wait(
                lambda: not [p for p in ada.get_job("a2").placements if p.node],
                timeout=20.0,
                what="a2's pod off",
            )
            shown = work(ada.get_cluster("gpu-east"))
            assert shown == {"gpu-east-0": [("team-a", "a1", 1), ("team-b", "b1", 1)]}
            node = ada.get_cluster("gpu-east").work[0]
            assert list(node.jobs[0].pods) == [p.pod for p in ada.get_job("a1").placements]
            assert ada.list_clusters()[0].work == []  # GetCluster's only
        with teams.client("vera") as vera:  # a viewer of team-a* only
            assert work(vera.get_cluster("gpu-east")) == {"gpu-east-0": [("team-a", "a1", 1)]}
    finally:
        agent.close()
