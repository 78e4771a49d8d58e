"""The import graph of safeshare has no cycle (docs/architecture.md, "Layers").

`lint-imports` (``make lint``) checks the layers contract of pyproject.toml: no
upward import between layers. This test adds what a layers contract cannot
see: a cycle between modules of one package.
"""

from __future__ import annotations

import pytest

grimp = pytest.importorskip("grimp")


def _cycles(graph: object) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    modules = sorted(graph.modules)  # type: ignore[attr-defined]
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}  # type: ignore[attr-defined]
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for m in modules:
        if m not in index:
            visit(m)
    return found


def test_no_import_cycles() -> None:
    graph = grimp.build_graph("safeshare", cache_dir=None)
    assert _cycles(graph) == []


def test_a_cycle_is_found() -> None:
    """The detector itself: a two-module cycle is reported."""

    class Graph:
        modules = frozenset({"a", "b", "c"})

        @staticmethod
        def find_modules_directly_imported_by(m: str) -> set[str]:
            return {"a": {"b"}, "b": {"a"}, "c": {"a"}}[m]

    assert _cycles(Graph()) == [["a", "b"]]
