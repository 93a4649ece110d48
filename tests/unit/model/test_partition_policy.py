"""A task's partitionPolicy: Volcano's webhook rules (each error naming its field), its defaults, the
PodGroup subGroupPolicy the controller makes of it and the subgroup ids the scheduler groups pods by.

Cases carry the Volcano test they come from (volcano-sh/volcano, paths under pkg/)."""

from __future__ import annotations

from typing import Any

import pytest

from vglobal.agent.controller import JobController
from vglobal.model.errors import ManifestError
from vglobal.model.job import parse_job
from vglobal.model.partition import (
    PARTITION_ID_LABEL,
    SubGroupPolicy,
    match_index,
    match_values,
    sub_job_gid,
    sub_job_id,
)


def job_doc(task: dict[str, Any], **spec: Any) -> dict[str, Any]:
    body = {
        "name": "task-1",
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox", "resources": {}}]}},
        **task,
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train"},
        "spec": {"tasks": [body], **spec},
    }


BAD = [
    # webhooks/admission/jobs/validate/admit_job_test.go TestValidateJobCreate "PartitionSize-lessThanZero"
    (
        "PartitionSize-lessThanZero",
        {"replicas": 8, "partitionPolicy": {"partitionSize": -1, "totalPartitions": 8}},
        {},
        "spec.tasks[0].partitionPolicy.partitionSize",
        "must be >= 1",
    ),
    # ... "TotalPartitions-lessThanZero"
    (
        "TotalPartitions-lessThanZero",
        {"replicas": 8, "partitionPolicy": {"partitionSize": 8, "totalPartitions": -1}},
        {},
        "spec.tasks[0].partitionPolicy.totalPartitions",
        "must be >= 1",
    ),
    # ... "task-with-invalid-PartitionPolicy" (replicas 8 != 2 x 3)
    (
        "task-with-invalid-PartitionPolicy",
        {"replicas": 8, "partitionPolicy": {"partitionSize": 3, "totalPartitions": 2}},
        {},
        "spec.tasks[0].replicas",
        "must equal totalPartitions x partitionSize (2 x 3 = 6)",
    ),
    # ... "job-with-invalid-NetworkTopology-and-PartitionPolicy" (the partition's part)
    (
        "job-with-invalid-NetworkTopology-and-PartitionPolicy",
        {
            "replicas": 8,
            "partitionPolicy": {
                "partitionSize": 4,
                "totalPartitions": 2,
                "networkTopology": {
                    "mode": "hard",
                    "highestTierAllowed": 1,
                    "highestTierName": "volcano.sh/hypernode",
                },
            },
        },
        {},
        "spec.tasks[0].partitionPolicy.networkTopology",
        "must not both be set",
    ),
    # validatePartitionPolicy: minAvailable must be minPartitions x partitionSize when both are set
    (
        "minAvailable-not-minPartitions-times-size",
        {
            "replicas": 8,
            "minAvailable": 5,
            "partitionPolicy": {"partitionSize": 4, "totalPartitions": 2, "minPartitions": 1},
        },
        {},
        "spec.tasks[0].minAvailable",
        "must equal minPartitions x partitionSize (1 x 4 = 4)",
    ),
    # CRD: totalPartitions and partitionSize are required (minimum 1), minPartitions minimum 0
    (
        "no-sizes",
        {"replicas": 4, "partitionPolicy": {}},
        {},
        "spec.tasks[0].partitionPolicy.totalPartitions",
        ">= 1",
    ),
    (
        "negative-minPartitions",
        {"replicas": 4, "partitionPolicy": {"partitionSize": 2, "totalPartitions": 2, "minPartitions": -1}},
        {},
        "spec.tasks[0].partitionPolicy.minPartitions",
        "must be >= 0",
    ),
    # a minPartitions above totalPartitions would make minAvailable exceed replicas (admit_job.go)
    (
        "minPartitions-above-total",
        {"replicas": 4, "partitionPolicy": {"partitionSize": 2, "totalPartitions": 2, "minPartitions": 3}},
        {},
        "spec.tasks[0].partitionPolicy.minPartitions",
        "more than the 2 totalPartitions",
    ),
    (
        "bad-partition-mode",
        {
            "replicas": 4,
            "partitionPolicy": {
                "partitionSize": 2,
                "totalPartitions": 2,
                "networkTopology": {"mode": "strict"},
            },
        },
        {},
        "spec.tasks[0].partitionPolicy.networkTopology.mode",
        'must be "hard" or "soft"',
    ),
    (
        "negative-partition-tier",
        {
            "replicas": 4,
            "partitionPolicy": {
                "partitionSize": 2,
                "totalPartitions": 2,
                "networkTopology": {"highestTierAllowed": -1},
            },
        },
        {},
        "spec.tasks[0].partitionPolicy.networkTopology.highestTierAllowed",
        "must be >= 0",
    ),
    (
        "partitionSize-as-text",
        {"replicas": 4, "partitionPolicy": {"partitionSize": "2", "totalPartitions": 2}},
        {},
        "spec.tasks[0].partitionPolicy.partitionSize",
        "must be an integer",
    ),
]


@pytest.mark.parametrize(("case", "task", "spec", "field", "message"), BAD, ids=[c[0] for c in BAD])
def test_bad_partition_policy_names_the_field(
    case: str, task: dict[str, Any], spec: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ManifestError) as err:
        parse_job(job_doc(task, **spec))
    found = dict(err.value.problems)
    assert field in found, err.value.problems
    assert message in found[field]


def test_valid_partition_policy() -> None:
    # admit_job_test.go "task-with-valid-NetworkTopology-and-PartitionPolicy"
    job = parse_job(
        job_doc(
            {
                "replicas": 8,
                "partitionPolicy": {
                    "partitionSize": 4,
                    "totalPartitions": 2,
                    "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
                },
            },
            minAvailable=1,
            networkTopology={"mode": "hard", "highestTierAllowed": 2},
        )
    )
    policy = job.tasks[0].partition_policy
    assert policy is not None
    assert (policy.total_partitions, policy.partition_size, policy.min_partitions) == (2, 4, 0)
    assert policy.network_topology is not None and policy.network_topology.highest_tier_allowed == 1


@pytest.mark.parametrize(
    ("replicas", "policy", "expected"),
    [
        # webhooks/admission/jobs/mutate/mutate_job_test.go TestMutateSpecPartitionPolicyDefaults:
        # "MinAvailable is set to MinPartitions * PartitionSize when PartitionPolicy exists"
        (9, {"totalPartitions": 3, "minPartitions": 2, "partitionSize": 3}, 6),
        # "MinAvailable falls back to Replicas when PartitionPolicy is set but MinPartitions is omitted"
        (4, {"totalPartitions": 2, "partitionSize": 2}, 4),
        # "MinAvailable is set to Replicas when no PartitionPolicy"
        (5, None, 5),
    ],
)
def test_task_min_available_defaults(replicas: int, policy: dict[str, Any] | None, expected: int) -> None:
    task: dict[str, Any] = {"replicas": replicas}
    if policy is not None:
        task["partitionPolicy"] = policy
    job = parse_job(job_doc(task))
    assert job.tasks[0].min_available == expected
    assert job.min_available == expected


def test_sub_group_policy_as_the_controller_maps_it() -> None:
    # controllers/job/job_controller_actions.go getSubGroupPolicy
    job = parse_job(
        job_doc(
            {
                "replicas": 8,
                "partitionPolicy": {
                    "partitionSize": 4,
                    "totalPartitions": 2,
                    "minPartitions": 1,
                    "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
                },
            }
        )
    )
    (policy,) = job.sub_group_policies()
    assert policy.name == "task-1"
    assert (policy.sub_group_size, policy.min_sub_groups) == (4, 1)
    assert dict(policy.match_labels) == {"volcano.sh/task-spec": "task-1"}
    assert policy.match_label_keys == (PARTITION_ID_LABEL,)
    assert policy.network_topology is not None and policy.network_topology.highest_tier_allowed == 1


def test_gang_takes_whole_partitions() -> None:
    # job minAvailable 5 over partitions of 4: the gang is 2 whole partitions (8 pods)
    job = parse_job(
        job_doc(
            {
                "replicas": 12,
                "minAvailable": 4,
                "partitionPolicy": {"partitionSize": 4, "totalPartitions": 3, "minPartitions": 1},
            },
            minAvailable=5,
        )
    )
    assert [n for _, _, n in job.gang()] == [8]


def test_pods_carry_their_partition_id() -> None:
    # controllers/job/job_controller_util.go createJobPod: partition-id = index / partitionSize
    job = parse_job(job_doc({"replicas": 6, "partitionPolicy": {"partitionSize": 2, "totalPartitions": 3}}))
    ids = [
        JobController.pod_object(job, job.tasks[0], i, version=0)["metadata"]["labels"][PARTITION_ID_LABEL]
        for i in range(6)
    ]
    assert ids == ["0", "0", "1", "1", "2", "2"]
    plain = parse_job(job_doc({"replicas": 2}))
    assert (
        PARTITION_ID_LABEL
        not in JobController.pod_object(plain, plain.tasks[0], 0, version=0)["metadata"]["labels"]
    )


def sg(labels: dict[str, str] | None = None, keys: tuple[str, ...] = ()) -> SubGroupPolicy:
    return SubGroupPolicy(name="p", match_labels=labels or {}, match_label_keys=keys)


# scheduler/api/sub_job_info_test.go TestGetSubJobMatchValues_{Basic,Boundary,Error} (the cases a
# matchLabels selector can say: vglobal's policies come from partitionPolicy, never expressions)
MATCH = [
    (
        "Basic/match label selector and collect match values",
        sg({"app": "test"}, ("version", "env")),
        {"app": "test", "version": "v1", "env": "dev"},
        ("v1", "dev"),
    ),
    ("Basic/no label selector with match keys", sg(None, ("zone",)), {"zone": "zone-1"}, ("zone-1",)),
    ("Basic/no match keys returns empty slice", sg({"app": "test"}), {"app": "test"}, ()),
    ("Boundary/empty label selector matches all", sg({}, ("key",)), {"key": "value"}, ("value",)),
    ("Boundary/multiple match keys with empty values", sg(None, ("a", "b")), {"a": "", "b": "val"}, None),
    ("Error/pod labels do not match selector", sg({"app": "test"}, ("version",)), {"app": "prod"}, None),
    ("Error/missing label key in pod", sg(None, ("missing",)), {"existing": "value"}, None),
    ("Error/pod has no labels", sg(None, ("any",)), {}, None),
]


@pytest.mark.parametrize(("case", "policy", "labels", "expected"), MATCH, ids=[c[0] for c in MATCH])
def test_match_values(
    case: str, policy: SubGroupPolicy, labels: dict[str, str], expected: tuple[str, ...] | None
) -> None:
    assert match_values(policy.match_labels, policy.match_label_keys, labels) == expected


def test_sub_job_ids() -> None:
    # sub_job_info_test.go TestSubJobInfo_getPodSubJobID "Normale case ..." and "Single matchValue"
    assert sub_job_id("job1", "policy1", ["value1", "value2"]) == "job1/policy1-value1-value2"
    assert sub_job_id("job1", "policy1", ["value1"]) == "job1/policy1-value1"
    assert sub_job_gid("ns/job", "policy") == "ns/job/policy"
    long = sub_job_id("ns/job", "policy", ["x" * 200])
    assert long.startswith("ns/job/policy-") and len(long) < 40
    assert long == sub_job_id("ns/job", "policy", ["x" * 200])
    assert match_index(["3"]) == 3 and match_index(["a"]) == 0 and match_index([]) == 0
