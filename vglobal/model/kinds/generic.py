"""Kinds defined without code, as Kueue's generic adapter takes them: a ``KindDefinition``
(``vglobal.io/v1``) names a custom resource's group/version/kind, where its pod templates and
their replica counts are (field paths such as ``spec.components[0].template.spec.template``), its
gang (every pod, or the count at a path), where its queue and priority class are (a path or a
label) and which values of which status fields mean running, succeeded and failed. Each
definition becomes a ``WorkloadKind`` record like a built-in kind's (``definitions``), which
``vglobal.model.kinds.define`` adds to the tables; the kube agent reads ``KindDefinition`` from
the record to find the templates it labels and the status it follows."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vglobal.model import kinds
from vglobal.model.errors import Problems
from vglobal.model.job import Job
from vglobal.model.k8s import check_name
from vglobal.model.kinds import define
from vglobal.model.kinds.reading import Tasks, WorkloadManifest, count, read_workload, whole_gang
from vglobal.model.kinds.record import WorkloadKind

API_VERSION, KIND = "vglobal.io/v1", "KindDefinition"
PHASES = ("failed", "succeeded", "running")  # the order status rules are tried in
_STEP = re.compile(r"([A-Za-z0-9_\-/]+)|\[(\d+)\]")
Path = tuple[str | int, ...]


def parse_path(p: Problems, where: str, text: Any) -> Path:
    """``a.b[0].c`` as its steps; a step is a field name or a list index."""
    if not isinstance(text, str) or not text:
        p.add(where, "required: a field path such as spec.template")
        return ()
    steps: list[str | int] = []
    for part in text.split("."):
        pos, found = 0, list[str | int]()
        while pos < len(part):
            m = _STEP.match(part, pos)
            if m is None or (m.group(1) and found):
                p.add(where, f'"{text}" is not a field path (name.name[index]...)')
                return ()
            found.append(m.group(1) if m.group(1) else int(m.group(2)))
            pos = m.end()
        if not found:
            p.add(where, f'"{text}" is not a field path (name.name[index]...)')
            return ()
        steps.extend(found)
    return tuple(steps)


def at(obj: Any, path: Path) -> Any:
    """The value at ``path`` (the object inside ``obj`` itself, not a copy), None if absent."""
    for step in path:
        if isinstance(step, int):
            obj = obj[step] if isinstance(obj, list) and step < len(obj) else None
        else:
            obj = obj.get(step) if isinstance(obj, Mapping) else None
    return obj


def shown(path: Path) -> str:
    return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path).lstrip(".")


@dataclass(frozen=True, slots=True)
class PodSet:
    name: str
    template: Path
    replicas: Path | None  # None: one pod


@dataclass(frozen=True, slots=True)
class Source:
    """Where a value is read: a field path, else a label (then an annotation) of the object."""

    path: Path | None = None
    label: str = ""

    def read(self, doc: Mapping[str, Any]) -> tuple[str, str] | None:
        """(value, the field it came from), None when the object does not say."""
        if self.path is not None:
            value = at(doc, self.path)
            return (str(value), shown(self.path)) if isinstance(value, str) and value else None
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
        assert isinstance(meta, Mapping)
        for field in ("labels", "annotations"):
            value = (meta.get(field) or {}).get(self.label)
            if value:
                return str(value), f"metadata.{field}[{self.label}]"
        return None


@dataclass(frozen=True, slots=True)
class StatusRule:
    path: Path
    values: frozenset[str]


@dataclass(frozen=True, slots=True)
class KindDefinition:
    pod_sets: tuple[PodSet, ...]
    min_available: Path | None  # None: every pod is in the gang
    queue: Source | None
    priority: Source | None
    status: Mapping[str, StatusRule]  # "running" | "succeeded" | "failed" -> rule
    needs: str

    def phase(self, obj: Mapping[str, Any]) -> str:
        """Running, Succeeded, Failed by the status rules (failed first), else Pending."""
        for name in PHASES:
            rule = self.status.get(name)
            if rule is not None and str(at(obj, rule.path)) in rule.values:
                return name.capitalize()
        return "Pending"


def _source(p: Problems, where: str, given: Any) -> Source | None:
    if given is None:
        return None
    if not isinstance(given, Mapping) or len(given) != 1 or not ({"path", "label"} & given.keys()):
        p.add(where, "must be {path: FIELD} or {label: KEY}")
        return None
    if "path" in given:
        return Source(path=parse_path(p, f"{where}.path", given["path"]))
    return Source(label=str(given["label"]))


def _reader(d: KindDefinition) -> Callable[[Mapping[str, Any]], Job]:
    def read(whole: Mapping[str, Any]) -> Job:
        return read_workload(whole, lambda tasks, base, spec, _: read_tasks(tasks, whole, spec))

    def read_tasks(tasks: Tasks, whole: Mapping[str, Any], spec: Mapping[str, Any]) -> None:
        doc = {"spec": spec}
        for ps in d.pod_sets:
            replicas = 1
            if ps.replicas is not None:
                replicas = count(tasks.p, shown(ps.replicas), at(doc, ps.replicas), 1)
            source = shown(d.min_available) if d.min_available else "every pod (the kind's definition)"
            tasks.add(ps.name, shown(ps.template), at(doc, ps.template), replicas, replicas, gang_from=source)
        if d.min_available is not None and at(doc, d.min_available) is not None:
            least = count(tasks.p, shown(d.min_available), at(doc, d.min_available), 1)
            whole_gang(tasks, shown(d.min_available), max(least, 1))
        if d.queue is not None and (found := d.queue.read(whole)) is not None:
            tasks.queue, tasks.queue_at = found
        if d.priority is not None and (found := d.priority.read(whole)) is not None:
            tasks.priority = found[0]

    return read


def _definition(p: Problems, where: str, spec: Mapping[str, Any]) -> KindDefinition | None:
    pod_sets: list[PodSet] = []
    given = spec.get("podSets")
    if not isinstance(given, list) or not given:
        p.add(f"{where}.podSets", "required: at least one {name, template, replicas}")
    for i, ps in enumerate(given if isinstance(given, list) else []):
        at_ = f"{where}.podSets[{i}]"
        if not isinstance(ps, Mapping):
            p.add(at_, "must be a mapping")
            continue
        check_name(p, f"{at_}.name", str(ps.get("name") or ""), label=True)
        replicas = ps.get("replicas")
        pod_sets.append(
            PodSet(
                str(ps.get("name") or ""),
                parse_path(p, f"{at_}.template", ps.get("template")),
                None if replicas is None else parse_path(p, f"{at_}.replicas", replicas),
            )
        )
    if len({ps.name for ps in pod_sets}) != len(pod_sets):
        p.add(f"{where}.podSets", "each pod set needs a name of its own")
    gang = spec.get("gang") or {}
    if not isinstance(gang, Mapping) or set(gang) - {"minAvailable"}:
        p.add(f"{where}.gang", "must be {} (every pod) or {minAvailable: FIELD}")
        gang = {}
    least = gang.get("minAvailable")
    status: dict[str, StatusRule] = {}
    rules = spec.get("status") or {}
    if not isinstance(rules, Mapping) or set(rules) - set(PHASES):
        p.add(f"{where}.status", f"must map some of {', '.join(PHASES)} to {{path, values}}")
        rules = {}
    for name, rule in rules.items():
        at_ = f"{where}.status.{name}"
        values = rule.get("values") if isinstance(rule, Mapping) else None
        if not isinstance(values, list) or not values:
            p.add(f"{at_}.values", "required: the values of the field that mean it")
            continue
        status[name] = StatusRule(parse_path(p, f"{at_}.path", rule.get("path")), frozenset(map(str, values)))
    if "succeeded" not in status and "running" not in status:
        p.add(f"{where}.status", "needs succeeded or running: how else would a run be known to go on or end")
    if p:
        return None
    return KindDefinition(
        tuple(pod_sets),
        None if least is None else parse_path(p, f"{where}.gang.minAvailable", least),
        _source(p, f"{where}.queue", spec.get("queue")),
        _source(p, f"{where}.priority", spec.get("priority")),
        status,
        str(spec.get("needs") or "its CRD and controller"),
    )


def define_text(text: str) -> list[WorkloadKind]:
    """Define the kinds of a file of KindDefinitions (a kind known already is left as it is)."""
    from vglobal.model.manifests import load_documents

    return define(definitions(load_documents(text), first_order=max(k.order for k in kinds.KINDS) + 1))


def definitions(docs: Sequence[Mapping[str, Any]], first_order: int) -> list[WorkloadKind]:
    """The records of the ``KindDefinition`` documents; raises ManifestError naming each bad field."""
    p = Problems()
    out: list[WorkloadKind] = []
    for i, doc in enumerate(docs):
        where = f"document[{i}]"
        if doc.get("apiVersion") != API_VERSION or doc.get("kind") != KIND:
            p.add(f"{where}.kind", f"must be {API_VERSION} {KIND}")
            continue
        spec = doc.get("spec") if isinstance(doc.get("spec"), Mapping) else {}
        assert isinstance(spec, Mapping)
        api_version, kind, plural = (str(spec.get(k) or "") for k in ("apiVersion", "kind", "plural"))
        if "/" not in api_version:
            p.add(f"{where}.spec.apiVersion", "required: group/version of a custom resource")
        if not kind:
            p.add(f"{where}.spec.kind", "required")
        check_name(p, f"{where}.spec.plural", plural, label=True)
        d = _definition(p, f"{where}.spec", spec)
        if d is None:
            continue
        group = api_version.split("/", 1)[0]
        record = WorkloadKind(
            api_version,
            kind,
            plural,
            f"{kind.lower()}.{group}",
            _reader(d),
            WorkloadManifest,
            order=first_order + i,
            long_running=spec.get("longRunning") is True,
            definition=d,
        )
        out.append(record)
    p.raise_if_any()
    return out
