"""Volcano's HyperNode discovery config: which sources run, how often, and with what settings.

Volcano's controller reads ``networkTopologyDiscovery``, a list of sources (``label``, ``ufm``,
``roce``); a source runs only with ``enabled: true`` (Go's zero value, so an omitted ``enabled`` is
off) and discovers again every ``interval`` (a Go duration, default one hour). The shorter
``networkTopologyTypes`` form alone is the label source, on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vglobal.model.duration import parse_duration
from vglobal.model.errors import ManifestError, Problems

KNOWN_SOURCES = ("label", "roce", "ufm")
DEFAULT_INTERVAL = 3600.0  # Volcano's DefaultDiscoveryInterval
# RoCE fabrics are read from LLDP neighbours published as node labels: one label per uplink,
# ``<prefix><interface>: <switch name>`` (what an LLDP exporter on each node can publish).
DEFAULT_ROCE_PREFIX = "lldp.vglobal.io/"


@dataclass(frozen=True)
class DiscoverySource:
    source: str
    interval: float = DEFAULT_INTERVAL
    config: Mapping[str, Any] = field(default_factory=dict)
    secret_ref: tuple[str, str] | None = None  # (namespace, name) holding username/password


@dataclass(frozen=True)
class DiscoveryPlan:
    sources: tuple[DiscoverySource, ...] = ()  # the enabled ones, in the file's order
    disabled: tuple[str, ...] = ()

    def get(self, source: str) -> DiscoverySource | None:
        return next((s for s in self.sources if s.source == source), None)

    @property
    def remote(self) -> tuple[DiscoverySource, ...]:
        """Sources read from a fabric manager over the network (fetched by the agent, not pure)."""
        return tuple(s for s in self.sources if s.source == "ufm")


def discovery_plan(config: Mapping[str, Any] | None, where: str = "hyperNodeDiscovery") -> DiscoveryPlan:
    """The enabled sources of a discovery config; ManifestError naming every bad field."""
    if not config:
        return DiscoveryPlan()
    if "networkTopologyDiscovery" not in config:
        if "networkTopologyTypes" in config:
            types = {"networkTopologyTypes": config["networkTopologyTypes"]}
            return DiscoveryPlan((DiscoverySource("label", config=types),))
        raise ManifestError.one(where, "expected networkTopologyDiscovery or networkTopologyTypes")
    entries = config["networkTopologyDiscovery"]
    base = f"{where}.networkTopologyDiscovery"
    if not isinstance(entries, list):
        raise ManifestError.one(base, "expected a list of discovery sources")
    p = Problems()
    sources: list[DiscoverySource] = []
    disabled: list[str] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        at = f"{base}[{i}]"
        if not isinstance(entry, Mapping):
            p.add(at, "expected a mapping with source, enabled, interval, config")
            continue
        source = entry.get("source")
        if source not in KNOWN_SOURCES:
            p.add(f"{at}.source", f"unknown discovery source {source!r} (known: {', '.join(KNOWN_SOURCES)})")
            continue
        if source in seen:
            p.add(f"{at}.source", f'discovery source "{source}" is listed twice')
            continue
        seen.add(source)
        enabled = entry.get("enabled", False)
        if not isinstance(enabled, bool):
            p.add(f"{at}.enabled", "expected true or false")
            continue
        parsed = _source(p, at, source, entry)
        if parsed is None:
            continue
        if enabled:
            sources.append(parsed)
        else:
            disabled.append(source)
    p.raise_if_any()
    return DiscoveryPlan(tuple(sources), tuple(disabled))


def _source(p: Problems, at: str, source: str, entry: Mapping[str, Any]) -> DiscoverySource | None:
    interval = DEFAULT_INTERVAL
    raw = entry.get("interval")
    if raw not in (None, ""):
        try:
            interval = parse_duration(str(raw))
        except ValueError as exc:
            p.add(f"{at}.interval", str(exc))
            return None
        if interval <= 0:
            interval = DEFAULT_INTERVAL  # Volcano: a non-positive interval means the default
    config = entry.get("config") or {}
    if not isinstance(config, Mapping):
        p.add(f"{at}.config", "expected a mapping")
        return None
    secret = _secret_ref(p, f"{at}.credentials", entry.get("credentials"))
    if secret is False:
        return None
    bad = len(p.items)
    if source == "ufm" and entry.get("enabled") is True:
        endpoint = config.get("endpoint")
        if not isinstance(endpoint, str) or not endpoint.strip():
            p.add(f"{at}.config.endpoint", "required: the UFM server's URL")
        if secret is None:
            p.add(f"{at}.credentials.secretRef", "required: the Secret holding the UFM username and password")
        skip = config.get("insecureSkipVerify", False)
        if not isinstance(skip, bool):
            p.add(f"{at}.config.insecureSkipVerify", "expected true or false")
    if source == "roce" and entry.get("enabled") is True:
        prefix = config.get("switchLabelPrefix", DEFAULT_ROCE_PREFIX)
        if "endpoint" in config and "switchLabelPrefix" not in config:
            p.add(
                f"{at}.config.endpoint",
                "a RoCE fabric manager's API is not read: RoCE discovery reads LLDP neighbours from node "
                f"labels (config.switchLabelPrefix, default {DEFAULT_ROCE_PREFIX!r})",
            )
        elif not isinstance(prefix, str) or not prefix:
            p.add(f"{at}.config.switchLabelPrefix", "expected a label key prefix")
    if len(p.items) > bad:
        return None
    return DiscoverySource(source, interval, dict(config), secret if isinstance(secret, tuple) else None)


def _secret_ref(p: Problems, at: str, raw: Any) -> tuple[str, str] | bool | None:
    """(namespace, name), None when absent, False when bad (a problem was added)."""
    if raw is None:
        return None
    ref = raw.get("secretRef") if isinstance(raw, Mapping) else None
    if not isinstance(ref, Mapping):
        p.add(f"{at}.secretRef", "expected {name, namespace}")
        return False
    name, namespace = ref.get("name"), ref.get("namespace", "default")
    if not isinstance(name, str) or not name:
        p.add(f"{at}.secretRef.name", "required")
        return False
    if not isinstance(namespace, str) or not namespace:
        p.add(f"{at}.secretRef.namespace", "expected a namespace")
        return False
    return (namespace, name)
