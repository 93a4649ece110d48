"""Multi-document YAML or JSON text to typed manifests, chosen by apiVersion and kind.

``KINDS`` are the hub's kinds; a reader of other kinds passes its own table to ``parse_documents``
(the simulator's SimCluster: ``vglobal.agent.backends.sim_cluster``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import yaml

from vglobal.model import (
    cronjob,
    dependencies,
    dra,
    hyperjob,
    jobflow,
    kinds,
    namespace,
    priority_class,
    queue,
)
from vglobal.model.cronjob import CronJob, parse_cron_job
from vglobal.model.dependencies import Dependency, parse_dependency
from vglobal.model.errors import ManifestError, ManifestTooLarge
from vglobal.model.fields import FieldValidation, unknown_fields
from vglobal.model.hyperjob import HyperJob, parse_hyper_job
from vglobal.model.job import Job
from vglobal.model.jobflow import JobFlow, JobTemplate, parse_job_flow, parse_job_template
from vglobal.model.k8s import Model
from vglobal.model.kinds import pod_group, volcano_job
from vglobal.model.namespace import Namespace, parse_namespace
from vglobal.model.priority_class import PriorityClass, parse_priority_class
from vglobal.model.queue import Queue, parse_queue

__all__ = [
    "KINDS",
    "SCHEMAS",
    "Manifest",
    "ManifestTooLarge",
    "field_warnings",
    "job_to_json",
    "load_documents",
    "manifest_to_json",
    "manifest_to_yaml",
    "parse_document",
    "parse_documents",
    "parse_manifest",
    "parse_manifests",
]

Manifest = Job | Queue | PriorityClass | CronJob | JobTemplate | JobFlow | HyperJob | Dependency | Namespace
M = TypeVar("M")
Kinds = Mapping[tuple[str, str], Callable[[Mapping[str, Any]], M]]  # (apiVersion, kind) -> parser
Schemas = Mapping[tuple[str, str], type[Model]]  # (apiVersion, kind) -> schema, for field validation

# The kinds submitted as jobs come from their records (``vglobal.model.kinds``); the Volcano Job
# is listed first, as the errors that name every kind always did.
KINDS: dict[tuple[str, str], Callable[[Mapping[str, Any]], Manifest]] = {
    volcano_job.KIND.key: volcano_job.KIND.reader,
    (queue.API_VERSION, queue.KIND): parse_queue,
    (priority_class.API_VERSION, priority_class.KIND): parse_priority_class,
    (cronjob.API_VERSION, cronjob.KIND): parse_cron_job,
    (jobflow.API_VERSION, jobflow.TEMPLATE_KIND): parse_job_template,
    (jobflow.API_VERSION, jobflow.FLOW_KIND): parse_job_flow,
    (hyperjob.API_VERSION, hyperjob.KIND): parse_hyper_job,
    (namespace.API_VERSION, namespace.KIND): parse_namespace,
    **{k.key: k.reader for k in kinds.KINDS},
    **{(dependencies.API_VERSION, k): parse_dependency for k in dependencies.KINDS},
}

# Each kind's schema, for strict field validation.
SCHEMAS: dict[tuple[str, str], type[Model]] = {
    **{k.key: k.schema for k in kinds.KINDS},
    (queue.API_VERSION, queue.KIND): queue.QueueManifest,
    (priority_class.API_VERSION, priority_class.KIND): priority_class.PriorityClassManifest,
    (cronjob.API_VERSION, cronjob.KIND): cronjob.CronJobManifest,
    (jobflow.API_VERSION, jobflow.TEMPLATE_KIND): jobflow.JobTemplateManifest,
    (jobflow.API_VERSION, jobflow.FLOW_KIND): jobflow.JobFlowManifest,
    (hyperjob.API_VERSION, hyperjob.KIND): hyperjob.HyperJobManifest,
    (dependencies.API_VERSION, dependencies.CONFIG_MAP): dependencies.ConfigMapManifest,
    (dependencies.API_VERSION, dependencies.SECRET): dependencies.SecretManifest,
    (namespace.API_VERSION, namespace.KIND): namespace.NamespaceManifest,
}


def _defined(kind: kinds.WorkloadKind) -> None:
    KINDS[kind.key], SCHEMAS[kind.key] = kind.reader, kind.schema


kinds.on_define(_defined)

DEFAULT_MAX_BYTES = 1_048_576
# Anchors and aliases let a small text expand into a huge tree ("billion laughs"); refuse such trees.
MAX_NODES = 200_000
# Kubernetes objects nest a few dozen levels at most; deeper trees only serve to exhaust a parser's stack.
MAX_DEPTH = 100


# libyaml's parser when it is there (about ten times faster), with the safe constructor either way.
_SafeBase: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SafeBase):  # type: ignore[valid-type,misc]
    """A safe loader that keeps dates as strings, as Kubernetes does (a label 2024-01-01 stays text)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    return f"malformed YAML{where}: {problem}" + (f" ({context})" if context else "")


def _too_deep(where: str) -> ManifestError:
    return ManifestError.one(where, f"the document nests deeper than {MAX_DEPTH} levels")


def _check_expanded_size(doc: Any, where: str) -> None:
    budget = MAX_NODES
    stack = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        budget -= 1
        if budget < 0:
            raise ManifestTooLarge.one(where, f"the document expands to more than {MAX_NODES} values")
        if depth > MAX_DEPTH:
            raise _too_deep(where)
        if isinstance(node, str) and "\x00" in node:
            raise ManifestError.one(where, "a string contains the NUL character")
        if isinstance(node, dict):
            stack.extend((k, depth + 1) for k in node if isinstance(k, str))
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def _expand_list(doc: Any) -> list[Any]:
    """A ``kind: List`` (what ``kubectl get -o yaml`` prints) stands for its items."""
    if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
        return list(doc["items"])
    return [doc]


def load_documents(text: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> list[dict[str, Any]]:
    """The non-empty documents of a YAML stream, a JSON object or a JSON array, as dicts."""
    size = len(text.encode())
    if size > max_bytes:
        raise ManifestTooLarge.one("", f"manifest is {size} bytes, more than the limit of {max_bytes} bytes")
    raw: list[Any] = []
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ManifestError.one(
                "document[0]", f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
        except RecursionError:
            raise _too_deep("document[0]") from None
        raw = parsed if isinstance(parsed, list) else [parsed]
    else:
        stream = yaml.load_all(text, Loader=_Loader)  # _Loader is a SafeLoader
        try:
            for doc in stream:
                raw.append(doc)
        except yaml.YAMLError as exc:
            raise ManifestError.one(f"document[{len(raw)}]", _yaml_problem(exc)) from None
        except RecursionError:
            raise _too_deep(f"document[{len(raw)}]") from None
    docs: list[dict[str, Any]] = []
    for i, doc in enumerate(d for d in raw if d is not None):
        _check_expanded_size(doc, f"document[{i}]")
        for item in _expand_list(doc):
            if not isinstance(item, dict):
                raise ManifestError.one(
                    f"document[{i}]", f"a manifest must be a mapping, not {type(item).__name__}"
                )
            docs.append(item)
    return docs


def field_warnings(doc: Mapping[str, Any], schemas: Schemas = SCHEMAS) -> list[str]:
    """``path: unknown field`` for each field of ``doc`` its kind does not define (none for a kind
    we do not know: parsing says so)."""
    schema = schemas.get((str(doc.get("apiVersion")), str(doc.get("kind"))))
    return [] if schema is None else [f"{path}: unknown field" for path in unknown_fields(schema, doc)]


def parse_manifest(
    doc: Mapping[str, Any], *, validation: FieldValidation = FieldValidation.STRICT
) -> Manifest:
    """One document to its typed manifest; raises ManifestError, also for an unknown field unless
    ``validation`` is Warn or Ignore."""
    return parse_document(doc, KINDS, schemas=SCHEMAS, validation=validation)


def parse_document(
    doc: Mapping[str, Any],
    kinds: Kinds[M],
    *,
    schemas: Schemas,
    validation: FieldValidation = FieldValidation.STRICT,
) -> M:
    """One document to its typed manifest, by the given tables of kinds and their schemas."""
    if not isinstance(doc, Mapping):
        raise ManifestError.one("", f"a manifest must be a mapping, not {type(doc).__name__}")
    api, kind = doc.get("apiVersion"), doc.get("kind")
    if not kind or not isinstance(kind, str):
        raise ManifestError.one("kind", "required")
    if not api or not isinstance(api, str):
        raise ManifestError.one("apiVersion", "required")
    parser = kinds.get((api, kind))
    if parser is not None:
        if validation == FieldValidation.STRICT:
            unknown = unknown_fields(schemas[(api, kind)], doc)
            if unknown:
                raise ManifestError([(path, "unknown field") for path in unknown])
        return parser(doc)
    versions = [a for a, k in kinds if k == kind]
    if versions:
        raise ManifestError.one(
            "apiVersion", f'unsupported apiVersion "{api}" for kind {kind} (use {versions[0]})'
        )
    known = ", ".join(f"{a} {k}" for a, k in kinds)
    raise ManifestError.one("kind", f'unknown kind "{kind}" (apiVersion "{api}"); supported: {known}')


def _describe(doc: Mapping[str, Any]) -> str:
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    kind = doc.get("kind") or "manifest"
    return f'{kind} "{name}"' if name else str(kind)


def parse_manifests(
    text: str, *, max_bytes: int = DEFAULT_MAX_BYTES, validation: FieldValidation = FieldValidation.STRICT
) -> list[Manifest]:
    """Every document of ``text``, in order; the first bad one raises ManifestError.

    With several documents the error's ``document`` names which one (``document[1] (Job "x")``).
    """
    return parse_documents(text, KINDS, schemas=SCHEMAS, max_bytes=max_bytes, validation=validation)


def parse_documents(
    text: str,
    kinds: Kinds[M],
    *,
    schemas: Schemas,
    max_bytes: int = DEFAULT_MAX_BYTES,
    validation: FieldValidation = FieldValidation.STRICT,
) -> list[M]:
    """``parse_manifests`` by the given tables of kinds and schemas. ResourceClaimTemplates and
    ResourceClaims are no manifests of their own: they travel with the jobs naming them."""
    docs = load_documents(text, max_bytes=max_bytes)
    docs = gathered(docs)
    out: list[M] = []
    for i, doc in enumerate(docs):
        try:
            out.append(parse_document(doc, kinds, schemas=schemas, validation=validation))
        except ManifestError as exc:
            if len(docs) > 1:
                exc.document = f"document[{i}] ({_describe(doc)})"
            raise
    return out


def gathered(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The documents as jobs are submitted: DRA claims travel with the jobs naming them, pods with
    the Volcano PodGroup they name."""
    if any(dra.is_claim_document(d) for d in docs):
        docs = dra.carry(docs)[0]
    if any(pod_group.is_pod_group(d) for d in docs):
        docs = pod_group.carry(docs)
    return docs


def manifest_to_yaml(raw: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(raw), sort_keys=False, default_flow_style=False)


def manifest_to_json(raw: Mapping[str, Any]) -> str:
    """Compact, key-sorted JSON: the same manifest always gives the same text."""
    return json.dumps(raw, sort_keys=True, separators=(",", ":"))


def job_to_json(j: Job) -> str:
    return manifest_to_json(j.raw)
