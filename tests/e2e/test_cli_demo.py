"""`vglobal demo` (what `make demo` runs) as a user runs it: a hub, an agent per cluster, the examples
applied, and a live view. In a pipe it ends once every example has run to its end (a long-running
kind once it is up), printing its last frame uncut; on a terminal it stays up, the README's Python
snippets run against it with its export lines, and Ctrl-C stops it all with exit status 0."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest
import yaml

from vglobal.sdk import Client

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def _examples(*kinds: str) -> list[str]:
    return [
        doc["metadata"]["name"]
        for path in sorted((ROOT / "examples").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc.get("kind") in kinds
    ]


def _section(out: str, title: str) -> list[str]:
    """The rows of the table under ``title`` in the last frame (up to the blank line after it)."""
    lines = out.splitlines()
    at = max(i for i, line in enumerate(lines) if line.strip() == title)
    rows = []
    for line in lines[at + 2 :]:
        if not line.strip():
            break
        rows.append(line)
    return rows


@pytest.mark.timeout(900)
def test_the_demo_runs_the_examples_to_the_end_and_prints_them(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "vglobal", "demo", "--data-dir", str(tmp_path), "--timeout", "600"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        # No COLUMNS: a log is 80 columns to rich, and the tables must not be cut to it.
        env={**{k: v for k, v in os.environ.items() if k != "COLUMNS"}, "PYTHONUNBUFFERED": "1"},
        timeout=800,
        check=False,
    )
    out = res.stdout
    assert res.returncode == 0, out + res.stderr
    assert "\ndone" in out or "logs are in" in out, "the view ended on its own, then the processes stopped"
    finished = re.findall(r"vglobal demo — +[\d.]+s — (\d+)/(\d+) jobs finished or up", out)
    assert finished and finished[-1][0] == finished[-1][1], finished
    jobs = {row.split()[1]: row.split() for row in _section(out, "Jobs")}
    # Every example of every kind ran to its end: batch kinds Completed, long-running ones up.
    for name in _examples("Job", "RayJob"):
        assert name in jobs and "Completed" in jobs[name], (name, out)
    for name in _examples("Deployment", "StatefulSet", "LeaderWorkerSet", "RayCluster"):
        assert name in jobs and "Running" in jobs[name], (name, out)
    for name in _examples("HyperJob"):
        children = [row for job, row in jobs.items() if job.startswith(f"{name}-")]
        assert len(children) == 2 and all("Completed" in row for row in children), (name, out)
    # Nothing folded at 80 columns in the log, though the rows are longer.
    assert max(len(line) for line in out.splitlines()) > 80
    for line in out.splitlines():
        if line.startswith("starting an agent for "):
            assert line.endswith(")"), line
    flows = {row.split()[1]: row.split() for row in _section(out, "JobFlows")}
    for name in _examples("JobFlow"):
        row = flows[name]
        done, steps = row[3].split("/")
        assert row[2] == "Succeed" and done == steps, row
        assert sum(1 for job in jobs if job.startswith(f"{name}-")) == int(steps)
    crons = {row.split()[1] for row in _section(out, "CronJobs")}
    assert crons == set(_examples("CronJob"))
    assert {row.split()[0] for row in _section(out, "Clusters")} == {
        yaml.safe_load(p.read_text())["metadata"]["name"] for p in (ROOT / "clusters").glob("*.yaml")
    }


ANSI = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|\][^\x07]*\x07|[()][0-9A-Za-z])")
README = (ROOT / "README.md").read_text()


class Terminal:
    """A process on a pseudo-terminal of 200 columns, its output read on a thread, escapes removed."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        self.proc = subprocess.Popen(args, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave)
        os.close(slave)
        self.master, self.raw, self.more = master, b"", threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the process and its terminal are gone
                chunk = b""
            with self.more:
                self.raw += chunk
                self.more.notify_all()
            if not chunk:
                return

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw.decode(errors="replace")).replace("\r", "")

    def wait_for(self, what: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        with self.more:
            while what not in self.text:
                assert self.more.wait(max(0.0, deadline - time.monotonic())), f"no {what!r} in:\n{self.text}"
        return self.text


def _python(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _readme_block(marker: str) -> str:
    return next(b for b in re.findall(r"```(?:python|text)\n(.*?)```", README, flags=re.S) if marker in b)


def _closed(target: str) -> bool:
    host, port = target.rsplit(":", 1)
    with socket.socket() as s:
        return s.connect_ex((host, int(port))) != 0


@pytest.mark.timeout(600)
def test_on_a_terminal_the_demo_stays_up_runs_the_readme_snippets_and_ends_on_ctrl_c(tmp_path: Path) -> None:
    # The README's clusters; of the examples only the queues (the rest is the piped test's).
    (tmp_path / "clusters").mkdir()
    for f in (ROOT / "clusters").glob("*.yaml"):
        shutil.copy(f, tmp_path / "clusters")
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "queues.yaml", tmp_path / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VGLOBAL_") and k != "COLUMNS"}
    term = Terminal([sys.executable, "-m", "vglobal", "demo"], tmp_path, {**env, "TERM": "xterm-256color"})
    try:
        out = term.wait_for("Ctrl-C stops the demo.", 300)
        term.wait_for("vglobal demo — ", 60)  # the live view is drawn
        # The lines the README shows, as the demo printed them (placeholders aside), in order.
        printed = out.splitlines()
        at = 0
        for line in filter(None, _readme_block("starting the hub on").splitlines()):
            pattern = re.escape(line).replace("<port>", r"\d+").replace("<dir>", r"\S+").replace("<token>", r"\S+")
            at = next((i for i in range(at, len(printed)) if re.fullmatch(pattern, printed[i])), -1) + 1
            assert at, f"the README's line {line!r} is not in the demo's output:\n{out}"
        exports = dict(re.findall(r"^  export (VGLOBAL_\w+)=(\S+)$", out, flags=re.M))
        assert exports.keys() == {"VGLOBAL_HUB", "VGLOBAL_CA_FILE", "VGLOBAL_TOKEN"}
        user = {**env, **exports, "PYTHONUNBUFFERED": "1"}
        data_dir = Path(exports["VGLOBAL_CA_FILE"]).parents[1]

        watch = subprocess.Popen(
            [sys.executable, "-c", _readme_block("watch_jobs")], cwd=tmp_path, env=user,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        lines: list[str] = []
        threading.Thread(target=lambda: lines.extend(iter(watch.stdout.readline, "")), daemon=True).start()  # type: ignore[union-attr]
        try:
            # Jobs in its queue until the watch shows one: then it follows (no sleep guesses when).
            tick = yaml.safe_load(_readme_block("submit_job(JOB").split('JOB = """', 1)[1].split('"""', 1)[0])
            with Client(exports["VGLOBAL_HUB"], ca_file=exports["VGLOBAL_CA_FILE"], token=exports["VGLOBAL_TOKEN"]) as hub:
                for i in range(120):
                    if any(" ADDED tick-" in line for line in lines):
                        break
                    tick["metadata"]["name"] = f"tick-{i}"
                    hub.submit_job(yaml.safe_dump(tick))
                    time.sleep(0.5)
            submit = _readme_block("submit_job(JOB")
            first, again = _python(submit, user, tmp_path), _python(submit, user, tmp_path)
            assert first.returncode == 0 and first.stdout.startswith("hello-sdk"), first.stderr
            assert again.returncode == 0 and again.stdout.startswith("hello-sdk"), again.stderr  # no ALREADY_EXISTS
            deadline = time.monotonic() + 120
            while not (
                any(re.fullmatch(r"\d+ ADDED hello-sdk \w*\n", line) for line in lines)
                and any(re.fullmatch(r"\d+ MODIFIED hello-sdk \w+\n", line) for line in lines)
            ):
                assert watch.poll() is None and time.monotonic() < deadline, "".join(lines)
                time.sleep(0.2)
            lists = _python(_readme_block("job_page("), user, tmp_path)
            assert lists.returncode == 0, lists.stderr
        finally:
            watch.kill()
            watch.wait()
        assert term.proc.poll() is None  # still up, long after the examples were applied

        term.proc.send_signal(signal.SIGINT)  # Ctrl-C
        assert term.proc.wait(timeout=90) == 0, term.text
        assert "Ctrl-C: stopping the hub, the agents and the dashboard" in term.text
        assert "Traceback" not in term.text and "Aborted" not in term.text
        assert _closed(exports["VGLOBAL_HUB"]) and not data_dir.exists()
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
            term.proc.wait()
