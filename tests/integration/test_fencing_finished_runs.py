"""A run that finished by itself is never fenced: the hub tells a cluster to stop only a run that
is not the job's current one, and says truly why.

Under load the hub logged "generation 1 is stale (now 1 on gpu-east)" for jobs that completed
normally: its record of what an agent runs still held the run while the binding already showed
it Succeeded, and the fencing took the finished run for a stale one. Two ways into that state
are driven here through the real AgentService stream: a report of the run arriving after its
final one, and an agent that registers with the run (the hub's record then trails the database
exactly as it does between recording a final report and forgetting the run).
"""

from __future__ import annotations

from tests.integration.agent_driver import ScriptedAgent
from tests.integration.test_dispatch_and_fencing import JOB, wait
from vglobal.client import Client
from vglobal.hub.server import Hub


def run_to_completion(agent: ScriptedAgent, client: Client, name: str) -> str:
    client.submit_job(JOB % name)
    d = agent.expect("dispatch").dispatch
    agent.accept(d.job_uid, d.generation)
    agent.status(d.job_uid, d.generation, "Running", pods=2)
    agent.status(d.job_uid, d.generation, "Completed")
    wait(lambda: client.get_job(name).binding_phase == "Succeeded")
    return d.job_uid


def fenced(client: Client, name: str) -> list[str]:
    return [e.message for e in client.explain_job(name).events if e.reason == "Fenced"]


def test_a_late_report_of_a_finished_run_does_not_fence_it(hub: Hub, client: Client) -> None:
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "east")
    try:
        agent.connect()
        uid = run_to_completion(agent, client, "done")
        agent.status(uid, 1, "Running", pods=2)  # a report of the run, after its final one
        # Then a report of a run of a job that does not exist: it must be stopped. Reports are
        # handled in order and each sync looks at every run the hub holds, so once its Cancel
        # is here, the run above has been looked at too.
        agent.status("no-such-job", 1, "Running")
        cancel = agent.expect("cancel").cancel
        assert (cancel.job_uid, cancel.reason) == ("no-such-job", "job deleted")
        assert agent.cancels() == [("no-such-job", 1)]
        assert fenced(client, "done") == []
        job = client.get_job("done")
        assert (job.phase, job.binding_phase, job.generation) == ("Completed", "Succeeded", 1)
    finally:
        agent.close()


def test_a_finished_run_the_hub_still_holds_is_not_fenced(hub: Hub, client: Client) -> None:
    first = ScriptedAgent(f"127.0.0.1:{hub.port}", "east")
    try:
        first.connect()
        uid = run_to_completion(first, client, "done")
    finally:
        first.close()
    again = ScriptedAgent(f"127.0.0.1:{hub.port}", "east")
    try:
        again.connect(jobs=[(uid, 1), ("no-such-job", 1)])
        cancel = again.expect("cancel").cancel  # the sync that looked at both runs
        assert (cancel.job_uid, cancel.reason) == ("no-such-job", "job deleted")
        assert again.cancels() == [("no-such-job", 1)]
        assert fenced(client, "done") == []
    finally:
        again.close()


def test_a_run_moved_elsewhere_is_fenced_with_a_reason_that_names_the_new_run(
    hub: Hub, client: Client
) -> None:
    east = ScriptedAgent(f"127.0.0.1:{hub.port}", "east")
    west = ScriptedAgent(f"127.0.0.1:{hub.port}", "west")
    try:
        east.connect()
        client.submit_job(JOB % "moved")
        d = east.expect("dispatch").dispatch
        east.accept(d.job_uid, 1)
        east.status(d.job_uid, 1, "Running", pods=2)
        wait(lambda: client.get_job("moved").binding_phase == "Running")
        client.drain_cluster("east")  # re-queued: east's run must stop
        cancel = east.expect("cancel").cancel
        assert cancel.reason == "generation 1 was re-queued; the job waits to be admitted again"
        west.connect()
        assert west.expect("dispatch").dispatch.generation == 2
        east.close()
        again = ScriptedAgent(f"127.0.0.1:{hub.port}", "east")  # east comes back, still running it
        again.connect(jobs=[(d.job_uid, 1)])
        cancel = again.expect("cancel").cancel
        assert cancel.reason == "generation 1 is stale (now generation 2 on west)"
        again.close()
        assert fenced(client, "moved")[-1] == (
            "told cluster east to stop generation 1: generation 1 is stale (now generation 2 on west)"
        )
    finally:
        west.close()
