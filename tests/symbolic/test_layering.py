"""The engine's modules import each other in one direction (parsed with ``ast``): no cycle,
counting imports inside functions and under ``TYPE_CHECKING`` too; imports only at module
top; no private name imported from another module."""

from __future__ import annotations

import ast
import pathlib

from tests import sources

PKG = "safetrace.symbolic"
ROOT = pathlib.Path(__file__).resolve().parents[2] / "safetrace" / "symbolic"
MODULES = {p.stem: p for p in ROOT.glob("*.py")}


def _target(module: str, name: str | None = None) -> str | None:
    """The engine module an import refers to (``__init__`` for the package face)."""
    if module == PKG:
        return name if name in MODULES else "__init__"
    if module.startswith(PKG + "."):
        return module[len(PKG) + 1:].split(".")[0]
    return None


def _imports(tree: ast.AST) -> list[tuple[ast.AST, str, str | None]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                t = _target(a.name)
                if t:
                    out.append((node, t, None))
        elif isinstance(node, ast.ImportFrom) and node.module:
            module = node.module if not node.level else f"{PKG}.{node.module}"
            for a in node.names:
                t = _target(module, a.name)
                if t:
                    out.append((node, t, a.name))
    return out


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        tree = sources.tree(path)
        graph[name] = {t for _, t, _ in _imports(tree) if t != name}
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[str]:
    """Every back edge of a depth-first walk, as the cycle it closes."""
    state: dict[str, int] = {}
    cycles: list[str] = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                path = stack + [m]
                cycles.append(" -> ".join(path[path.index(n):] + [n]))
            elif n not in state:
                visit(n, stack + [m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
    return cycles


def test_no_import_cycles() -> None:
    cycles = find_cycles(_graph())
    assert not cycles, "import cycles in safetrace.symbolic:\n" + "\n".join(cycles)


def test_only_the_face_imports_the_package() -> None:
    graph = _graph()
    assert not [m for m, deps in graph.items() if "__init__" in deps]


def test_imports_at_module_top_only() -> None:
    bad = []
    for name, path in MODULES.items():
        tree = sources.tree(path)
        top = {id(n) for n in tree.body}
        for node, target, _ in _imports(tree):
            if id(node) not in top:
                bad.append(f"{name}: line {node.lineno} imports {target} inside a block")
    assert not bad, "\n".join(bad)


def test_no_private_names_across_modules() -> None:
    bad = []
    for name, path in MODULES.items():
        for node, target, imported in _imports(sources.tree(path)):
            if imported and imported.startswith("_") and target != name:
                bad.append(f"{name}: {imported} from {target}")
    assert not bad, "\n".join(bad)


def test_the_checker_sees_cycles_and_every_import() -> None:
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a -> b -> c -> a"]
    assert find_cycles({"a": {"b"}, "b": set()}) == []
    tree = ast.parse("from safetrace.symbolic import env\nimport safetrace.symbolic.expr as E\n"
                     "def f():\n    from safetrace.symbolic.decide import x\n")
    assert {t for _, t, _ in _imports(tree)} == {"env", "expr", "decide"}
