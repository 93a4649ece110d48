"""What bench/e2e.py prints and saves: the per-phase table, the jobs-over-time plot, the latencies
of each job read back from the database, and summaries of py-spy profiles."""

from __future__ import annotations

import collections
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psycopg


@dataclass
class Phase:
    name: str
    offered: str = ""
    achieved: str = ""
    submit: list[float] = field(default_factory=list)  # seconds
    running: list[float] = field(default_factory=list)
    completed: list[float] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)  # process group -> % of one core
    rss: dict[str, float] = field(default_factory=dict)  # process group -> peak MiB
    commits_per_s: float = 0.0
    failed: int = 0
    notes: list[str] = field(default_factory=list)
    samples: list[tuple[float, dict[str, int]]] = field(default_factory=list)


def pct(values: list[float], q: float) -> str:
    if not values:
        return "-"
    v = float(np.percentile(np.asarray(values), q))
    return f"{v * 1000:.0f} ms" if v < 10 else f"{v:.1f} s"


def triple(values: list[float]) -> str:
    return " / ".join(pct(values, q) for q in (50, 90, 99))


HEADER = (
    "| phase | offered | achieved | submit p50/p90/p99 | submit→Running p50/p90/p99 | "
    "submit→Completed p50/p90/p99 | hub CPU, peak RSS | agents CPU, peak RSS (max) | "
    "Postgres CPU | load CPU | commits/s |\n|---|---|---|---|---|---|---|---|---|---|---|"
)


def row(p: Phase) -> str:
    failed = f" ({p.failed} failed)" if p.failed else ""
    return (
        f"| {p.name} | {p.offered} | {p.achieved}{failed} | {triple(p.submit)} | {triple(p.running)} | "
        f"{triple(p.completed)} | {p.cpu.get('hub', 0):.0f}%, {p.rss.get('hub', 0):.0f} MiB | "
        f"{p.cpu.get('agents', 0):.0f}%, {p.rss.get('agents', 0):.0f} MiB | {p.cpu.get('postgres', 0):.0f}% | "
        f"{p.cpu.get('load', 0):.0f}% | {p.commits_per_s:,.0f} |"
    )


def job_times(url: str) -> dict[str, tuple[float, float | None, float | None, str]]:
    """Per job name: stored at, its run's JobRunning event (agent clock), its binding's finish
    (hub clock), binding phase. One machine: the clocks agree."""
    sql = (
        "SELECT j.name, extract(epoch FROM j.created_at), "
        "(SELECT min(extract(epoch FROM e.time)) FROM events e WHERE e.job_uid = j.uid "
        " AND e.reason = 'JobRunning'), extract(epoch FROM b.finished_at), b.phase "
        "FROM jobs j JOIN resource_bindings b ON b.job_uid = j.uid"
    )
    with psycopg.connect(url) as conn:
        rows = conn.execute(sql).fetchall()
    return {
        r[0]: (
            float(r[1]),
            None if r[2] is None else float(r[2]),
            None if r[3] is None else float(r[3]),
            r[4],
        )
        for r in rows
    }


def latencies(p: Phase, records: list[list[Any]], url: str, *, runs: bool) -> None:
    """Fill in submit latencies from the clients' records and, with ``runs``, the times to Running
    and to Completed from the database (from when each job's call was due)."""
    p.submit = [r[3] - r[1] for r in records if r[4] == "OK"]
    failed = collections.Counter(r[4] for r in records if r[4] != "OK")
    p.failed = sum(failed.values())
    if failed:
        p.notes.append("failed calls: " + ", ".join(f"{n} {code}" for code, n in failed.most_common()))
    if not runs:
        return
    times = job_times(url)
    for name, due, _sent, _done, code in records:
        t = times.get(name)
        if code != "OK" or t is None:
            continue
        if t[1] is not None:
            p.running.append(t[1] - due)
        if t[2] is not None and t[3] == "Succeeded":
            p.completed.append(t[2] - due)


def plot(p: Phase, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not p.samples:
        return
    t0 = p.samples[0][0]
    xs = [t - t0 for t, _ in p.samples]
    groups = {
        "pending": ("Suspended",),
        "dispatched/bound": ("Dispatched", "Bound"),
        "running": ("Running",),
        "completed": ("Succeeded", "Failed", "Aborted"),
    }
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for label, phases in groups.items():
        ax.plot(xs, [sum(c.get(ph, 0) for ph in phases) for _, c in p.samples], label=label)
    ax.set_xlabel("seconds since the phase started")
    ax.set_ylabel("jobs")
    ax.set_title(f"bench/e2e.py: {p.name}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


_FRAME = re.compile(r"^(.*?) \((.*?)(?::\d+)?\)$")
# Frames every sample of a thread passes through: they say nothing of where the time goes.
_PLUMBING = ("threading.py", "concurrent/futures/", "click/", "<frozen runpy>", "vglobal/__main__.py")


def _frames(stack: str) -> list[str]:
    out = []
    for f in stack.split(";"):
        m = _FRAME.match(f)
        if m is None:
            out.append(f)
        elif not m.group(2).startswith(_PLUMBING):
            out.append(f"{m.group(1)} ({m.group(2)})")
    return out


# Where a hub's sample belongs, by the first marker its stack holds (in this order).
_AREAS = (
    ("SubmitGroups._run", "submit groups (their threads)"),
    ("DispatchLoop.tick", "dispatcher"),
    ("run_leader_loop", "other leader loops"),
    ("WatchFeed", "watch feed"),
    ("listen_forever", "NOTIFY listener"),
    ("JobServicer.SubmitJobs", "SubmitJobs handler"),
    ("JobServicer.SubmitJob ", "SubmitJob handler"),
    ("AgentServicer", "agent streams (read, record, deliver)"),
    ("guard.py", "Guard (auth, decoding)"),
    ("asyncio/", "grpc.aio loop itself"),
)


def profile_areas(raw: Path) -> str:
    """The hub's samples by area (which loop, handler or thread), largest first."""
    areas: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        total += int(count)
        area = next((name for marker, name in _AREAS if marker in stack), "other")
        areas[area] += int(count)
    return "".join(f"  {n / max(total, 1):6.1%}  {a}\n" for a, n in areas.most_common())


def summarize_profile(raw: Path, top: int = 25) -> str:
    """py-spy's collapsed stacks as the functions with the most samples: inclusive and self."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = _frames(stack) or ["(plumbing)"]
        for f in set(frames):
            inclusive[f] += n
        own[frames[-1]] += n
    if not total:
        return f"{raw.name}: no samples\n"
    lines = [f"{raw.name}: {total} samples", "by area:", profile_areas(raw).rstrip("\n"), "inclusive:"]
    lines += [f"  {n / total:6.1%}  {f}" for f, n in inclusive.most_common(top)]
    lines.append("self:")
    lines += [f"  {n / total:6.1%}  {f}" for f, n in own.most_common(top)]
    return "\n".join(lines) + "\n"
