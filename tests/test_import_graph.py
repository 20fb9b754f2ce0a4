"""No import cycles in src/agentlog: layers point one way (DESIGN.md).

Walks every module's imports (top-level and inside functions, but not
those under ``if TYPE_CHECKING:``, which never run) and fails on a cycle,
naming it. A function-level import placed to dodge a cycle counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import agentlog

PACKAGE = Path(agentlog.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, name: str, modules: set[str]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (child.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in child.names)
            visit(child)

    visit(ast.parse(path.read_text()))
    graph = set()
    for target in found:
        # "from .x import y" is an edge to module x.y if that is a module, else to x.
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            graph.add(target)
    return graph


def import_graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    graph = {name: _imports(path, name, modules) for name, path in paths.items()}
    # A package's __init__ importing its own submodules is how packages work;
    # a submodule importing its package's __init__ back is the cycle to catch.
    for name in graph:
        graph[name] = {t for t in graph[name] if not t.startswith(name + ".")}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_package_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_backends_never_import_the_layers_above_the_seam():
    above = {
        "agentlog.session",
        "agentlog.store",
        "agentlog.timeline",
        "agentlog.compaction",
        "agentlog.lifecycle",
        "agentlog.sync",
        "agentlog.cli",
        "agentlog.agent",
    }
    for name, targets in import_graph().items():
        if name.startswith("agentlog.backends"):
            assert not {t for t in targets if any(t == a or t.startswith(a + ".") for a in above)}, name
