"""What ``vglobal sim run`` reads: SimCluster files, and Jobs with the Queues and PriorityClasses
they use, checked as the hub checks them on apply and submit. Every error names the file and
the field."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from vglobal.admission import ClusterSnap, QueueSnap
from vglobal.admission.fit.hyperjob import SplitError, split_over
from vglobal.admission.inputs import JobFacts, Shared
from vglobal.agent.backends.sim_cluster import SimCluster, parse_sim_manifests
from vglobal.hub.dispatch.facts import facts_of
from vglobal.hub.submit import new_job
from vglobal.model.cronjob import CronJob
from vglobal.model.duration import parse_duration
from vglobal.model.errors import ManifestError
from vglobal.model.hyperjob import HyperJob
from vglobal.model.job import Job
from vglobal.model.jobflow import JobFlow, JobTemplate
from vglobal.model.manifests import Manifest
from vglobal.model.priority_class import PriorityClass, UnknownPriorityClass, job_priority
from vglobal.model.queue import ROOT, Queue, QueueRefused, check_job_queue, default_queue
from vglobal.model.queue_affinity import limit_vectors
from vglobal.model.queue_policy import QueuePolicy, inherited, with_policy
from vglobal.store.repo.jobs import static_of

SUFFIXES = (".yaml", ".yml", ".json")
# When the job is submitted, in virtual time from the start (a Go duration); absent = at once.
SUBMIT_AT_ANNOTATION = "vglobal.io/sim-submit-at"


class SimInputError(ValueError):
    """Bad input to a simulation; the message names the file and the field."""


def _documents(path: Path) -> list[tuple[Path, Manifest | SimCluster]]:
    if not path.exists():
        raise SimInputError(f"{path}: no such file or directory")
    files = (
        sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file())
        if path.is_dir()
        else [path]
    )
    out: list[tuple[Path, Manifest | SimCluster]] = []
    for f in files:
        try:
            out += [(f, m) for m in parse_sim_manifests(f.read_text())]
        except ManifestError as exc:
            raise SimInputError(f"{f}: {exc}") from None
    return out


def load_clusters(paths: Sequence[Path]) -> list[SimCluster]:
    out: list[SimCluster] = []
    for path in paths:
        docs = _documents(path)
        for f, m in docs:
            if not isinstance(m, SimCluster):
                raise SimInputError(
                    f"{f}: kind: expected SimCluster in a cluster file, got {type(m).__name__}"
                )
        if not docs:
            raise SimInputError(f"{path}: no SimCluster document")
        out += [m for _, m in docs if isinstance(m, SimCluster)]
    seen: set[str] = set()
    for c in out:
        if c.name in seen:
            raise SimInputError(f'metadata.name: two clusters are named "{c.name}"')
        seen.add(c.name)
    return out


@dataclass(frozen=True)
class Submission:
    """A job as the hub stores it: validated, its priority resolved; ``facts`` are its admission
    inputs as the hub reads them back."""

    uid: str
    job: Job
    priority: int
    at: float = 0.0  # virtual time of submission
    class_policy: str | None = None  # its own PriorityClass's preemptionPolicy (None: it names none)
    class_values: Mapping[str, int] = field(default_factory=dict)  # every PriorityClass's value

    def facts(self, created: float, shared: Shared | None = None) -> JobFacts:
        new = replace(new_job(self.job, None, self.priority), uid=self.uid)
        static = static_of(
            new,
            created_at=datetime.fromtimestamp(created, UTC),
            class_policy=self.class_policy,
            class_values=self.class_values,
        )
        return facts_of(static, shared or Shared())


@dataclass(frozen=True)
class Workload:
    queues: tuple[Queue, ...]  # parents before children; "default" first
    submissions: tuple[Submission, ...]  # in file order (uids sort the same way)
    # The objects passed over, as "CronJob default/nightly (file)": the hub's loops make their Jobs.
    skipped: tuple[str, ...] = ()

    def queue_snaps(self) -> tuple[QueueSnap, ...]:
        return tuple(
            QueueSnap(
                name=q.name,
                parent=q.parent or ROOT,
                weight=q.weight,
                priority=q.priority,
                capability=q.capability,
                deserved=q.deserved,
                guarantee=q.guarantee,
                reclaimable=q.reclaimable,
                open=q.state == "Open",
                created=i,
                affinity=q.affinity,
                node_group_limits=limit_vectors(q.annotations),
            )
            for i, q in enumerate(self.queues)
        )


def _hyperjob_children(f: Path, hj: HyperJob, clusters: Mapping[str, ClusterSnap]) -> tuple[Job, ...]:
    """The children, an auto split made as the hub makes it over the clusters as they start; the
    HyperJob's ``vglobal.io/sim-submit-at`` submits them all then."""
    try:
        kids = hj.children(split_over(hj, clusters)) if hj.needs_split else hj.children()
    except SplitError as exc:
        raise SimInputError(f"{f}: HyperJob {hj.key}: {exc}") from None
    at = ((hj.raw.get("metadata") or {}).get("annotations") or {}).get(SUBMIT_AT_ANNOTATION)
    if not at:
        return kids
    return tuple(replace(k, annotations={**k.annotations, SUBMIT_AT_ANNOTATION: str(at)}) for k in kids)


def load_workload(path: Path, clusters: Mapping[str, ClusterSnap] | None = None) -> Workload:
    """Queues and PriorityClasses apply first (the last of a name wins), then every Job is
    submitted in file order, at the time its ``vglobal.io/sim-submit-at`` says (else at once); a
    file holding a SimCluster belongs in ``--cluster``. CronJobs, JobTemplates and JobFlows are
    passed over. A HyperJob's auto split is made over ``clusters``."""
    docs = _documents(path)
    queues: dict[str, tuple[Path, Queue]] = {"default": (path, default_queue())}
    classes: dict[str, PriorityClass] = {}
    jobs: list[tuple[Path, Job]] = []
    skipped: list[str] = []
    for f, m in docs:
        if isinstance(m, Queue):
            queues[m.name] = (f, m)
        elif isinstance(m, PriorityClass):
            classes[m.name] = m
        elif isinstance(m, Job):
            jobs.append((f, m))
        elif isinstance(m, HyperJob):
            jobs.extend((f, child) for child in _hyperjob_children(f, m, clusters or {}))
        elif isinstance(m, CronJob | JobTemplate | JobFlow):
            # The hub's loops make their Jobs over time; a simulation replays Jobs only.
            skipped.append(f"{type(m).__name__} {m.namespace}/{m.name} ({f})")
            continue
        else:
            raise SimInputError(
                f"{f}: kind: {type(m).__name__} belongs in a --cluster file, not with the jobs"
            )
    _check_tree(queues)
    submitted: dict[str, Path] = {}
    out = []
    for i, (f, job) in enumerate(jobs):
        where = f'{f}: Job "{job.key}"'
        if job.key in submitted:
            raise SimInputError(f"{where}: metadata.name: already defined in {submitted[job.key]}")
        submitted[job.key] = f
        _check_queue(where, job, {n: q for n, (_, q) in queues.items()})
        job = with_policy(job, _queue_policy(job.queue, queues))  # as the hub does at submit
        uid = f"{i:06d}-{job.namespace}-{job.name}"
        try:
            value = job_priority(job, classes.get, classes.values)
        except UnknownPriorityClass as exc:
            raise SimInputError(f"{where}: {exc}") from None
        own = classes.get(job.priority_class_name or "")
        out.append(
            Submission(
                uid,
                job,
                value,
                _submit_at(where, job),
                None if own is None else own.preemption_policy,
                {c.name: c.value for c in classes.values()},
            )
        )
    return Workload(_parents_first(q for _, q in queues.values()), tuple(out), tuple(skipped))


def _check_tree(queues: dict[str, tuple[Path, Queue]]) -> None:
    for name, (f, q) in queues.items():
        seen = {name}
        parent = q.parent or ROOT
        while parent != ROOT:
            if parent not in queues:
                raise SimInputError(f'{f}: Queue "{name}": spec.parent: parent queue "{parent}" not found')
            if parent in seen:
                raise SimInputError(f'{f}: Queue "{name}": spec.parent: the queues\' parents form a cycle')
            seen.add(parent)
            parent = queues[parent][1].parent or ROOT


def _queue_policy(name: str, queues: dict[str, tuple[Path, Queue]]) -> QueuePolicy:
    """The placement the queue gives its jobs, inherited down the (checked) tree."""
    chain = []
    cur = name
    while cur != ROOT and cur in queues:
        q = queues[cur][1]
        chain.append(q.annotations)
        cur = q.parent or ROOT
    return inherited(chain)


def _check_queue(where: str, job: Job, queues: dict[str, Queue]) -> None:
    """As the hub refuses a job at submit (vglobal.model.queue.check_job_queue)."""
    queue = queues.get(job.queue)
    children = any((q.parent or ROOT) == job.queue for q in queues.values())
    try:
        check_job_queue(job.queue, None if queue is None else queue.state, children)
    except QueueRefused as exc:
        raise SimInputError(f"{where}: {exc}") from None


def _submit_at(where: str, job: Job) -> float:
    raw = job.annotations.get(SUBMIT_AT_ANNOTATION)
    if not raw:
        return 0.0
    field = f"metadata.annotations[{SUBMIT_AT_ANNOTATION}]"
    try:
        at = parse_duration(raw)
    except ValueError as exc:
        raise SimInputError(f"{where}: {field}: {exc}") from None
    if at < 0:
        raise SimInputError(f"{where}: {field}: must not be negative, not {raw!r}")
    return at


def _parents_first(queues: Iterable[Queue]) -> tuple[Queue, ...]:
    todo = list(queues)
    out: list[Queue] = []
    placed = {ROOT}
    while todo:
        ready = [q for q in todo if (q.parent or ROOT) in placed]
        out += ready
        placed |= {q.name for q in ready}
        todo = [q for q in todo if q.name not in placed]
    return tuple(out)
