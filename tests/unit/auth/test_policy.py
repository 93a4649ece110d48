"""The role rules, as a table: role x action x queue -> allowed, and what a denial says."""

from __future__ import annotations

import pytest

from vglobal.hub.auth.authenticator import OPEN, cluster_principal
from vglobal.hub.auth.methods import METHODS, is_public
from vglobal.hub.auth.policy import Action, Grant, Principal, Role, decide, may

SUBMITTER_A = Principal("alice", (Grant(Role.submitter, queues=("team-a*",)),))
VIEWER = Principal("vic", (Grant(Role.viewer),))
OPERATOR = Principal("olga", (Grant(Role.operator),))
ADMIN = Principal("ada", (Grant(Role.admin),))


@pytest.mark.parametrize(
    ("who", "action", "queue", "allowed"),
    [
        (SUBMITTER_A, Action.submit_jobs, "team-a", True),
        (SUBMITTER_A, Action.submit_jobs, "team-a-gpu", True),
        (SUBMITTER_A, Action.submit_jobs, "team-b", False),
        (SUBMITTER_A, Action.cancel_jobs, "team-b", False),
        (SUBMITTER_A, Action.read_jobs, "team-b", False),
        (SUBMITTER_A, Action.read_queues, "team-a", True),
        (SUBMITTER_A, Action.manage_queues, "team-a", False),
        (SUBMITTER_A, Action.read_clusters, None, True),
        (VIEWER, Action.read_jobs, "anything", True),
        (VIEWER, Action.cancel_jobs, "anything", False),
        (VIEWER, Action.manage_clusters, None, False),
        (OPERATOR, Action.delete_clusters, None, False),  # removing a cluster is an admin's
        (ADMIN, Action.delete_clusters, None, True),
        (OPERATOR, Action.manage_queues, "x", True),
        (OPERATOR, Action.manage_clusters, None, True),
        (OPERATOR, Action.read_jobs, "x", True),
        (OPERATOR, Action.submit_jobs, "x", False),
        (OPERATOR, Action.cancel_jobs, "x", False),
        (ADMIN, Action.cancel_jobs, "x", True),
        (ADMIN, Action.manage_priority_classes, None, True),
        (ADMIN, Action.connect_agent, None, False),
    ],
)
def test_role_table(who: Principal, action: Action, queue: str | None, allowed: bool) -> None:
    assert may(who, action, queue=queue) is allowed


def test_a_denial_names_the_principal_its_role_and_the_queue() -> None:
    said = decide(SUBMITTER_A, Action.submit_jobs, queue="team-b")
    assert said == 'user "alice" (submitter on queues team-a*) may not submit jobs in queue "team-b"'
    assert (
        decide(VIEWER, Action.cancel_jobs, queue="q")
        == 'user "vic" (viewer) may not cancel jobs in queue "q"'
    )
    assert decide(Principal("nobody", ()), Action.read_jobs) == 'user "nobody" (no role) may not read jobs'


def test_agents_speak_only_for_their_cluster() -> None:
    east = cluster_principal("gpu-east")
    assert may(east, Action.connect_agent, cluster="gpu-east")
    assert decide(east, Action.connect_agent, cluster="gpu-west") == (
        'cluster "gpu-east" (agent of gpu-east) may not connect as the agent of cluster "gpu-west"'
    )
    assert not may(east, Action.read_jobs, queue="q")
    assert may(OPEN, Action.connect_agent, cluster="anything") and may(OPEN, Action.cancel_jobs, queue="q")


def test_the_coarse_check_asks_for_any_queue() -> None:
    # Without a queue the question is "on some queue": a scoped submitter may call SubmitJob at all.
    assert may(SUBMITTER_A, Action.submit_jobs)
    assert not may(VIEWER, Action.submit_jobs)


def test_every_rpc_of_the_api_has_a_rule_and_probes_are_public() -> None:
    from vglobal.api.v1 import (
        agent_pb2,
        clusters_pb2,
        cronjobs_pb2,
        hyperjobs_pb2,
        jobflows_pb2,
        jobs_pb2,
        objects_pb2,
        queues_pb2,
    )

    modules = (
        agent_pb2,
        clusters_pb2,
        cronjobs_pb2,
        hyperjobs_pb2,
        jobflows_pb2,
        jobs_pb2,
        objects_pb2,
        queues_pb2,
    )
    rpcs = {
        f"/{service.full_name}/{method.name}"
        for module in modules
        for service in module.DESCRIPTOR.services_by_name.values()
        for method in service.methods
    }
    assert rpcs == set(METHODS)
    assert is_public("/grpc.health.v1.Health/Check") and is_public("/grpc.reflection.v1.ServerReflection/x")
    assert not any(is_public(m) for m in METHODS)


def test_everywhere_tells_when_a_list_needs_no_queue_filter() -> None:
    from vglobal.hub.auth.policy import everywhere

    assert everywhere(VIEWER, Action.read_jobs) and everywhere(ADMIN, Action.read_jobs)
    assert not everywhere(SUBMITTER_A, Action.read_jobs)
    both = Principal("x", (Grant(Role.submitter, queues=("a",)), Grant(Role.viewer)))
    assert everywhere(both, Action.read_jobs) and not everywhere(both, Action.submit_jobs)


def test_configmaps_and_secrets_are_read_by_viewers_and_managed_by_submitters_not_agents() -> None:
    assert may(VIEWER, Action.read_objects) and not may(VIEWER, Action.manage_objects)
    submitter = Principal("alice", (Grant(Role.submitter, queues=("team-a",)),))
    assert may(submitter, Action.manage_objects)
    agent = Principal("east", (Grant(Role.agent, clusters=("east",)),), kind="cluster")
    assert not may(agent, Action.read_objects) and not may(agent, Action.manage_objects)
