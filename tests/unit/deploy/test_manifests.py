"""deploy/ renders offline, every object is valid for the Kubernetes version we target, the RBAC
is least privilege without wildcards, every container is locked down, and the pieces are wired
to each other (Secrets mounted where flags point, Services and policies selecting the pods)."""

from __future__ import annotations

import copy
import functools
import re
import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from tests.unit.deploy.kustomize import Doc, containers, pod_spec, read_yaml_docs, render, split_image
from tests.unit.deploy.policy import container_problems, dockerfile_problems, rbac_problems
from vglobal.agent.kube.workloads import KINDS

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
# The Kubernetes release the manifests are validated against (kubernetes-validate ships its schemas).
KUBERNETES_VERSION = "1.32.0"
KUSTOMIZATIONS = [
    "deploy",
    "deploy/hub",
    "deploy/agent",
    "deploy/agent-token",
    "deploy/agent-create-namespaces",
    "deploy/postgres",
    "tests/kind/overlay",
]
PLAIN_FILES = ["deploy/namespace.yaml", "deploy/postgres/secret.example.yaml"]

AGENT_PERMISSIONS = {
    ("", "nodes"): {"get", "list", "watch"},
    ("", "pods"): {"create", "get", "list", "watch", "delete", "patch"},
    ("", "pods/binding"): {"create"},
    ("", "pods/status"): {"get", "patch"},
    ("", "pods/log"): {"get"},
    ("", "services"): {"create", "get", "delete"},
    ("", "configmaps"): {"create", "get", "patch", "delete"},
    ("", "secrets"): {"create", "get", "patch", "delete"},
    ("", "namespaces"): {"get"},
    ("", "persistentvolumeclaims"): {"get"},
    ("", "events"): {"create", "list", "watch"},
    ("topology.volcano.sh", "hypernodes"): {"get", "list", "watch"},
    ("resource.k8s.io", "resourceslices"): {"get", "list", "watch"},
    ("resource.k8s.io", "deviceclasses"): {"get", "list", "watch"},
    ("resource.k8s.io", "resourceclaims"): {"create", "get", "list", "watch", "delete"},
    ("resource.k8s.io", "resourceclaims/status"): {"patch"},
    ("", "podtemplates"): {"create", "delete"},
    ("autoscaling.x-k8s.io", "provisioningrequests"): {"create", "list", "watch", "delete"},
    **{
        (group, resource): {"create", "get", "list", "watch", "delete"}
        for group, resource in [
            ("ray.io", "rayclusters"),
            ("ray.io", "rayjobs"),
            ("leaderworkerset.x-k8s.io", "leaderworkersets"),
            ("apps", "deployments"),
            ("apps", "statefulsets"),
            ("batch", "jobs"),
            ("ray.io", "rayservices"),
            ("jobset.x-k8s.io", "jobsets"),
            ("kubeflow.org", "pytorchjobs"),
            ("kubeflow.org", "mpijobs"),
            ("trainer.kubeflow.org", "trainjobs"),
            ("scheduling.volcano.sh", "podgroups"),
            ("workload.serving.volcano.sh", "modelservings"),
        ]
    },
}
AGENT_LEASE_PERMISSIONS = {("coordination.k8s.io", "leases"): {"get", "create", "update"}}


@functools.cache
def _rendered(name: str) -> list[Doc]:
    return render(ROOT / name)


def build(name: str) -> list[Doc]:
    return copy.deepcopy(_rendered(name))


def find(docs: list[Doc], kind: str, name: str) -> Doc:
    hits = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(hits) == 1, f"{kind} {name}: found {len(hits)}"
    return hits[0]


def validate(doc: Doc) -> None:
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


# ---------------------------------------------------------------- rendering and schemas


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_kustomization_renders_to_valid_objects(name: str) -> None:
    docs = build(name)
    assert docs
    for d in docs:
        validate(d)
        if d["kind"] not in {"ClusterRole", "ClusterRoleBinding", "Namespace"}:
            assert d["metadata"].get("namespace") == "vglobal", f"{d['kind']} {d['metadata']['name']}"
    keys = [(d["kind"], d["metadata"]["name"]) for d in docs]
    assert len(keys) == len(set(keys)), f"duplicate objects in {name}"


@pytest.mark.parametrize("name", PLAIN_FILES)
def test_plain_manifest_is_valid(name: str) -> None:
    for d in read_yaml_docs(ROOT / name):
        validate(d)


def test_validation_rejects_a_misspelt_field_and_a_wrong_type() -> None:
    deployment = copy.deepcopy(find(build("deploy/hub"), "Deployment", "vglobal-hub"))
    deployment["spec"]["template"]["spec"]["containers"][0]["imagee"] = "x"
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(deployment)
    deployment = copy.deepcopy(find(build("deploy/hub"), "Deployment", "vglobal-hub"))
    deployment["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(deployment)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl binary to cross-check the renderer")
@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_renderer_agrees_with_kubectl_kustomize(name: str) -> None:
    out = subprocess.run(
        ["kubectl", "kustomize", str(ROOT / name)], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    theirs = [d for d in yaml.safe_load_all(out) if d]

    def key(d: Doc) -> tuple[str, str, str]:
        return (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])

    assert sorted(build(name), key=key) == sorted(theirs, key=key)


# ---------------------------------------------------------------- RBAC


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_rbac_has_no_wildcards_or_escalation(name: str) -> None:
    assert rbac_problems(build(name)) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [("verbs", ["*"]), ("resources", ["*"]), ("resources", ["pods/*"]), ("apiGroups", ["*"])],
)
def test_the_rbac_check_catches_a_wildcard(field: str, value: list[str]) -> None:
    role = copy.deepcopy(find(build("deploy/agent"), "ClusterRole", "vglobal-agent"))
    role["rules"][1][field] = value
    assert rbac_problems([role]) == [f"ClusterRole vglobal-agent: rules[1].{field} has wildcard {value[0]!r}"]


def test_the_rbac_check_catches_escalation_and_aggregation() -> None:
    role = copy.deepcopy(find(build("deploy/agent"), "ClusterRole", "vglobal-agent"))
    role["rules"].append(
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"]}
    )
    role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}
    problems = rbac_problems([role])
    last = len(role["rules"]) - 1
    assert f"ClusterRole vglobal-agent: rules[{last}].verbs has 'bind'" in problems
    assert "ClusterRole vglobal-agent: aggregationRule pulls in rules from elsewhere" in problems


def granted(docs: list[Doc], account: str, binding_kind: str) -> dict[tuple[str, str], set[str]]:
    """What the ServiceAccount `account` of namespace vglobal may do through bindings of one kind."""
    roles = {(d["kind"], d["metadata"]["name"]): d for d in docs if d["kind"] in {"Role", "ClusterRole"}}
    out: dict[tuple[str, str], set[str]] = {}
    for b in docs:
        if b["kind"] != binding_kind:
            continue
        if not any(
            s["kind"] == "ServiceAccount" and s["name"] == account and s.get("namespace") == "vglobal"
            for s in b["subjects"]
        ):
            continue
        role = roles[(b["roleRef"]["kind"], b["roleRef"]["name"])]
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


@pytest.mark.parametrize("name", ["deploy/agent", "deploy/agent-token", "tests/kind/overlay"])
def test_agent_has_exactly_the_permissions_it_needs(name: str) -> None:
    docs = build(name)
    assert granted(docs, "vglobal-agent", "ClusterRoleBinding") == AGENT_PERMISSIONS
    assert granted(docs, "vglobal-agent", "RoleBinding") == AGENT_LEASE_PERMISSIONS
    lease_binding = find(docs, "RoleBinding", "vglobal-agent-lease")
    assert lease_binding["roleRef"]["kind"] == "Role"


def test_the_agent_may_write_and_watch_every_workload_kind_it_runs() -> None:
    """Every kind the kube backend writes is granted: create (the run's object), get (a taken
    name), list and watch (its status), delete (cancel, failover)."""
    granted_now = granted(build("deploy/agent"), "vglobal-agent", "ClusterRoleBinding")
    for kind in KINDS:
        assert {"create", "get", "list", "watch", "delete"} <= granted_now[(kind.group, kind.plural)], kind.kind


def test_create_namespaces_adds_only_namespace_creation() -> None:
    docs = build("deploy/agent-create-namespaces")
    want = copy.deepcopy(AGENT_PERMISSIONS)
    want[("", "namespaces")] = {"get", "create"}
    assert granted(docs, "vglobal-agent", "ClusterRoleBinding") == want
    assert agent_container(docs)["args"][-1] == "--create-namespaces"


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_every_binding_refers_to_a_role_of_its_own(name: str) -> None:
    docs = build(name)
    own = {(d["kind"], d["metadata"]["name"]) for d in docs if d["kind"] in {"Role", "ClusterRole"}}
    for b in docs:
        if b["kind"] in {"RoleBinding", "ClusterRoleBinding"}:
            assert (b["roleRef"]["kind"], b["roleRef"]["name"]) in own, b["metadata"]["name"]


def test_the_hub_has_no_kubernetes_credentials() -> None:
    docs = build("deploy/hub")
    assert find(docs, "ServiceAccount", "vglobal-hub")["automountServiceAccountToken"] is False
    assert pod_spec(find(docs, "Deployment", "vglobal-hub"))["automountServiceAccountToken"] is False  # type: ignore[index]
    assert not [d for d in docs if d["kind"].endswith("Binding")]


# ---------------------------------------------------------------- containers and the image


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_every_container_is_locked_down(name: str) -> None:
    assert container_problems(build(name)) == []


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        (("allowPrivilegeEscalation",), True, "securityContext.allowPrivilegeEscalation is not false"),
        (("readOnlyRootFilesystem",), False, "securityContext.readOnlyRootFilesystem is not true"),
        (("capabilities", "drop"), ["NET_RAW"], "securityContext.capabilities.drop lacks ALL"),
        (("capabilities", "add"), ["NET_ADMIN"], "securityContext.capabilities.add is ['NET_ADMIN']"),
        (("runAsNonRoot",), False, "securityContext.runAsNonRoot is not true"),
        (("seccompProfile", "type"), "Unconfined", "securityContext.seccompProfile.type is 'Unconfined'"),
    ],
)
def test_the_container_check_catches_a_loosened_setting(
    path: tuple[str, ...], value: object, problem: str
) -> None:
    deployment = copy.deepcopy(find(build("deploy/hub"), "Deployment", "vglobal-hub"))
    node = deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert container_problems([deployment]) == [f"Deployment vglobal/vglobal-hub container hub: {problem}"]


def test_the_container_check_catches_host_access() -> None:
    deployment = copy.deepcopy(find(build("deploy/agent"), "Deployment", "vglobal-agent"))
    spec = deployment["spec"]["template"]["spec"]
    spec["hostNetwork"] = True
    spec["volumes"].append({"name": "root", "hostPath": {"path": "/"}})
    assert container_problems([deployment]) == [
        "Deployment vglobal/vglobal-agent: hostNetwork is set",
        "Deployment vglobal/vglobal-agent: volume root is a hostPath",
    ]


def test_dockerfile_runs_vglobal_as_a_numeric_non_root_user() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert dockerfile_problems(text) == []
    # Nothing is written at run time outside /tmp: HOME and TMPDIR point there, no bytecode is written.
    for env in ("HOME=/tmp", "TMPDIR=/tmp", "PYTHONDONTWRITEBYTECODE=1"):
        assert env in text
    ignore = (ROOT / ".dockerignore").read_text().split()
    assert ignore[ignore.index("**") :][:1] == ["**"], (
        ".dockerignore starts from nothing and lets in what the build needs"
    )


@pytest.mark.parametrize(
    ("final_stage", "problem"),
    [
        (
            'FROM python:3.11-slim\nENTRYPOINT ["vglobal"]\n',
            "Dockerfile: the final stage has no USER (it would run as root)",
        ),
        ('FROM python:3.11-slim\nUSER 0\nENTRYPOINT ["vglobal"]\n', "Dockerfile: USER is root (0)"),
        (
            'FROM python:3.11-slim\nUSER vglobal\nENTRYPOINT ["vglobal"]\n',
            "Dockerfile: USER vglobal is not numeric",
        ),
        (
            'FROM python:3.11-slim\nUSER 10001\nENTRYPOINT ["python"]\n',
            'Dockerfile: ENTRYPOINT is not ["vglobal"]',
        ),
    ],
)
def test_the_dockerfile_check_catches_root(final_stage: str, problem: str) -> None:
    # A USER in an earlier build stage does not count for the image that runs.
    assert dockerfile_problems("FROM python:3.11-slim AS build\nUSER 10001\n" + final_stage) == [problem]


def test_the_vglobal_image_is_named_in_one_place() -> None:
    component = yaml.safe_load((DEPLOY / "image" / "kustomization.yaml").read_text())
    (image,) = component["images"]
    want = f"{image['newName']}:{image['newTag']}"
    seen = 0
    for name in ("deploy", "deploy/hub", "deploy/agent", "deploy/agent-token"):
        for d in build(name):
            for c in containers(d):
                if split_image(c["image"])[0] != "postgres":
                    assert c["image"] == want
                    seen += 1
    assert seen >= 5
    # The manifests themselves only carry the placeholder the component replaces.
    for path in [*DEPLOY.glob("hub/*.yaml"), *DEPLOY.glob("agent/*.yaml")]:
        for d in read_yaml_docs(path):
            for c in containers(d):
                assert c["image"] == image["name"], path


# ---------------------------------------------------------------- wiring


def hub_container(docs: list[Doc]) -> Doc:
    (c,) = containers(find(docs, "Deployment", "vglobal-hub"))
    return c


def agent_container(docs: list[Doc]) -> Doc:
    (c,) = containers(find(docs, "Deployment", "vglobal-agent"))
    return c


def mounted_files(doc: Doc, container: Doc) -> set[str]:
    """Every file the container can read from a Secret or ConfigMap volume."""
    volumes = {v["name"]: v for v in pod_spec(doc)["volumes"]}  # type: ignore[index]
    out: set[str] = set()
    for m in container.get("volumeMounts") or []:
        volume = volumes.get(m["name"], {})  # absent: a StatefulSet volumeClaimTemplate
        source = volume.get("secret") or volume.get("configMap")
        if source is None:
            continue
        for item in source.get("items") or []:
            out.add(f"{m['mountPath']}/{item['path']}")
        if not source.get("items"):
            out.add(f"{m['mountPath']}/*")
    return out


def files_named(container: Doc) -> set[str]:
    words = [*container.get("args", []), *(e.get("value", "") for e in container.get("env", []))]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        words += (container.get(probe) or {}).get("exec", {}).get("command", [])
    return {w for w in words if w.startswith("/etc/")}


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_every_file_a_container_is_pointed_at_is_mounted(name: str) -> None:
    for d in build(name):
        for c in containers(d):
            have = mounted_files(d, c)
            for path in files_named(c):
                assert path in have or f"{path.rsplit('/', 1)[0]}/*" in have, (
                    f"{c['name']}: {path} not mounted"
                )


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_every_variable_an_argument_uses_is_defined(name: str) -> None:
    for d in build(name):
        for c in containers(d):
            defined = {e["name"] for e in c.get("env", [])}
            for arg in c.get("args", []):
                for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", arg):
                    assert var in defined, f"{c['name']}: $({var}) is not in env"


def test_hub_serves_tls_on_its_port_and_reads_the_database_url_from_a_secret() -> None:
    docs = build("deploy/hub")
    deployment = find(docs, "Deployment", "vglobal-hub")
    c = hub_container(docs)
    assert deployment["spec"]["replicas"] == 2
    args = c["args"]
    assert args[0] == "hub" and "--insecure" not in args
    flags = dict(zip(args[1::2], args[2::2], strict=True))
    assert flags["--listen"] == "0.0.0.0:50051"
    assert {"--tls-cert", "--tls-key", "--client-ca", "--auth-config"} <= set(flags)
    assert flags["--agent-listen"] == "0.0.0.0:50052"
    env = {e["name"]: e for e in c["env"]}
    assert env["VGLOBAL_DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {
        "name": "vglobal-database",
        "key": "url",
    }
    assert "--database-url" not in args, "the URL carries a password: never on the command line"
    assert [(p["name"], p["containerPort"]) for p in c["ports"]] == [("grpc", 50051), ("grpc-agents", 50052)]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        command = c[probe]["exec"]["command"]
        assert command[:6] == [
            "vglobal", "--hub", "127.0.0.1:50051", "--ca-file", "/etc/vglobal/tls/ca.crt", "health"
        ], probe  # fmt: skip
        assert c[probe]["timeoutSeconds"] > 4, "the probe's own --timeout must end first"


def test_hub_service_pdb_and_network_policies_select_the_right_pods() -> None:
    docs = build("deploy")
    hub_labels = find(docs, "Deployment", "vglobal-hub")["spec"]["template"]["metadata"]["labels"]
    agent_labels = find(docs, "Deployment", "vglobal-agent")["spec"]["template"]["metadata"]["labels"]
    db_labels = find(docs, "StatefulSet", "vglobal-postgres")["spec"]["template"]["metadata"]["labels"]
    service = find(docs, "Service", "vglobal-hub")
    assert selects(service["spec"]["selector"], hub_labels)
    assert not selects(service["spec"]["selector"], agent_labels)
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["grpc", "grpc-agents"]
    assert selects(
        find(docs, "PodDisruptionBudget", "vglobal-hub")["spec"]["selector"]["matchLabels"], hub_labels
    )
    assert selects(
        find(docs, "PodDisruptionBudget", "vglobal-agent")["spec"]["selector"]["matchLabels"], agent_labels
    )
    assert selects(find(docs, "Service", "vglobal-postgres")["spec"]["selector"], db_labels)

    hub_policy = find(docs, "NetworkPolicy", "vglobal-hub")["spec"]
    assert selects(hub_policy["podSelector"]["matchLabels"], hub_labels)
    assert set(hub_policy["policyTypes"]) == {"Ingress", "Egress"}
    (ingress,) = hub_policy["ingress"]
    assert "from" not in ingress
    assert ingress["ports"] == [{"port": 50051, "protocol": "TCP"}, {"port": 50052, "protocol": "TCP"}]
    to_db, to_dns = hub_policy["egress"]
    assert selects(to_db["to"][0]["podSelector"]["matchLabels"], db_labels)
    assert to_db["ports"] == [{"port": 5432, "protocol": "TCP"}]
    assert {p["port"] for p in to_dns["ports"]} == {53}

    db_policy = find(docs, "NetworkPolicy", "vglobal-postgres")["spec"]
    assert selects(db_policy["podSelector"]["matchLabels"], db_labels)
    (db_in,) = db_policy["ingress"]
    assert selects(db_in["from"][0]["podSelector"]["matchLabels"], hub_labels)
    assert "egress" not in db_policy and "Egress" in db_policy["policyTypes"]


def test_postgres_secret_example_matches_what_the_statefulset_reads() -> None:
    (secret,) = read_yaml_docs(DEPLOY / "postgres" / "secret.example.yaml")
    (c,) = containers(find(build("deploy/postgres"), "StatefulSet", "vglobal-postgres"))
    refs = {e["valueFrom"]["secretKeyRef"]["key"] for e in c["env"] if "valueFrom" in e}
    assert refs == set(secret["stringData"])
    assert {e["valueFrom"]["secretKeyRef"]["name"] for e in c["env"] if "valueFrom" in e} == {
        secret["metadata"]["name"]
    }


def test_agent_runs_in_cluster_with_two_replicas_and_a_client_certificate() -> None:
    docs = build("deploy/agent")
    assert find(docs, "Deployment", "vglobal-agent")["spec"]["replicas"] == 2
    args = agent_container(docs)["args"]
    agent_at = args.index("agent")
    assert args[:agent_at] == ["--cert", "/etc/vglobal/hub/tls.crt", "--key", "/etc/vglobal/hub/tls.key"]
    sub = args[agent_at + 1 :]
    assert "--in-cluster" in sub
    assert sub[sub.index("--scheduler-name") + 1] == "vglobal"
    assert sub[sub.index("--lease-duration") + 1] == "15s"
    assert sub[sub.index("--name") + 1] == "$(VGLOBAL_CLUSTER_NAME)"
    env = {e["name"]: e for e in agent_container(docs)["env"]}
    assert env["VGLOBAL_HUB"]["valueFrom"]["secretKeyRef"] == {"name": "vglobal-agent", "key": "hub"}
    assert env["VGLOBAL_CA_FILE"]["value"] == "/etc/vglobal/hub/ca.crt"
    assert "VGLOBAL_TOKEN" not in env


def test_token_variant_is_the_agent_without_the_certificate() -> None:
    base = agent_container(build("deploy/agent"))
    token = agent_container(build("deploy/agent-token"))
    assert token["args"] == base["args"][4:]
    env = {e["name"]: e for e in token["env"]}
    assert env["VGLOBAL_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "vglobal-agent", "key": "token"}
    assert mounted_files(find(build("deploy/agent-token"), "Deployment", "vglobal-agent"), token) == {
        "/etc/vglobal/hub/ca.crt"
    }


# ---------------------------------------------------------------- kind clusters


def test_kind_clusters_have_workers_under_tors_with_gpu_labels() -> None:
    configs = sorted((ROOT / "clusters" / "kind").glob("*.yaml"))
    assert len(configs) == 2
    names = set()
    for path in configs:
        cfg = yaml.safe_load(path.read_text())
        assert cfg["kind"] == "Cluster" and cfg["apiVersion"] == "kind.x-k8s.io/v1alpha4"
        assert cfg["name"] == path.stem
        names.add(cfg["name"])
        roles = [n["role"] for n in cfg["nodes"]]
        assert roles.count("control-plane") == 1 and roles.count("worker") >= 3
        workers = [n for n in cfg["nodes"] if n["role"] == "worker"]
        assert all("volcano.sh/tor" in n["labels"] for n in workers)
        assert len({n["labels"]["volcano.sh/tor"] for n in workers}) >= 2
        gpu = [n for n in workers if "nvidia.com/gpu.product" in n["labels"]]
        assert gpu and all(int(n["labels"]["nvidia.com/gpu.count"]) > 0 for n in gpu)
    assert len(names) == 2
