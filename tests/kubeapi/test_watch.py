"""List + watch as an informer does it, through kubernetes.watch.Watch: resume from a resourceVersion,
410 Expired, BOOKMARKs, timeoutSeconds, selectors, dropped streams."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.kubeapi import EmulatorConfig, KubeApiEmulator, simple_nodes
from tests.kubeapi.testkit import binding, pod_body, wait_until
from tests.kubeapi.watching import _next_bookmark


@pytest.fixture
def emu(tmp_path: Path) -> Iterator[KubeApiEmulator]:
    cfg = EmulatorConfig(nodes=simple_nodes(2), bookmark_interval=0.2, kubelet=False)
    with KubeApiEmulator(cfg, tmp_path / "kubeconfig") as e:
        yield e


@pytest.fixture
def core(emu: KubeApiEmulator) -> client.CoreV1Api:
    return client.CoreV1Api(emu.api_client())


class Follower:
    """Watch.stream on a thread; events land in a queue."""

    def __init__(self, fn: Any, *args: Any, **kwargs: Any) -> None:
        self.w = watch.Watch()
        self.events: queue.Queue[Any] = queue.Queue()
        self.error: BaseException | None = None

        def run() -> None:
            try:
                for ev in self.w.stream(fn, *args, **kwargs):
                    self.events.put(ev)
            except BaseException as e:
                self.error = e
            self.events.put(None)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def next(self, timeout: float = 5) -> Any:
        return self.events.get(timeout=timeout)

    def stop(self) -> None:
        self.w.stop()


def test_watch_from_the_lists_resource_version_sees_only_later_changes(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_body("before"))
    rv = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", pod_body("after"))
    core.delete_namespaced_pod("before", "default")
    started = time.monotonic()
    events = [
        (e["type"], e["object"].metadata.name)
        for e in watch.Watch().stream(
            core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1,
            _request_timeout=(5, 60),
        )
    ]  # fmt: skip
    assert events == [("ADDED", "after"), ("DELETED", "before")]
    # timeoutSeconds ended the stream on the server: not before the second was up, and the
    # client's 60 s read timeout (a stream left open) did not end it.
    assert time.monotonic() - started >= 1.0


def test_a_dropped_watch_resumes_from_the_last_event_without_gaps_or_repeats(
    emu: KubeApiEmulator, core: client.CoreV1Api
) -> None:
    rv = core.list_namespaced_pod("default").metadata.resource_version
    f = Follower(core.list_namespaced_pod, "default", resource_version=rv)
    core.create_namespaced_pod("default", pod_body("a"))
    first = f.next()
    assert (first["type"], first["object"].metadata.name) == ("ADDED", "a")
    since = max(r["seq"] for r in emu.requests())
    assert emu.drop_watches() == 1
    core.create_namespaced_pod("default", pod_body("b"))
    second = f.next()
    assert (second["type"], second["object"].metadata.name) == ("ADDED", "b")
    rewatch = emu.requests(since, verb="watch")
    assert (
        len(rewatch) == 1
        and f"resourceVersion={first['object'].metadata.resource_version}" in rewatch[0]["query"]
    )
    f.stop()
    core.create_namespaced_pod("default", pod_body("c"))  # the stream wakes and the thread sees stop
    rest = [(e["type"], e["object"].metadata.name) for e in iter(f.next, None)]
    assert rest in ([], [("ADDED", "c")])  # nothing repeated


def test_a_cut_connection_surfaces_as_a_protocol_error(emu: KubeApiEmulator, core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_pod("default").metadata.resource_version
    f = Follower(core.list_namespaced_pod, "default", resource_version=rv, _request_timeout=(2, 10))
    wait_until(lambda: emu.state()["watches"] == 1, what="the watch to open")
    emu.drop_watches(abort=True)
    assert f.next() is None
    assert isinstance(f.error, urllib3.exceptions.ProtocolError)


def test_history_too_old_is_410_expired(emu: KubeApiEmulator, core: client.CoreV1Api) -> None:
    old = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", pod_body("a"))
    emu.compact()
    with pytest.raises(ApiException) as e:  # with timeout_seconds the client does not retry
        list(
            watch.Watch().stream(core.list_namespaced_pod, "default", resource_version=old, timeout_seconds=5)
        )
    assert e.value.status == 410 and e.value.reason.startswith("Expired: too old resource version: ")
    since = max(r["seq"] for r in emu.requests())
    with pytest.raises(ApiException) as e:  # without, it retries once from the same version, then raises
        list(watch.Watch().stream(core.list_namespaced_pod, "default", resource_version=old))
    assert e.value.status == 410
    assert len(emu.requests(since, verb="watch")) == 2
    current = core.list_namespaced_pod("default").metadata.resource_version  # relist: a fresh start works
    assert (
        list(
            watch.Watch().stream(
                core.list_namespaced_pod, "default", resource_version=current, timeout_seconds=1
            )
        )
        == []
    )


def test_bounded_history_expires_old_versions(tmp_path: Path) -> None:
    with KubeApiEmulator(EmulatorConfig(history_limit=3, kubelet=False), tmp_path / "kc") as e:
        core = client.CoreV1Api(e.api_client())
        old = core.list_namespaced_config_map("default").metadata.resource_version
        for i in range(3):
            core.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
        events = list(
            watch.Watch().stream(
                core.list_namespaced_config_map, "default", resource_version=old, timeout_seconds=1
            )
        )
        assert [ev["object"].metadata.name for ev in events] == ["c0", "c1", "c2"]
        core.create_namespaced_config_map("default", {"metadata": {"name": "c3"}})
        with pytest.raises(ApiException) as exc:
            list(
                watch.Watch().stream(
                    core.list_namespaced_config_map, "default", resource_version=old, timeout_seconds=1
                )
            )
        assert exc.value.status == 410


def test_bookmarks_carry_the_latest_resource_version(emu: KubeApiEmulator, core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_pod("default").metadata.resource_version
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "elsewhere"}})
    w = watch.Watch()
    started = time.monotonic()
    events = []
    for e in w.stream(
        core.list_namespaced_pod,
        "default",
        resource_version=rv,
        allow_watch_bookmarks=True,
        timeout_seconds=3,
    ):
        events.append({**e, "at": time.monotonic() - started})
    # every 0.2 s, the last one 2 s before the deadline, none after: the watch cache's schedule,
    # checked on the schedule itself below (arrival times say only "not before it was due")
    assert len(events) >= 2 and {e["type"] for e in events} == {"BOOKMARK"}
    assert events[-1]["at"] >= 1.0 - 0.05
    assert bookmark_schedule(deadline=3.0, interval=0.2) == [0.2, 0.4, 0.6, 0.8, 1.0]
    assert events[-1]["raw_object"]["metadata"]["resourceVersion"] == cm.metadata.resource_version
    assert w.resource_version == cm.metadata.resource_version  # this client release reads bookmarks
    assert (
        list(
            watch.Watch().stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1)
        )
        == []
    )  # none unless asked


def test_a_bookmark_comes_two_seconds_before_the_timeout(tmp_path: Path) -> None:
    with KubeApiEmulator(EmulatorConfig(kubelet=False), tmp_path / "kc") as e:  # the default 60 s interval
        core = client.CoreV1Api(e.api_client())
        rv = core.list_namespaced_pod("default").metadata.resource_version
        started = time.monotonic()
        stamps = [
            (ev["type"], time.monotonic() - started)
            for ev in watch.Watch().stream(
                core.list_namespaced_pod,
                "default",
                resource_version=rv,
                allow_watch_bookmarks=True,
                timeout_seconds=3,
            )
        ]
        assert [t for t, _ in stamps] == ["BOOKMARK"] and stamps[0][1] >= 1.0 - 0.05
        assert bookmark_schedule(deadline=3.0, interval=60.0) == [1.0]


def bookmark_schedule(deadline: float, interval: float) -> list[float]:
    """When a watch opened at 0 with these settings sends its bookmarks, if each is sent on time."""
    out, now = [], 0.0
    while (now := _next_bookmark(now, deadline, interval)) < deadline:
        out.append(round(now, 6))
    return out


def test_selectors_turn_leaving_and_entering_into_deleted_and_added(
    emu: KubeApiEmulator, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", pod_body("p", labels={"team": "a"}))
    core.create_namespaced_pod("default", pod_body("q", labels={"team": "b"}))
    rv = core.list_namespaced_pod("default").metadata.resource_version
    by_label = Follower(
        core.list_namespaced_pod,
        "default",
        label_selector="team in (a),!gone",
        resource_version=rv,
        timeout_seconds=2,
    )
    on_node = Follower(
        core.list_pod_for_all_namespaces,
        field_selector="spec.nodeName=node-1,status.phase!=Failed",
        resource_version=rv,
        timeout_seconds=2,
    )
    core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"team": "b"}}})
    core.patch_namespaced_pod("q", "default", {"metadata": {"labels": {"team": "a"}}})
    core.create_namespaced_pod_binding("q", "default", binding("q", "node-1"), _preload_content=False)
    core.patch_namespaced_pod("q", "default", {"metadata": {"labels": {"gone": "yes"}}})
    label_events = [(e["type"], e["object"].metadata.name) for e in iter(by_label.next, None)]
    assert label_events == [("DELETED", "p"), ("ADDED", "q"), ("MODIFIED", "q"), ("DELETED", "q")]
    node_events = [(e["type"], e["object"].metadata.name) for e in iter(on_node.next, None)]
    assert node_events == [("ADDED", "q"), ("MODIFIED", "q")]
    listed = core.list_namespaced_pod("default", label_selector="team=a,gone")
    assert [p.metadata.name for p in listed.items] == ["q"]
    assert [
        p.metadata.name for p in core.list_namespaced_pod("default", label_selector="team notin (a)").items
    ] == ["p"]


def test_a_watch_without_a_version_starts_with_the_current_objects(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_body("a"))
    events = list(watch.Watch().stream(core.list_namespaced_pod, "default", timeout_seconds=1))
    assert [(e["type"], e["object"].metadata.name) for e in events] == [("ADDED", "a")]
    events = list(
        watch.Watch().stream(
            core.list_namespaced_pod,
            "default",
            send_initial_events=True,
            resource_version_match="NotOlderThan",
            allow_watch_bookmarks=True,
            timeout_seconds=1,
        )
    )
    assert [e["type"] for e in events][:2] == ["ADDED", "BOOKMARK"]
    assert events[1]["raw_object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_paged_lists_continue_and_expire(emu: KubeApiEmulator, core: client.CoreV1Api) -> None:
    for i in range(5):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
    first = core.list_namespaced_config_map("default", limit=2)
    assert [c.metadata.name for c in first.items] == ["c0", "c1"] and first.metadata.remaining_item_count == 3
    rest = core.list_namespaced_config_map("default", limit=10, _continue=first.metadata._continue)
    assert [c.metadata.name for c in rest.items] == ["c2", "c3", "c4"] and not rest.metadata._continue
    assert rest.metadata.resource_version == first.metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "later"}})
    emu.compact()
    with pytest.raises(ApiException) as e:
        core.list_namespaced_config_map("default", limit=2, _continue=first.metadata._continue)
    assert e.value.status == 410
