"""What topology.py and partitions.py pack a gang through when more than resources must fit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from vglobal.admission.fit.candidates import Candidates
from vglobal.admission.fit.gang import PreparedGang, Shape
from vglobal.admission.fit.index import IntArray
from vglobal.admission.fit.placement import Clusters, Held, Placement


class Packer(Protocol):
    """Packs a gang's pods onto some nodes of one cluster with more than their resources in mind
    (devices.CardPacker: their GPU cards); topology.py and partitions.py pack through it."""

    def start(self, c: int) -> None:
        """A new attempt on cluster c: what earlier calls took is forgotten."""

    def choose(self, c: int) -> None:
        """Cluster c's last attempt that fitted is the one to keep."""

    def save(self) -> object:
        """What this attempt took so far, for ``restore`` (a search that backtracks)."""

    def restore(self, mark: object) -> None:
        """Back to what ``save`` saw."""

    def __call__(self, free: IntArray, rows: IntArray, shapes: Sequence[Shape]) -> IntArray | None:
        """``free`` (a line per node of ``rows``) after the shapes' pods, or None if they do not fit."""

    def place(
        self, clusters: Clusters, cand: Candidates, gang: PreparedGang, held: Mapping[int, Held]
    ) -> tuple[int, Placement] | None:
        """The first cluster in order that holds the gang, and how (Clusters.place's contract)."""
