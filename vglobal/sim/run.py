"""``vglobal sim run``: the agents' job controller and scheduler on simulated clusters, virtual time.

No hub and no database: each job goes to the first cluster (in file order) whose nodes could hold
its gang when empty, and every cluster runs the same ``ClusterRuntime`` the agent daemon runs.
Time jumps from one event (a pod ending, a policy timeout) to the next.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vglobal.agent.backends.sim import SimBackend
from vglobal.agent.runtime import ClusterRuntime
from vglobal.model.job import Job
from vglobal.model.manifests import parse_manifests
from vglobal.model.resources import ResourceVector
from vglobal.model.sim_cluster import SimCluster
from vglobal.scheduler import DEFAULT_AGENT_CONF, parse_conf
from vglobal.sim.clock import VirtualClock

MAX_STEPS = 1_000_000  # a guard against a policy loop that never lets time settle
_POD_SLOT = ResourceVector({"pods": 1})
_MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def load_clusters(paths: Sequence[Path]) -> list[SimCluster]:
    out: list[SimCluster] = []
    for path in paths:
        found = [m for m in parse_manifests(path.read_text()) if isinstance(m, SimCluster)]
        if not found:
            raise ValueError(f"{path}: no SimCluster document")
        out += found
    return out


def load_jobs(path: Path) -> list[Job]:
    files = sorted(p for p in path.rglob("*") if p.suffix in _MANIFEST_SUFFIXES) if path.is_dir() else [path]
    jobs: list[Job] = []
    for f in files:
        jobs += [m for m in parse_manifests(f.read_text()) if isinstance(m, Job)]
    return jobs


def gang_fits(job: Job, nodes: Sequence[ResourceVector]) -> bool:
    """First-fit decreasing of the gang's pods onto ``nodes`` (each pod also takes a pod slot)."""
    pods = [req + _POD_SLOT for _, req, count in job.gang() for _ in range(count)]
    pods.sort(key=lambda r: sorted(r.items()), reverse=True)
    free = list(nodes)
    for pod in pods:
        for i, room in enumerate(free):
            if pod.fits_in(room):
                free[i] = room - pod
                break
        else:
            return False
    return True


def _allowed(job: Job, cluster: SimCluster) -> bool:
    if job.allowed_clusters is not None and cluster.name not in job.allowed_clusters:
        return False
    return all(cluster.labels.get(k) == v for k, v in job.cluster_selector.items())


def choose_cluster(job: Job, clusters: Sequence[SimCluster]) -> int | None:
    for i, cluster in enumerate(clusters):
        if _allowed(job, cluster) and gang_fits(job, [n.allocatable for n in cluster.nodes]):
            return i
    return None


def run_simulation(
    *,
    cluster_files: Sequence[Path],
    jobs_path: Path,
    scheduler_conf: Path | None = None,
    until_idle: bool = True,
    until: float | None = None,
) -> dict[str, Any]:
    """Run to idle (nothing left that can change) or to virtual time ``until``, then report."""
    clusters = load_clusters(cluster_files)
    conf = parse_conf(scheduler_conf.read_text()) if scheduler_conf is not None else DEFAULT_AGENT_CONF
    clock = VirtualClock()
    runtimes = [ClusterRuntime(SimBackend(c), clock, conf) for c in clusters]
    placed: list[tuple[Job, int | None]] = []
    for job in load_jobs(jobs_path):
        target = choose_cluster(job, clusters)
        placed.append((job, target))
        if target is not None:
            runtimes[target].controller.start(job.key, 1, job, queue=job.queue)
    for _ in range(MAX_STEPS):
        for rt in runtimes:
            rt.step()
        times = [t for t in (rt.next_event_time() for rt in runtimes) if t is not None]
        nxt = min(times) if times else None
        if nxt is None:
            break  # idle: no pod will end and no policy timeout is due
        if until is not None and nxt > until:
            clock.advance_to(max(clock.now(), until))
            for rt in runtimes:
                rt.step()
            break
        if not until_idle and until is None:
            break
        clock.advance_to(nxt)
    return {"time": clock.now(), "jobs": [_report(job, target, clusters, runtimes) for job, target in placed]}


def _report(
    job: Job, target: int | None, clusters: Sequence[SimCluster], runtimes: Sequence[ClusterRuntime]
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": job.name, "namespace": job.namespace}
    if target is None:
        out.update(
            phase="Pending",
            cluster=None,
            pods=[],
            retryCount=0,
            reason="no cluster's nodes can hold the gang",
        )
        return out
    run = runtimes[target].runs[job.key]
    out.update(
        phase=str(run.phase),
        cluster=clusters[target].name,
        pods=[{"name": p.pod, "node": p.node or None, "phase": p.phase} for p in run.placements()],
        retryCount=run.retry_count,
        reason=run.message,
        events=[{"reason": e.reason, "message": e.message, "time": e.time} for e in run.history],
    )
    return out
