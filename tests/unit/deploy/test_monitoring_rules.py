"""The Grafana dashboard and the alert rules in deploy/monitoring name only metrics the hub or the
agent export: a renamed or removed metric would leave a panel empty and an alert silent."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from vglobal.agent import metrics as agent_metrics
from vglobal.hub import metrics as hub_metrics

MONITORING = Path(__file__).parents[3] / "deploy" / "monitoring"
# A metric name in PromQL: not a function (followed by "("), not inside quotes or {} or [] or a
# label list after by/without.
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_SUFFIXES = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_sum", "_count", "_created")}
_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "bool",
    "offset",
}


def exported(registry: CollectorRegistry) -> set[str]:
    """Every sample name a registry may expose, labelled series not set yet included."""
    names = set()
    for family in registry.collect():
        names.add(family.name)
        names.update(family.name + s for s in _SUFFIXES.get(family.type, ()))
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names an expression selects."""
    text = re.sub(r'"[^"]*"', "", expr)
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    out = set()
    for m in _NAME.finditer(text):
        rest = text[m.end() :].lstrip()
        if rest.startswith("(") or m.group() in _KEYWORDS or re.fullmatch(r"[0-9.e]+", m.group()):
            continue
        if m.start() > 0 and (text[m.start() - 1].isdigit() or text[m.start() - 1] == "."):
            continue
        out.add(m.group())
    return out


def _exprs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "expr" and isinstance(v, str):
                yield v
            else:
                yield from _exprs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _exprs(v)


def used() -> dict[str, set[str]]:
    """Per file, the metric names its expressions use."""
    docs = {
        "grafana-dashboard.json": json.loads((MONITORING / "grafana-dashboard.json").read_text()),
        "alerts.yaml": yaml.safe_load((MONITORING / "alerts.yaml").read_text()),
    }
    return {f: {n for e in _exprs(d) for n in metric_names(e)} for f, d in docs.items()}


def test_every_metric_the_dashboard_and_alerts_use_is_exported() -> None:
    known = exported(hub_metrics.REGISTRY) | exported(agent_metrics.REGISTRY)
    for file, names in used().items():
        assert names, f"{file}: no expression found"
        assert names <= known, f"{file} uses metrics nobody exports: {sorted(names - known)}"


def test_the_alerts_cover_starved_queues_dead_clusters_jobs_that_never_fit_and_slow_cycles() -> None:
    names = used()["alerts.yaml"]
    assert {
        "vglobal_queue_waiting_too_long_jobs",
        "vglobal_cluster_ready",
        "vglobal_queue_never_fit_jobs",
        "vglobal_dispatch_cycle_seconds_bucket",
    } <= names


def test_the_name_reader_finds_names_and_skips_functions_labels_and_ranges() -> None:
    expr = 'histogram_quantile(0.99, sum by (le) (rate(a_b_bucket{x="y_z"}[5m]))) / on (c) c_d > 2e3'
    assert metric_names(expr) == {"a_b_bucket", "c_d"}
    assert "vglobal_no_such_metric" not in exported(hub_metrics.REGISTRY)
