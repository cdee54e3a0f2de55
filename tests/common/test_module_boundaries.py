"""common/ has clear boundaries: no module imports another that (directly or not) imports it back."""

from __future__ import annotations

import ast

from conftest import ROOT

COMMON = ROOT / "streaming_tutorial" / "common"


def imports_of(path) -> set[str]:
    """The common modules ``path`` imports (``from . import x``, ``from .x import y``), anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found.update(
                [node.module.split(".")[0]] if node.module else [alias.name for alias in node.names]
            )
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path [a, b, ..., a], or None."""
    state: dict[str, str] = {}

    def visit(module: str, trail: list[str]) -> list[str] | None:
        state[module] = "open"
        for dependency in sorted(graph.get(module, ())):
            if state.get(dependency) == "open":
                return trail[trail.index(dependency) :] + [dependency]
            if dependency not in state and (cycle := visit(dependency, trail + [dependency])):
                return cycle
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module, [module])):
            return cycle
    return None


def test_common_has_no_import_cycle():
    graph = {path.stem: imports_of(path) for path in COMMON.glob("*.py")}
    assert find_cycle(graph) is None


def test_the_cycle_finder_finds_an_indirect_cycle():
    assert find_cycle({"kafka": {"config"}, "kafka_broker": {"kafka"}}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
