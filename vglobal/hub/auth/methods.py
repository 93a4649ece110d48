"""What each RPC of the hub needs: the action it performs, and whether it changes anything (audit).

A method not listed here is refused to every caller but the open hub; Health and reflection need no
credentials, so probes and tools like grpcurl can ask what the hub serves.
"""

from __future__ import annotations

from dataclasses import dataclass

from vglobal.hub.auth.policy import Action


@dataclass(frozen=True)
class Rule:
    action: Action
    mutating: bool = False


def _service(name: str, rules: dict[str, Rule]) -> dict[str, Rule]:
    return {f"/vglobal.v1.{name}/{method}": rule for method, rule in rules.items()}


METHODS: dict[str, Rule] = {
    **_service(
        "JobService",
        {
            "SubmitJob": Rule(Action.submit_jobs, mutating=True),
            "SubmitJobs": Rule(Action.submit_jobs, mutating=True),
            "ApplyJob": Rule(Action.submit_jobs, mutating=True),
            "GetJob": Rule(Action.read_jobs),
            "ListJobs": Rule(Action.read_jobs),
            "CancelJob": Rule(Action.cancel_jobs, mutating=True),
            "DeleteJob": Rule(Action.delete_jobs, mutating=True),
            "ExplainJob": Rule(Action.read_jobs),
            "WatchJobs": Rule(Action.read_jobs),
            "SuspendJob": Rule(Action.cancel_jobs, mutating=True),
            "ResumeJob": Rule(Action.submit_jobs, mutating=True),
            "CountJobs": Rule(Action.read_jobs),
            "ListJobDispatches": Rule(Action.read_jobs),
            "StreamLogs": Rule(Action.read_logs),
            "CheckpointJob": Rule(Action.submit_jobs, mutating=True),
        },
    ),
    # A HyperJob acts as its children: the servicer checks their queue.
    **_service(
        "HyperJobService",
        {
            "GetHyperJob": Rule(Action.read_jobs),
            "ListHyperJobs": Rule(Action.read_jobs),
            "CancelHyperJob": Rule(Action.cancel_jobs, mutating=True),
            "DeleteHyperJob": Rule(Action.delete_jobs, mutating=True),
        },
    ),
    # CronJobs, JobTemplates and JobFlows act as the Jobs they make: the servicers check the queue
    # those Jobs go to (every queue of a JobFlow's templates).
    **_service(
        "CronJobService",
        {
            "ApplyCronJob": Rule(Action.submit_jobs, mutating=True),
            "GetCronJob": Rule(Action.read_jobs),
            "ListCronJobs": Rule(Action.read_jobs),
            "DeleteCronJob": Rule(Action.delete_jobs, mutating=True),
            "SuspendCronJob": Rule(Action.submit_jobs, mutating=True),
            "ResumeCronJob": Rule(Action.submit_jobs, mutating=True),
            "CreateJobFromCronJob": Rule(Action.submit_jobs, mutating=True),
        },
    ),
    **_service(
        "JobFlowService",
        {
            "ApplyJobTemplate": Rule(Action.submit_jobs, mutating=True),
            "GetJobTemplate": Rule(Action.read_jobs),
            "ListJobTemplates": Rule(Action.read_jobs),
            "DeleteJobTemplate": Rule(Action.delete_jobs, mutating=True),
            "ApplyJobFlow": Rule(Action.submit_jobs, mutating=True),
            "GetJobFlow": Rule(Action.read_jobs),
            "ListJobFlows": Rule(Action.read_jobs),
            "DeleteJobFlow": Rule(Action.delete_jobs, mutating=True),
        },
    ),
    **_service(
        "QueueService",
        {
            # A tenant's sub-queues too: the handler checks where (hub/tenant_queues.py).
            "ApplyQueue": Rule(Action.manage_subqueues, mutating=True),
            "GetQueue": Rule(Action.read_queues),
            "ListQueues": Rule(Action.read_queues),
            "DeleteQueue": Rule(Action.manage_subqueues, mutating=True),
            "OpenQueue": Rule(Action.manage_queues, mutating=True),
            "CloseQueue": Rule(Action.manage_queues, mutating=True),
            "ApplyPriorityClass": Rule(Action.manage_priority_classes, mutating=True),
            "ListPriorityClasses": Rule(Action.read_priority_classes),
            "DeletePriorityClass": Rule(Action.manage_priority_classes, mutating=True),
            "GetQueueHistory": Rule(Action.read_queues),
            "ApplyNamespace": Rule(Action.manage_namespaces, mutating=True),
            "ListNamespaces": Rule(Action.read_namespaces),
            "DeleteNamespace": Rule(Action.manage_namespaces, mutating=True),
        },
    ),
    **_service(
        "ClusterService",
        {
            "ListClusters": Rule(Action.read_clusters),
            "GetCluster": Rule(Action.read_clusters),
            "CordonCluster": Rule(Action.manage_clusters, mutating=True),
            "UncordonCluster": Rule(Action.manage_clusters, mutating=True),
            "DrainCluster": Rule(Action.manage_clusters, mutating=True),
            "DeleteCluster": Rule(Action.delete_clusters, mutating=True),
        },
    ),
    # A Secret's values go to no caller: only to the agent of a cluster running a job using it.
    **_service(
        "ObjectService",
        {
            "ApplyObject": Rule(Action.manage_objects, mutating=True),
            "GetObject": Rule(Action.read_objects),
            "ListObjects": Rule(Action.read_objects),
            "DeleteObject": Rule(Action.manage_objects, mutating=True),
        },
    ),
    **_service("AgentService", {"Connect": Rule(Action.connect_agent, mutating=True)}),
}

AGENT_CONNECT = "/vglobal.v1.AgentService/Connect"
PUBLIC_SERVICES = (
    "/grpc.health.v1.Health/",
    "/grpc.reflection.v1alpha.ServerReflection/",
    "/grpc.reflection.v1.ServerReflection/",
)


def is_public(method: str) -> bool:
    return method.startswith(PUBLIC_SERVICES)
