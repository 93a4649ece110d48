"""No import cycle among vglobal's modules.

The graph is grimp's (the library lint-imports checks the layer contracts with), and every import it
finds is an edge: at module level, inside a function, and under ``if TYPE_CHECKING:``. A lazy import
inside a function still makes its module depend on the other (it is how a cycle hides), and a
type-checking import ties the two together for mypy and for a reader. The generated protobuf code
(vglobal/api) is left out: it is not written by hand. A package's ``__init__`` counts only for what
it imports itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import grimp

GENERATED = "vglobal.api"


def _graph() -> dict[str, set[str]]:
    graph = grimp.build_graph("vglobal", cache_dir=None)
    ours = {m for m in graph.modules if m != GENERATED and not m.startswith(GENERATED + ".")}
    return {m: graph.find_modules_directly_imported_by(m) & ours for m in ours}


def strongly_connected(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's components (iterative) of more than one module, or one that imports itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(edges[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    found.append(sorted(component))
    return found


def one_cycle(edges: Mapping[str, set[str]], component: Sequence[str]) -> list[str]:
    """A shortest way from the component's first module back to itself, inside the component."""
    start, inside = component[0], set(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(edges[node] & inside):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if nxt not in previous:
                    previous[nxt] = node
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"{start} is in a component without a cycle")


def test_the_cycle_finder_sees_a_cycle_and_nothing_else() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert strongly_connected(edges) == [["a", "b", "c"], ["e"]]
    assert one_cycle(edges, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    assert one_cycle(edges, ["e"]) == ["e", "e"]


def test_no_import_cycle_among_vglobal_modules() -> None:
    edges = _graph()
    assert len(edges) > 100  # the whole package was read
    cycles = [" -> ".join(one_cycle(edges, c)) for c in strongly_connected(edges)]
    assert not cycles, "import cycles among vglobal modules:\n" + "\n".join(cycles)
