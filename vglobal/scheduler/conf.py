"""The ``volcano-scheduler.conf`` YAML format: actions, tiers of plugins, action configurations.

The caller reads the file; this module only parses text. Actions and plugins not among the names
the caller gives (the keys of its tables) are errors that name the offending field, so a typo never
silently drops a plugin.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

_FLAG = re.compile(r"^enabled?[A-Z][A-Za-z]*$")
_NO_ARGS: Mapping[str, Any] = {}
_HIERARCHY = "enableHierarchy"


@dataclass(frozen=True, slots=True)
class PluginOption:
    name: str
    arguments: Mapping[str, Any] = field(default_factory=lambda: _NO_ARGS)
    # enableXxx flags as written in the conf (``enableJobOrder: false``); a missing flag is true.
    flags: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, flag: str) -> bool:
        """``flag`` is the suffix, e.g. ``"JobOrder"``; Volcano spells one flag ``enabledVictim``."""
        value = self.flags.get("enable" + flag, self.flags.get("enabled" + flag))
        return True if value is None else value


@dataclass(frozen=True, slots=True)
class SchedulerConf:
    actions: tuple[str, ...]
    tiers: tuple[tuple[PluginOption, ...], ...]
    configurations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # action -> args

    def plugin_names(self) -> tuple[str, ...]:
        return tuple(p.name for tier in self.tiers for p in tier)


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"{where}: expected true or false, got {value!r}")


def _plugin(raw: Any, where: str, known: Collection[str] | None) -> PluginOption:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: expected a mapping with a name")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}.name: missing plugin name")
    if known is not None and name not in known:
        raise ValueError(f"{where}.name: unknown plugin {name!r}")
    arguments = raw.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise ValueError(f"{where}.arguments: expected a mapping")
    flags: dict[str, bool] = {}
    for key, value in raw.items():
        if key in ("name", "arguments"):
            continue
        if not isinstance(key, str) or not _FLAG.match(key):
            raise ValueError(f"{where}.{key}: unknown plugin option")
        flags[key] = _bool(value, f"{where}.{key}")
    args = dict(arguments)
    if _HIERARCHY in args:
        # Volcano 1.13's release notes write it under arguments, its code reads it beside the name:
        # either place turns hierarchical queues on; both places must agree.
        value = _bool(args.pop(_HIERARCHY), f"{where}.arguments.{_HIERARCHY}")
        if flags.get(_HIERARCHY, value) != value:
            raise ValueError(f"{where}.arguments.{_HIERARCHY}: contradicts {where}.{_HIERARCHY}")
        flags[_HIERARCHY] = value
    return PluginOption(name=name, arguments=args, flags=flags)


def parse_conf(
    text: str, *, actions: Collection[str] | None, plugins: Collection[str] | None
) -> SchedulerConf:
    """Parse a volcano-scheduler.conf document; ValueError names the bad field.

    ``actions`` and ``plugins`` are the names it may use (None: not checked).
    """
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"scheduler conf is not valid YAML: {exc}") from None
    if not isinstance(doc, Mapping):
        raise ValueError("scheduler conf: expected a mapping with actions and tiers")
    actions_raw = doc.get("actions", "")
    if not isinstance(actions_raw, str):
        raise ValueError("actions: expected a comma-separated string")
    names = tuple(a.strip() for a in actions_raw.split(",") if a.strip())
    if not names:
        raise ValueError("actions: no action configured")
    for i, action in enumerate(names):
        if actions is not None and action not in actions:
            raise ValueError(f"actions[{i}]: unknown action {action!r}")
    tiers_raw = doc.get("tiers") or []
    if not isinstance(tiers_raw, list):
        raise ValueError("tiers: expected a list")
    tiers: list[tuple[PluginOption, ...]] = []
    for t, tier in enumerate(tiers_raw):
        entries = tier.get("plugins") if isinstance(tier, Mapping) else None
        if not isinstance(entries, list):
            raise ValueError(f"tiers[{t}].plugins: expected a list")
        tiers.append(tuple(_plugin(p, f"tiers[{t}].plugins[{i}]", plugins) for i, p in enumerate(entries)))
    configurations: dict[str, Mapping[str, Any]] = {}
    for c, item in enumerate(doc.get("configurations") or []):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise ValueError(f"configurations[{c}].name: missing action name")
        if actions is not None and item["name"] not in actions:
            raise ValueError(f"configurations[{c}].name: unknown action {item['name']!r}")
        args = item.get("arguments") or {}
        if not isinstance(args, Mapping):
            raise ValueError(f"configurations[{c}].arguments: expected a mapping")
        configurations[item["name"]] = dict(args)
    for key in doc:
        if key not in ("actions", "tiers", "configurations"):
            raise ValueError(f"{key}: unknown scheduler conf field")
    return SchedulerConf(actions=names, tiers=tuple(tiers), configurations=configurations)


DEFAULT_AGENT_CONF_TEXT = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.resources: nvidia.com/gpu
      binpack.resources.nvidia.com/gpu: 8
  - name: network-topology-aware
  - name: deviceshare
  - name: nodegroup
    enableHierarchy: true
    arguments:
      strict: false
"""

# DESIGN.md section 6.3. nodegroup holds a queue's jobs to the node groups its spec.affinity names
# (inherited down the tree, as the hub reads it); not strict, so a queue that names none keeps
# the nodes outside every group (on a cluster without node-group labels: all of them), as
# Volcano's plugin does with strict: false. binpack outweighs nodeorder's least-requested and
# balanced scores (at most 100 each) and weighs GPUs above cpu and memory: the agent fills the nodes
# a gang's GPUs already use before it opens an empty one, as the hub's fit assumed when it admitted
# the next gang there.
# Not checked against the tables here: the plugins import this module (a test checks the names).
DEFAULT_AGENT_CONF: SchedulerConf = parse_conf(DEFAULT_AGENT_CONF_TEXT, actions=None, plugins=None)


def node_group_mode(conf: SchedulerConf) -> str:
    """How the conf's nodegroup plugin confines queues that name no node group: "strict" (no node
    at all), "lenient" (nodes without a group label only), "" (no nodegroup predicate runs)."""
    for tier in conf.tiers:
        for p in tier:
            if p.name == "nodegroup" and p.enabled("Predicate"):
                strict = p.arguments.get("strict", True)
                return "lenient" if strict is False or str(strict).lower() == "false" else "strict"
    return ""
