"""What a job (or its queue, inherited) asks of placement beyond the clusters it may use: the
cluster taints it tolerates, the datasets it reads and how strictly it wants them local, how long
it waits for a preferred cluster before spilling over, and binpack or spread. Read from
annotations; the hub's placement file (placement_config.py) says which clusters are tainted, where
datasets live and what each cluster costs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from vglobal.model.duration import parse_duration
from vglobal.model.errors import Problems, key_path

TAINTS_KEY = "vglobal.io/taints"  # a cluster label (or the placement file) naming its taints
TOLERATIONS_ANNOTATION = "vglobal.io/tolerations"
DATASETS_ANNOTATION = "vglobal.io/datasets"
DATA_LOCALITY_ANNOTATION = "vglobal.io/data-locality"
PREFERENCE_WAIT_ANNOTATION = "vglobal.io/preference-wait"
PLACEMENT_ANNOTATION = "vglobal.io/placement"
DATASET_LABEL_PREFIX = "vglobal.io/dataset."  # a cluster label vglobal.io/dataset.<name> holds <name>

ANNOTATIONS = (
    TOLERATIONS_ANNOTATION,
    DATASETS_ANNOTATION,
    DATA_LOCALITY_ANNOTATION,
    PREFERENCE_WAIT_ANNOTATION,
    PLACEMENT_ANNOTATION,
)
EFFECTS = ("NoSchedule", "PreferNoSchedule")
LOCALITIES = ("required", "preferred")


@dataclass(frozen=True, slots=True)
class Taint:
    """A cluster taint: NoSchedule keeps jobs that do not tolerate it off the cluster;
    PreferNoSchedule lets them in only when the untainted clusters cannot hold them."""

    key: str
    value: str
    effect: str

    @property
    def text(self) -> str:
        return f"{self.key}{'=' + self.value if self.value else ''}:{self.effect}"


# The default rule (--keep-accelerators): a cluster offering an accelerator bears this taint, and
# a job asking for one tolerates it, so work that asks for none goes there only when the others
# are full.
ACCELERATOR_TAINT = Taint("vglobal.io/accelerators", "", "PreferNoSchedule")


@dataclass(frozen=True, slots=True)
class Toleration:
    """``key``, ``key=value``, ``key:Effect``, ``key=value:Effect`` or ``*`` (every taint)."""

    key: str
    value: str | None = None
    effect: str | None = None

    def tolerates(self, t: Taint) -> bool:
        return (
            self.key in ("*", t.key)
            and (self.value is None or self.value == t.value)
            and (self.effect is None or self.effect == t.effect)
        )

    @property
    def text(self) -> str:
        out = self.key + ("" if self.value is None else f"={self.value}")
        return out + ("" if self.effect is None else f":{self.effect}")


def _items(text: str) -> list[str]:
    return [i.strip() for i in text.split(",") if i.strip()]


def parse_taints(p: Problems, where: str, text: str) -> tuple[Taint, ...]:
    """``key[=value]:Effect`` items, comma-separated."""
    out = []
    for item in _items(text):
        body, sep, effect = item.rpartition(":")
        key, _, value = body.partition("=")
        if not sep or not key.strip() or effect not in EFFECTS:
            p.add(where, f'"{item}" is not a taint of the form key[=value]:NoSchedule|PreferNoSchedule')
            continue
        out.append(Taint(key.strip(), value.strip(), effect))
    return tuple(out)


def parse_tolerations(p: Problems, where: str, text: str) -> tuple[Toleration, ...]:
    out = []
    for item in _items(text):
        body, effect = item, None
        if ":" in item:
            body, _, effect = item.rpartition(":")
            if effect not in EFFECTS:
                p.add(where, f'"{item}": the effect must be NoSchedule or PreferNoSchedule')
                continue
        key, sep, value = body.partition("=")
        if not key.strip():
            p.add(where, f'"{item}" is not a toleration of the form key[=value][:Effect]')
            continue
        out.append(Toleration(key.strip(), value.strip() if sep else None, effect))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class PlacementPrefs:
    tolerations: tuple[Toleration, ...] = ()
    datasets: tuple[str, ...] = ()
    locality: str = ""  # "required" or "preferred" ("" = preferred when it names datasets)
    wait: float = 0.0  # seconds it waits for a preferred cluster before spilling over
    placement: str = ""  # "binpack" or "spread"; "" = the hub's --placement

    def __bool__(self) -> bool:
        return bool(self.tolerations or self.datasets or self.locality or self.wait or self.placement)

    @property
    def required(self) -> bool:
        return bool(self.datasets) and self.locality == "required"

    def tolerates(self, t: Taint) -> bool:
        return any(x.tolerates(t) for x in self.tolerations)

    def or_else(self, other: PlacementPrefs) -> PlacementPrefs:
        """Each setting from self, else from ``other`` (a job's own over its queue's)."""
        return PlacementPrefs(
            self.tolerations or other.tolerations,
            self.datasets or other.datasets,
            self.locality or other.locality,
            self.wait or other.wait,
            self.placement or other.placement,
        )

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.tolerations:
            out["tolerations"] = [t.text for t in self.tolerations]
        if self.datasets:
            out["datasets"] = list(self.datasets)
        if self.locality:
            out["locality"] = self.locality
        if self.wait:
            out["wait"] = self.wait
        if self.placement:
            out["placement"] = self.placement
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, object] | None) -> PlacementPrefs:
        if not data:
            return NO_PREFS
        p = Problems()  # stored values were checked when applied
        wait = data.get("wait") or 0.0
        return cls(
            parse_tolerations(p, "", ",".join(str(t) for t in data.get("tolerations") or ())),  # type: ignore[attr-defined]
            tuple(str(d) for d in data.get("datasets") or ()),  # type: ignore[attr-defined]
            str(data.get("locality") or ""),
            float(wait),  # type: ignore[arg-type]
            str(data.get("placement") or ""),
        )


NO_PREFS = PlacementPrefs()


def read_prefs(p: Problems, annotations: Mapping[str, str]) -> PlacementPrefs:
    """The placement annotations of a job or queue, each error naming its annotation."""

    def where(key: str) -> str:
        return key_path("metadata.annotations", key)

    get = annotations.get
    tolerations = parse_tolerations(p, where(TOLERATIONS_ANNOTATION), get(TOLERATIONS_ANNOTATION) or "")
    datasets = tuple(dict.fromkeys(_items(get(DATASETS_ANNOTATION) or "")))
    locality = (get(DATA_LOCALITY_ANNOTATION) or "").strip()
    if locality and locality not in LOCALITIES:
        p.add(where(DATA_LOCALITY_ANNOTATION), f'"{locality}" is not one of required, preferred')
        locality = ""
    wait = 0.0
    if text := (get(PREFERENCE_WAIT_ANNOTATION) or "").strip():
        try:
            wait = parse_duration(text)
        except ValueError:
            p.add(where(PREFERENCE_WAIT_ANNOTATION), f'invalid duration "{text}" (use Go form like "10m")')
        if wait < 0:
            p.add(where(PREFERENCE_WAIT_ANNOTATION), f'"{text}" is negative')
            wait = 0.0
    placement = (get(PLACEMENT_ANNOTATION) or "").strip()
    if placement and placement not in ("binpack", "spread"):
        p.add(where(PLACEMENT_ANNOTATION), f'"{placement}" is not one of binpack, spread')
        placement = ""
    return PlacementPrefs(tolerations, datasets, locality, wait, placement)
