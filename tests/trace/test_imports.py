"""The trace package's modules import each other one way: no cycle (function-level
imports included), imports at module top only, no private names across modules."""

from __future__ import annotations

import ast
import pathlib

from tests import sources

TRACE = pathlib.Path(__file__).resolve().parents[2] / "safetrace" / "trace"
PACKAGE = "safetrace.trace"


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for path in TRACE.rglob("*.py"):
        rel = path.relative_to(TRACE).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        out[".".join([PACKAGE, *parts])] = path
    return out


MODULES = _modules()


def _target(name: str) -> str | None:
    """The trace module `name` refers to (``safetrace.trace.x.y`` -> the longest module)."""
    while name and name.startswith(PACKAGE):
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(tree: ast.AST) -> list[tuple[ast.AST, str, list[str]]]:
    """(node, module, imported names) for every import statement, at any depth."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node, a.name, []) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append((node, node.module, [a.name for a in node.names]))
    return out


def _edges() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for mod, path in MODULES.items():
        for _, name, names in _imports(sources.tree(path)):
            targets = [_target(f"{name}.{n}") or _target(name) for n in names] or \
                [_target(name)]
            graph[mod].update(t for t in targets if t is not None and t != mod)
    return graph


def test_the_scan_sees_the_package():
    assert {"safetrace.trace.tracer", "safetrace.trace.dispatch",
            "safetrace.trace.handlers.casts", "safetrace.trace.registry"} <= set(MODULES)
    assert "safetrace.trace.registry" in _edges()["safetrace.trace.handlers.casts"]


def test_no_import_cycle_in_the_trace_package():
    graph = _edges()
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_imports_of_safetrace_modules_at_module_top_only():
    bad = []
    for mod, path in MODULES.items():
        tree = sources.tree(path)
        top = {id(n) for n in tree.body}
        for node, name, _ in _imports(tree):
            if name.startswith("safetrace") and id(node) not in top:
                bad.append(f"{mod}:{node.lineno} imports {name} inside a block")
    assert not bad, "\n".join(bad)


def test_no_private_name_imported_from_another_module():
    bad = []
    for mod, path in MODULES.items():
        for node, name, names in _imports(sources.tree(path)):
            if name.startswith("safetrace"):
                bad.extend(f"{mod}:{node.lineno} imports {n} from {name}"
                           for n in names if n.startswith("_") and n != "__future__")
    assert not bad, "\n".join(bad)
