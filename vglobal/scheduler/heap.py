"""A priority queue with Go ``container/heap`` semantics.

Volcano's ``util.PriorityQueue`` wraps ``container/heap``: items are never re-heapified when their
keys change (shares move as tasks are allocated), so the exact sift-up / sift-down steps decide
which item comes out next. ``heapq`` sifts differently, hence this port of the Go algorithm.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class GoHeap(Generic[T]):
    __slots__ = ("_items", "_less")

    def __init__(self, less: Callable[[T, T], bool]) -> None:
        self._items: list[T] = []
        self._less = less

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    def empty(self) -> bool:
        return not self._items

    def push(self, item: T) -> None:
        self._items.append(item)
        self._up(len(self._items) - 1)

    def pop(self) -> T:
        items = self._items
        n = len(items) - 1
        items[0], items[n] = items[n], items[0]
        self._down(0, n)
        return items.pop()

    def clone(self) -> GoHeap[T]:
        out: GoHeap[T] = GoHeap(self._less)
        out._items = list(self._items)
        return out

    def _up(self, j: int) -> None:
        items, less = self._items, self._less
        while j > 0:
            i = (j - 1) // 2
            if not less(items[j], items[i]):
                break
            items[i], items[j] = items[j], items[i]
            j = i

    def _down(self, i: int, n: int) -> None:
        items, less = self._items, self._less
        while True:
            j = 2 * i + 1
            if j >= n:
                break
            j2 = j + 1
            if j2 < n and less(items[j2], items[j]):
                j = j2
            if not less(items[j], items[i]):
                break
            items[i], items[j] = items[j], items[i]
            i = j
