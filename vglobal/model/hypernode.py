"""HyperNodes (``topology.volcano.sh/v1alpha1``): manifests, label discovery, resolution into a tree.

A HyperNode is one network performance domain (usually one switch); a lower tier is a closer
network. Two sources, as in Volcano: HyperNode manifests (members by exactMatch / regexMatch /
labelMatch), and label discovery from the controller's ``networkTopologyTypes`` config. Either way
``resolve_hyper_nodes`` checks the tree (one parent per child, no cycles, children below their
parent's tier) and gives each HyperNode every node below it. Errors name the offending member.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vglobal.model.errors import Problems

API_VERSION = "topology.volcano.sh/v1alpha1"
KIND = "HyperNode"
HOSTNAME_LABEL = "kubernetes.io/hostname"
MEMBER_TYPES = ("Node", "HyperNode")
_NAME_CHARS = re.compile(r"[^a-z0-9.-]+")


@dataclass(frozen=True, slots=True)
class Member:
    type: str  # Node | HyperNode
    exact: str | None = None
    regex: str | None = None
    labels: Mapping[str, str] | None = None

    def matches(self, node: str, labels: Mapping[str, str]) -> bool:
        if self.exact is not None:
            return node == self.exact
        if self.regex is not None:
            # Go's regexp.MatchString: a match anywhere in the name, not a full match
            return re.search(self.regex, node) is not None
        if self.labels is not None:
            return all(labels.get(k) == v for k, v in self.labels.items())
        return False


@dataclass(frozen=True, slots=True)
class HyperNodeManifest:
    name: str
    tier: int
    tier_name: str = ""
    members: tuple[Member, ...] = ()


@dataclass(frozen=True, slots=True)
class ResolvedHyperNode:
    name: str
    tier: int
    tier_name: str = ""
    parent: str | None = None
    children: tuple[str, ...] = ()
    nodes: frozenset[str] = field(default_factory=frozenset)  # every node below it


def _member(p: Problems, where: str, raw: Any) -> Member | None:
    if not isinstance(raw, Mapping):
        p.add(where, "expected a mapping with type and selector")
        return None
    kind = raw.get("type")
    if kind not in MEMBER_TYPES:
        p.add(f"{where}.type", f"must be Node or HyperNode, not {kind!r}")
        return None
    sel = raw.get("selector")
    if not isinstance(sel, Mapping):
        p.add(f"{where}.selector", "required")
        return None
    given = [k for k in ("exactMatch", "regexMatch", "labelMatch") if sel.get(k) is not None]
    unknown = sorted(set(sel) - {"exactMatch", "regexMatch", "labelMatch"})
    if unknown:
        p.add(f"{where}.selector.{unknown[0]}", "unknown selector")
        return None
    if len(given) != 1:
        p.add(f"{where}.selector", "exactly one of exactMatch, regexMatch or labelMatch must be set")
        return None
    key = given[0]
    body = sel[key]
    if kind == "HyperNode" and key != "exactMatch":
        p.add(f"{where}.selector.{key}", "a HyperNode member can only use exactMatch")
        return None
    if not isinstance(body, Mapping):
        p.add(f"{where}.selector.{key}", "expected a mapping")
        return None
    if key == "exactMatch":
        name = body.get("name")
        if not isinstance(name, str) or not name:
            p.add(f"{where}.selector.exactMatch.name", "required")
            return None
        return Member(kind, exact=name)
    if key == "regexMatch":
        pattern = body.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            p.add(f"{where}.selector.regexMatch.pattern", "required")
            return None
        try:
            re.compile(pattern)
        except re.error as exc:
            p.add(f"{where}.selector.regexMatch.pattern", f"invalid regular expression {pattern!r}: {exc}")
            return None
        return Member(kind, regex=pattern)
    labels = body.get("matchLabels")
    if not isinstance(labels, Mapping) or not labels:
        p.add(f"{where}.selector.labelMatch.matchLabels", "required (a non-empty mapping)")
        return None
    return Member(kind, labels={str(k): str(v) for k, v in labels.items()})


def parse_hyper_node(p: Problems, where: str, doc: Any) -> HyperNodeManifest | None:
    """A full manifest (apiVersion, kind, metadata, spec) or the short form {name, tier, members}."""
    if not isinstance(doc, Mapping):
        p.add(where, "expected a HyperNode mapping")
        return None
    if "spec" in doc or "metadata" in doc:
        api = doc.get("apiVersion", API_VERSION)
        if api != API_VERSION:
            p.add(f"{where}.apiVersion", f"must be {API_VERSION}, not {api!r}")
        if doc.get("kind", KIND) != KIND:
            p.add(f"{where}.kind", f"must be {KIND}")
        name = (doc.get("metadata") or {}).get("name")
        spec = doc.get("spec") or {}
        name_path, spec_path = f"{where}.metadata.name", f"{where}.spec"
    else:
        name, spec = doc.get("name"), doc
        name_path, spec_path = f"{where}.name", where
    if not isinstance(name, str) or not name:
        p.add(name_path, "required")
        return None
    tier = spec.get("tier")
    if isinstance(tier, bool) or not isinstance(tier, int) or tier < 0:
        p.add(f"{spec_path}.tier", f"must be an integer >= 0, not {tier!r}")
        return None
    tier_name = spec.get("tierName") or ""
    raw_members = spec.get("members")
    if not isinstance(raw_members, list) or not raw_members:
        p.add(f"{spec_path}.members", "at least one member is required")
        return None
    members = [_member(p, f"{spec_path}.members[{i}]", m) for i, m in enumerate(raw_members)]
    return HyperNodeManifest(name, tier, str(tier_name), tuple(m for m in members if m is not None))


def parse_hyper_nodes(docs: Sequence[Any], where: str = "spec.hyperNodes") -> tuple[HyperNodeManifest, ...]:
    p = Problems()
    out: list[HyperNodeManifest] = []
    seen: set[str] = set()
    for i, doc in enumerate(docs):
        hn = parse_hyper_node(p, f"{where}[{i}]", doc)
        if hn is None:
            continue
        if hn.name in seen:
            p.add(f"{where}[{i}]", f'duplicate HyperNode "{hn.name}"')
        seen.add(hn.name)
        out.append(hn)
    p.raise_if_any()
    return tuple(out)


def _discovery_types(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The label-discovery types: ``{networkTopologyTypes}`` or Volcano's ``networkTopologyDiscovery``."""
    if "networkTopologyTypes" in config:
        types = config["networkTopologyTypes"]
        return types if isinstance(types, Mapping) else {}
    for source in config.get("networkTopologyDiscovery") or []:
        if isinstance(source, Mapping) and source.get("source") == "label":
            return _discovery_types(source.get("config") or {})
    return {}


def _hn_name(kind: str, tier: int, value: str) -> str:
    # Volcano appends a random suffix; ours is the label value so names are stable across restarts.
    return _NAME_CHARS.sub("-", f"hypernode-{kind}-tier{tier}-{value}".lower()).strip("-")


def discover_hyper_nodes(
    config: Mapping[str, Any], nodes: Mapping[str, Mapping[str, str]], where: str = "spec.hyperNodeDiscovery"
) -> tuple[HyperNodeManifest, ...]:
    """Label discovery: labels listed top-down, the last (hostname) dropped, so the label just above
    it is tier 1; per node walk up the tiers while the label exists."""
    p = Problems()
    types = _discovery_types(config)
    built: dict[str, tuple[int, str, set[str], set[str]]] = {}  # name -> (tier, tierName, nodes, kids)
    parent_of: dict[str, tuple[str, str]] = {}  # child -> (parent, the node that said so)
    for kind in sorted(types):
        entries = types[kind]
        base = f"{where}.networkTopologyTypes.{kind}"
        if not isinstance(entries, list) or not entries:
            p.add(base, "expected a list of {nodeLabel: ...} entries, top-down")
            continue
        labels: list[str] = []
        for i, e in enumerate(entries):
            label = e.get("nodeLabel") if isinstance(e, Mapping) else None
            if not isinstance(label, str) or not label:
                p.add(f"{base}[{i}].nodeLabel", "required")
            else:
                labels.append(label)
        tiers = list(reversed(labels))
        if tiers and tiers[0] == HOSTNAME_LABEL:
            tiers = tiers[1:]
        for node in sorted(nodes):
            node_labels = nodes[node]
            below: str | None = None
            for tier, label in enumerate(tiers, start=1):
                value = node_labels.get(label)
                if value is None:
                    break
                name = _hn_name(kind, tier, value)
                entry = built.setdefault(name, (tier, label, set(), set()))
                if below is None:
                    entry[2].add(node)
                else:
                    entry[3].add(below)
                    known = parent_of.setdefault(below, (name, node))
                    if known[0] != name:
                        p.add(
                            f"nodes[{node}].labels[{label}]",
                            f'HyperNode "{below}" would have two parents: "{known[0]}" '
                            f'(from node {known[1]}) and "{name}"',
                        )
                below = name
    p.raise_if_any()
    out = []
    for name in sorted(built, key=lambda n: (built[n][0], n)):
        tier, label, members, kids = built[name]
        out.append(
            HyperNodeManifest(
                name,
                tier,
                label,
                tuple(Member("Node", exact=n) for n in sorted(members))
                + tuple(Member("HyperNode", exact=k) for k in sorted(kids)),
            )
        )
    return tuple(out)


def resolve_hyper_nodes(
    manifests: Sequence[HyperNodeManifest], nodes: Mapping[str, Mapping[str, str]]
) -> tuple[ResolvedHyperNode, ...]:
    """The tree with node sets, sorted by (tier, name); ManifestError names each bad member."""
    p = Problems()
    by_name = {m.name: m for m in manifests}
    parent: dict[str, str] = {}
    node_owner: dict[str, str] = {}
    direct: dict[str, set[str]] = {m.name: set() for m in manifests}
    for m in manifests:
        for i, member in enumerate(m.members):
            where = f"HyperNode {m.name}: members[{i}]"
            if member.type == "HyperNode":
                child = member.exact or ""
                if child not in by_name:
                    p.add(where, f'unknown HyperNode "{child}"')
                elif child == m.name:
                    p.add(where, f'HyperNode "{child}" cannot be its own member')
                elif child in parent and parent[child] != m.name:
                    p.add(where, f'HyperNode "{child}" already has parent "{parent[child]}"')
                elif by_name[child].tier >= m.tier:
                    p.add(
                        where, f'HyperNode "{child}" (tier {by_name[child].tier}) must be below tier {m.tier}'
                    )
                else:
                    parent[child] = m.name
                continue
            for node in sorted(nodes):
                if not member.matches(node, nodes[node]):
                    continue
                owner = node_owner.setdefault(node, m.name)
                if owner != m.name:
                    p.add(where, f'node "{node}" already belongs to HyperNode "{owner}"')
                else:
                    direct[m.name].add(node)
    for start in sorted(parent):  # defensive: the tier rule above already rules cycles out
        seen = {start}
        cur = start
        while cur in parent:
            cur = parent[cur]
            if cur in seen:
                p.add(f"HyperNode {start}", "member cycle")
                break
            seen.add(cur)
    p.raise_if_any()
    children: dict[str, list[str]] = {m.name: [] for m in manifests}
    for child, par in parent.items():
        children[par].append(child)
    below: dict[str, frozenset[str]] = {}

    def collect(name: str) -> frozenset[str]:
        if name not in below:
            acc = set(direct[name])
            for kid in children[name]:
                acc |= collect(kid)
            below[name] = frozenset(acc)
        return below[name]

    ordered = sorted(manifests, key=lambda m: (m.tier, m.name))
    return tuple(
        ResolvedHyperNode(
            name=m.name,
            tier=m.tier,
            tier_name=m.tier_name,
            parent=parent.get(m.name),
            children=tuple(sorted(children[m.name])),
            nodes=collect(m.name),
        )
        for m in ordered
    )


def tier_of_name(hyper_nodes: Sequence[ResolvedHyperNode], tier_name: str) -> int | None:
    """``highestTierName`` -> tier (the lowest tier carrying that name), None if no HyperNode has it."""
    tiers = [h.tier for h in hyper_nodes if h.tier_name == tier_name]
    return min(tiers) if tiers else None
