"""Offline rendering of deploy/'s kustomizations: the part of kustomize these files use.

Supported: `resources` (files and directories), `components`, `namespace`, `images` and JSON 6902
`patches` with a target. Any other field is refused, so a kustomization that starts using one
fails here until this renderer learns it (and the cross-check against `kubectl kustomize`, where
that binary exists, keeps the two in step).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

Doc = dict[str, Any]

KUSTOMIZATION_FIELDS = {"apiVersion", "kind", "resources", "components", "namespace", "images", "patches"}
CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "PersistentVolume",
    "StorageClass",
    "CustomResourceDefinition",
    "PriorityClass",
}
POD_TEMPLATE_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"}


class KustomizeError(ValueError):
    pass


def read_yaml_docs(path: Path) -> list[Doc]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def render(root: Path) -> list[Doc]:
    """The resources `kubectl kustomize ROOT` would print (in file order, not kustomize's)."""
    return _build(root.resolve(), visiting=())


def _build(root: Path, visiting: tuple[Path, ...]) -> list[Doc]:
    k, path, docs = _load(root, "Kustomization", visiting)
    return _transform(k, path, docs)


def _load(root: Path, expect_kind: str, visiting: tuple[Path, ...]) -> tuple[Doc, Path, list[Doc]]:
    """A kustomization's resources with its components applied, before its own transformers."""
    for v in visiting:
        if v.is_relative_to(root):
            raise KustomizeError(f"{root}: contains {v}, which includes it (kustomize refuses the cycle)")
    path = root / "kustomization.yaml"
    if not path.is_file():
        raise KustomizeError(f"{root}: no kustomization.yaml")
    k = yaml.safe_load(path.read_text()) or {}
    unknown = set(k) - KUSTOMIZATION_FIELDS
    if unknown:
        raise KustomizeError(f"{path}: fields this renderer does not know: {sorted(unknown)}")
    kind = k.get("kind", "Kustomization")
    if kind != expect_kind:
        raise KustomizeError(f"{path}: kind {kind}, expected {expect_kind}")
    visiting = (*visiting, root)
    docs: list[Doc] = []
    for entry in k.get("resources") or []:
        target = (root / entry).resolve()
        if target.is_dir():
            docs.extend(_build(target, visiting))
        elif target.is_file():
            if not target.is_relative_to(root):
                raise KustomizeError(f"{path}: file {entry} is outside the kustomization root")
            docs.extend(read_yaml_docs(target))
        else:
            raise KustomizeError(f"{path}: resource {entry} does not exist")
    for entry in k.get("components") or []:
        # A component adds its own resources, then transforms everything accumulated so far.
        ck, cpath, own = _load((root / entry).resolve(), "Component", visiting)
        docs = _transform(ck, cpath, [*docs, *own])
    return k, path, docs


def _transform(k: Doc, path: Path, docs: list[Doc]) -> list[Doc]:
    docs = copy.deepcopy(docs)
    if "namespace" in k:
        _set_namespace(docs, k["namespace"])
    for image in k.get("images") or []:
        _set_image(docs, image)
    for patch in k.get("patches") or []:
        _apply_patch(docs, patch, path)
    return docs


def _set_namespace(docs: list[Doc], namespace: str) -> None:
    accounts = {
        (d["metadata"]["name"], d["metadata"].get("namespace")) for d in docs if d["kind"] == "ServiceAccount"
    }
    for d in docs:
        if d["kind"] in {"RoleBinding", "ClusterRoleBinding"}:
            for s in d.get("subjects") or []:
                # kustomize moves the default account and the accounts this build defines.
                ours = s.get("name") == "default" or (s.get("name"), s.get("namespace")) in accounts
                if s.get("kind") == "ServiceAccount" and "namespace" in s and ours:
                    s["namespace"] = namespace
    for d in docs:
        if d["kind"] not in CLUSTER_SCOPED:
            d["metadata"]["namespace"] = namespace


def split_image(ref: str) -> tuple[str, str]:
    """`name[:tag][@digest]` -> (name, the rest including its separator)."""
    at = ref.find("@")
    base, digest = (ref, "") if at < 0 else (ref[:at], ref[at:])
    slash = base.rfind("/")
    colon = base.rfind(":")
    if colon > slash:
        return base[:colon], base[colon:] + digest
    return base, digest


def pod_spec(doc: Doc) -> Doc | None:
    if doc["kind"] in POD_TEMPLATE_KINDS:
        spec: Doc = doc["spec"]["template"]["spec"]
        return spec
    if doc["kind"] == "Pod":
        pod: Doc = doc["spec"]
        return pod
    return None


def containers(doc: Doc) -> list[Doc]:
    spec = pod_spec(doc)
    if spec is None:
        return []
    return [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]


def _set_image(docs: list[Doc], image: Doc) -> None:
    for d in docs:
        for c in containers(d):
            name, rest = split_image(c["image"])
            if name != image["name"]:
                continue
            name = image.get("newName", name)
            if "digest" in image:
                rest = "@" + image["digest"]
            elif "newTag" in image:
                rest = ":" + str(image["newTag"])
            c["image"] = name + rest


def _matches(doc: Doc, target: Doc) -> bool:
    group, _, version = doc["apiVersion"].rpartition("/")
    want = {
        "group": group,
        "version": version,
        "kind": doc["kind"],
        "name": doc["metadata"]["name"],
        "namespace": doc["metadata"].get("namespace"),
    }
    return all(want[key] == value for key, value in target.items())


def _apply_patch(docs: list[Doc], patch: Doc, path: Path) -> None:
    if set(patch) != {"target", "patch"}:
        raise KustomizeError(f"{path}: only JSON 6902 patches with a target are supported")
    ops = yaml.safe_load(patch["patch"])
    if not isinstance(ops, list):
        raise KustomizeError(f"{path}: a JSON 6902 patch is a list of operations")
    hits = [d for d in docs if _matches(d, patch["target"])]
    if not hits:
        raise KustomizeError(f"{path}: patch target {patch['target']} matches nothing")
    for d in hits:
        for op in ops:
            json_patch(d, op)


def _pointer(path: str) -> list[str]:
    if not path.startswith("/"):
        raise KustomizeError(f"JSON pointer {path!r} must start with /")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(doc: Doc, op: Doc) -> None:
    """One RFC 6902 operation (add, replace, remove) applied in place."""
    *parents, last = _pointer(op["path"])
    node: Any = doc
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    kind = op["op"]
    if isinstance(node, list):
        if kind == "add":
            index = len(node) if last == "-" else int(last)
            node.insert(index, copy.deepcopy(op["value"]))
        elif kind == "replace":
            node[int(last)] = copy.deepcopy(op["value"])
        elif kind == "remove":
            del node[int(last)]
        else:
            raise KustomizeError(f"unsupported op {kind}")
    elif kind in {"add", "replace"}:
        if kind == "replace" and last not in node:
            raise KustomizeError(f"replace: {op['path']} does not exist")
        node[last] = copy.deepcopy(op["value"])
    elif kind == "remove":
        del node[last]
    else:
        raise KustomizeError(f"unsupported op {kind}")
