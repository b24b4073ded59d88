"""The whole package's import graph (issue 11's "done when"): no cycle, function-level
imports included; safetrace modules imported inside functions only by the CLI, the demo
and the package face; no private name imported from another module."""

from __future__ import annotations

import ast
import functools
import pathlib

from tests import sources

ROOT = pathlib.Path(__file__).resolve().parent.parent / "safetrace"
# where an import inside a function is the point: commands load what they run
LAZY_OK = {"safetrace.cli", "safetrace.demo", "safetrace"}


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _absolute(name: str | None, level: int, here: str, package: bool) -> str:
    if not level:
        return name or ""
    base = here.split(".") if package else here.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


@functools.lru_cache(maxsize=None)  # three tests read every module's edges
def _edges(module: str) -> tuple[tuple[str, str, bool, int], ...]:
    """(imported module, imported name or '', inside a function, line) of `module`."""
    path = MODULES[module]
    tree = sources.tree(path)
    inner = {id(sub) for node in ast.walk(tree)
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
             for sub in ast.walk(node) if isinstance(sub, (ast.Import, ast.ImportFrom))}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out.append((a.name, "", id(node) in inner, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, module, path.name == "__init__.py")
            for a in node.names:
                full = f"{base}.{a.name}"
                target = full if full in MODULES else base
                out.append((target, "" if target == full else a.name, id(node) in inner,
                            node.lineno))
    return tuple(e for e in out if e[0] in MODULES and e[0] != module)


def test_no_import_cycle_in_the_package():
    graph = {m: {e[0] for e in _edges(m)} for m in MODULES}
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(m: str, stack: list[str]) -> bool:
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycle.extend(stack[stack.index(n):] + [m, n] if n in stack else [m, n])
                return True
            if n not in state and visit(n, stack + [m]):
                return True
        state[m] = 2
        return False

    for m in sorted(MODULES):
        if m not in state and visit(m, []):
            break
    assert not cycle, "import cycle: " + " -> ".join(dict.fromkeys(cycle))


def test_function_level_imports_only_in_commands_and_the_face():
    bad = [f"{m}:{line} imports {target}" for m in MODULES if m not in LAZY_OK
           for target, _, inside, line in _edges(m) if inside]
    assert not bad, "\n".join(bad)


def test_no_private_name_imported_from_another_module():
    bad = [f"{m}:{line} imports {target}.{name}" for m in MODULES
           for target, name, _, line in _edges(m) if name.startswith("_")]
    assert not bad, "\n".join(bad)


def test_the_checker_sees_the_package():
    assert "safetrace.trace.tracer" in MODULES and _edges("safetrace.trace.tracer")
