"""`vglobal logs` through a real hub and a sim agent: lines the pod wrote, new lines as it writes
them (`-f`), a task's pods with a prefix, the "read logs" permission of its own, and the audit."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.e2e.harness import System, sim_cluster, wait_for
from tests.e2e.streams import Stream
from vglobal.client import Client, VGlobalError

pytestmark = pytest.mark.e2e

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: talker}
spec:
  minAvailable: 2
  tasks:
  - name: worker
    replicas: 2
    template:
      metadata:
        annotations:
          vglobal.io/sim-log: "hello from the pod\\nloading data"
          vglobal.io/sim-log-interval: 300ms
      spec:
        containers: [{name: main, image: x, resources: {requests: {cpu: "1"}}}]
"""

TOKENS = {"admin": "admin-token-0123456789", "viewer": "viewer-token-0123456789",
          "blind": "blind-token-0123456789", "agent": "agent-token-0123456789"}  # fmt: skip


def auth_file(tmp: Path) -> Path:
    users = "\n".join(
        f"- {{name: {u}, tokenSHA256: {hashlib.sha256(t.encode()).hexdigest()}}}" for u, t in TOKENS.items()
    )
    path = tmp / "auth.yaml"
    path.write_text(
        "apiVersion: vglobal.io/v1alpha1\nkind: AuthConfig\nusers:\n" + users + "\nroleBindings:\n"
        "- {subject: admin, role: admin}\n"
        "- {subject: viewer, role: viewer}\n"
        "- {subject: blind, role: viewer, logs: false}\n"
        "- {subject: agent, role: agent, clusters: [east]}\n"
    )
    return path


def running(system: System) -> None:
    with Client(system.target, token=TOKENS["admin"]) as c:
        wait_for(
            lambda: (j := c.get_job("talker")).phase == "Running" and len(j.placements) == 2,
            60,
            "the job to run",
            system,
        )


def test_logs_follow_permission_and_audit(system: System) -> None:
    system.start_hub("--auth-config", str(auth_file(system.tmp)))
    tok = system.tmp / "agent-token"
    tok.write_text(TOKENS["agent"])
    system.start_agent("east", sim_cluster("east", nodes=2), dial_args=["--hub", system.target, "--token-file", str(tok)])
    admin = ["--token", TOKENS["admin"]]
    (system.tmp / "talker.yaml").write_text(JOB)
    system.cli(*admin, "apply", "-f", str(system.tmp / "talker.yaml"))
    running(system)

    # What the pod wrote when it started, through the CLI as a viewer.
    out = system.cli("--token", TOKENS["viewer"], "logs", "talker", "talker-worker-0", "--tail", "100").stdout
    lines = out.splitlines()
    assert lines[:2] == ["hello from the pod", "loading data"]

    # A task's pods with a prefix; --tail keeps the last line of each.
    out = system.cli(*admin, "logs", "talker", "-t", "worker", "--prefix", "--tail", "1").stdout
    assert sorted(line.split(" ")[0] for line in out.splitlines()) == [
        "[pod/talker-worker-0]",
        "[pod/talker-worker-1]",
    ]

    # -f: the lines the pod writes afterwards arrive, one step after another.
    with Stream(system.target, "--token", TOKENS["viewer"], "logs", "talker", "talker-worker-1", "-f") as follow:
        first = follow.expect(lambda s: ": step " in s, "a step line")
        k = int(first.rsplit(" ", 1)[1])
        follow.expect(lambda s: s.endswith(f": step {k + 2}"), f"step {k + 2} written after the call began")
        assert follow.interrupt() == 0

    # A viewer whose binding says logs: false reads the job but not its output.
    with Client(system.target, token=TOKENS["blind"]) as c:
        assert c.get_job("talker").name == "talker"
        with pytest.raises(VGlobalError) as refused:
            list(c.logs("talker", tail=1))
        assert refused.value.code.name == "PERMISSION_DENIED"
        assert "may not read logs" in str(refused.value)
    res = system.cli("--token", TOKENS["blind"], "logs", "talker", check=False)
    assert res.returncode != 0 and "may not read logs" in res.stderr

    # Each read is audited on the job, naming the caller.
    described = system.cli(*admin, "describe", "job", "talker").stdout
    assert "LogsRead" in described and "by viewer" in described

    # An unknown pod is named with the pods the job has.
    res = system.cli(*admin, "logs", "talker", "nope", check=False)
    assert res.returncode != 0 and "talker-worker-0" in res.stderr


async def _async_lines(target: str) -> list[str]:
    from vglobal.aio import AsyncClient

    async with AsyncClient(target, token=TOKENS["admin"]) as c:
        return [line.text async for line in c.logs("talker", pod="talker-worker-0", tail=2, timestamps=True)]


def test_logs_of_a_cluster_that_is_gone_say_so(system: System) -> None:
    import asyncio
    import signal

    system.start_hub("--auth-config", str(auth_file(system.tmp)), "--cluster-timeout", "3s", "--failover-after", "600s")
    tok = system.tmp / "agent-token"
    tok.write_text(TOKENS["agent"])
    system.start_agent("east", sim_cluster("east", nodes=2), dial_args=["--hub", system.target, "--token-file", str(tok)])
    (system.tmp / "talker.yaml").write_text(JOB)
    system.cli("--token", TOKENS["admin"], "apply", "-f", str(system.tmp / "talker.yaml"))
    running(system)
    lines = asyncio.run(_async_lines(system.target))
    assert len(lines) == 2 and all(line[:4].isdigit() and line[10] == "T" for line in lines)

    system.kill("agent-east", signal.SIGKILL)
    with Client(system.target, token=TOKENS["admin"]) as c:
        # The hub notices the stream ended; until then the request may still go out on it.
        def refused() -> str:
            try:
                list(c.logs("talker", tail=1))
            except VGlobalError as exc:
                return str(exc)
            return ""

        said = wait_for(refused, 60, "logs refused once the agent is gone", system)
        assert said.startswith("UNAVAILABLE") and '"east"' in said, said
        # Once the hub holds the cluster NotReady, the refusal says the cluster is gone.
        said = wait_for(lambda: "is gone: " in (s := refused()) and s, 60, "the cluster said gone", system)
    assert said.startswith('UNAVAILABLE: cluster "east" is gone: NotReady'), said


def test_a_followed_stream_resumes_through_a_hub_restart(system: System) -> None:
    """The SDK's followed stream outlives the hub (and the agent reconnecting to the new one):
    every line the pod wrote arrives once, in order, none lost and none twice."""
    import signal
    import threading

    system.start_hub("--auth-config", str(auth_file(system.tmp)))
    tok = system.tmp / "agent-token"
    tok.write_text(TOKENS["agent"])
    system.start_agent("east", sim_cluster("east", nodes=2), dial_args=["--hub", system.target, "--token-file", str(tok)])
    (system.tmp / "talker.yaml").write_text(JOB)
    system.cli("--token", TOKENS["admin"], "apply", "-f", str(system.tmp / "talker.yaml"))
    running(system)

    got: list[str] = []
    failed: list[BaseException] = []
    with Client(system.target, token=TOKENS["viewer"]) as c:
        stream = c.logs("talker", pod="talker-worker-0", follow=True)

        def read() -> None:
            try:
                got.extend(line.text for line in stream)
            except BaseException as exc:
                failed.append(exc)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        wait_for(lambda: any(": step " in s for s in got), 60, "a step line", system)
        system.kill("hub", signal.SIGKILL)
        before = len(got)
        system.start_hub("--auth-config", str(auth_file(system.tmp)), name="hub-2")
        # Lines written after the new hub came up, through the agent's new stream.
        wait_for(lambda: len(got) >= before + 4 and not failed, 90, "lines after the restart", system)
        stream.close()
        reader.join(10)
    assert not failed, failed
    assert got[:2] == ["hello from the pod", "loading data"], got[:3]
    steps = [int(s.rsplit(" ", 1)[1]) for s in got[2:]]
    assert steps == list(range(1, len(steps) + 1)), steps
    assert all(s.startswith("talker-worker-0 on ") for s in got[2:])
