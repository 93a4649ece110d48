"""The rules every manifest in deploy/ keeps: least-privilege RBAC and locked-down containers.

Each checker returns the problems it found, one sentence each naming the object and the field, so a
test can assert on an empty list and, for a bad manifest, on the exact problem.
"""

from __future__ import annotations

import json
import re
import shlex

from tests.unit.deploy.kustomize import Doc, containers, pod_spec

RULE_FIELDS = ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs")
# Verbs that let a subject grant itself more than it has.
ESCALATING_VERBS = {"escalate", "bind", "impersonate"}


def ref(doc: Doc) -> str:
    ns = doc["metadata"].get("namespace")
    return f"{doc['kind']} {ns + '/' if ns else ''}{doc['metadata']['name']}"


def rbac_problems(docs: list[Doc]) -> list[str]:
    problems: list[str] = []
    for d in docs:
        if d["kind"] not in {"Role", "ClusterRole"}:
            continue
        if "aggregationRule" in d:
            problems.append(f"{ref(d)}: aggregationRule pulls in rules from elsewhere")
        for i, rule in enumerate(d.get("rules") or []):
            for field in RULE_FIELDS:
                for value in rule.get(field) or []:
                    if "*" in value:
                        problems.append(f"{ref(d)}: rules[{i}].{field} has wildcard {value!r}")
            for verb in rule.get("verbs") or []:
                if verb in ESCALATING_VERBS:
                    problems.append(f"{ref(d)}: rules[{i}].verbs has {verb!r}")
            if not rule.get("verbs"):
                problems.append(f"{ref(d)}: rules[{i}].verbs is empty")
    return problems


def container_problems(docs: list[Doc]) -> list[str]:
    problems: list[str] = []
    for d in docs:
        spec = pod_spec(d)
        if spec is None:
            continue
        pod_sc = spec.get("securityContext") or {}
        for flag in ("hostNetwork", "hostPID", "hostIPC"):
            if spec.get(flag):
                problems.append(f"{ref(d)}: {flag} is set")
        for v in spec.get("volumes") or []:
            if "hostPath" in v:
                problems.append(f"{ref(d)}: volume {v['name']} is a hostPath")
        for c in containers(d):
            where = f"{ref(d)} container {c['name']}"
            sc = c.get("securityContext") or {}
            if sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is not True:
                problems.append(f"{where}: securityContext.runAsNonRoot is not true")
            if sc.get("runAsUser", pod_sc.get("runAsUser")) == 0:
                problems.append(f"{where}: securityContext.runAsUser is 0")
            if sc.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{where}: securityContext.allowPrivilegeEscalation is not false")
            if sc.get("privileged"):
                problems.append(f"{where}: securityContext.privileged is set")
            if sc.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{where}: securityContext.readOnlyRootFilesystem is not true")
            caps = sc.get("capabilities") or {}
            if "ALL" not in (caps.get("drop") or []):
                problems.append(f"{where}: securityContext.capabilities.drop lacks ALL")
            if caps.get("add"):
                problems.append(f"{where}: securityContext.capabilities.add is {caps['add']}")
            seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
            if seccomp != "RuntimeDefault":
                problems.append(f"{where}: securityContext.seccompProfile.type is {seccomp!r}")
            limits = (c.get("resources") or {}).get("limits") or {}
            requests = (c.get("resources") or {}).get("requests") or {}
            if "memory" not in limits or "cpu" not in requests or "memory" not in requests:
                problems.append(f"{where}: resources need cpu and memory requests and a memory limit")
    return problems


def dockerfile_problems(text: str) -> list[str]:
    """The final stage must run as a numeric, non-zero UID (runAsNonRoot can only check a number)
    and start `vglobal`."""
    lines = _instructions(text)
    starts = [i for i, (word, _) in enumerate(lines) if word == "FROM"]
    if not starts:
        return ["Dockerfile: no FROM"]
    final = lines[starts[-1] :]
    problems: list[str] = []
    users = [arg for word, arg in final if word == "USER"]
    if not users:
        problems.append("Dockerfile: the final stage has no USER (it would run as root)")
    else:
        uid = users[-1].split(":")[0]
        if not uid.isdigit():
            problems.append(f"Dockerfile: USER {users[-1]} is not numeric")
        elif int(uid) == 0:
            problems.append("Dockerfile: USER is root (0)")
    entry = [arg for word, arg in final if word == "ENTRYPOINT"]
    if not entry or _exec_form(entry[-1])[:1] != ["vglobal"]:
        problems.append('Dockerfile: ENTRYPOINT is not ["vglobal"]')
    return problems


def _instructions(text: str) -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", text)
    out: list[tuple[str, str]] = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, arg = line.partition(" ")
        out.append((word.upper(), arg.strip()))
    return out


def _exec_form(arg: str) -> list[str]:
    try:
        value = json.loads(arg)
    except ValueError:
        return shlex.split(arg)
    return [str(v) for v in value] if isinstance(value, list) else []
