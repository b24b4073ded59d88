"""The library's import boundary and layering (SPEC: what we write ourselves)."""

from __future__ import annotations

import ast
import pathlib
import re
import subprocess
import sys

from tests import sources

ROOT = pathlib.Path(__file__).resolve().parent.parent / "safetrace"

FORBIDDEN = ("torch.export", "torch._dynamo", "torch._export", "torch._subclasses",
             "torch.fx.experimental.symbolic_shapes", "torch.fx.experimental.proxy_tensor",
             "torch._functorch", "torch._guards")

# Lower layers never import higher ones.
LAYERS = {
    "errors": 0, "progress": 0, "symbolic": 1, "dims": 2, "pytree": 2, "meta": 3, "rules": 4, "trace": 5,
    "export": 6, "exporter": 6, "serialize": 6, "interop": 6, "cli": 7, "demo": 7, "__init__": 7,
}


def _imports(path: pathlib.Path) -> list[str]:
    tree = sources.tree(path)
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            names.extend(f"{node.module}.{a.name}" for a in node.names)
    return names


def _layer(path: pathlib.Path) -> int | None:
    rel = path.relative_to(ROOT).parts
    key = rel[0].removesuffix(".py")
    return LAYERS.get(key)


# The bridge out (SPEC: "the one exception"): only here, and only inside functions, so
# that nothing is imported until the user asks for a conversion.
INTEROP = ROOT / "interop"


def _top_level_imports(path: pathlib.Path) -> list[str]:
    """Imports that run when the module is imported (outside any function body)."""
    names: list[str] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Import):
                names.extend(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module:
                names.append(child.module)
                names.extend(f"{child.module}.{a.name}" for a in child.names)
            visit(child)

    visit(sources.tree(path))
    return names


def test_library_never_imports_torch_internals_it_replaces():
    bad = []
    for path in ROOT.rglob("*.py"):
        lazy_ok = INTEROP in path.parents
        names = _top_level_imports(path) if lazy_ok else _imports(path)
        for name in names:
            if name.startswith(FORBIDDEN):
                where = " (at module top: import it inside the function)" if lazy_ok else ""
                bad.append(f"{path.relative_to(ROOT)}: {name}{where}")
    assert not bad, "forbidden imports:\n" + "\n".join(bad)


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


_IMPORT_TEXT = re.compile(r"\b(?:from|import)\s+(" + "|".join(re.escape(f) for f in FORBIDDEN)
                          + r")\b")


def test_library_never_reaches_torch_internals_another_way():
    """Outside interop/: no attribute path into them (``torch.export.save`` imports
    torch.export on first use), no ``importlib.import_module``/``__import__`` of them, and
    no line reading like an import of them, in code or text (a line scanner cannot tell)."""
    bad = []
    for path in ROOT.rglob("*.py"):
        if INTEROP in path.parents:
            continue
        text = path.read_text()
        for node in ast.walk(sources.parse(text)):
            name = _dotted(node) if isinstance(node, ast.Attribute) else None
            if name and name.startswith(FORBIDDEN):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
            if isinstance(node, ast.Call) and node.args and \
                    (_dotted(node.func) or "").endswith(("import_module", "__import__")) and \
                    isinstance(node.args[0], ast.Constant) and \
                    str(node.args[0].value).startswith(FORBIDDEN):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.args[0].value!r}")
        for i, line in enumerate(text.splitlines(), 1):
            if _IMPORT_TEXT.search(line):
                bad.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()[:80]}")
    assert not bad, "torch internals reached outside interop/:\n" + "\n".join(bad)


def test_the_interop_boundary_is_really_checked():
    """The interop package does use torch.export internals (lazily); a top-level import of
    one there would be caught."""
    lazy = [n for p in INTEROP.rglob("*.py") for n in _imports(p) if n.startswith(FORBIDDEN)]
    assert lazy, "the interop package is expected to import torch.export lazily"
    probe = INTEROP / "torch_export.py"
    assert not [n for n in _top_level_imports(probe) if n.startswith(FORBIDDEN)]
    tree = "import torch\nfrom torch.export import ExportedProgram\ndef f():\n    import torch._dynamo\n"
    tmp = pathlib.Path(__file__).with_name("_arch_probe.tmp")
    try:
        tmp.write_text(tree)
        assert _top_level_imports(tmp) == ["torch", "torch.export",
                                           "torch.export.ExportedProgram"]
    finally:
        tmp.unlink()


def test_no_string_imports_of_forbidden_modules():
    bad = []
    for path in ROOT.rglob("*.py"):
        text = path.read_text()
        for mod in FORBIDDEN:
            if f'import_module("{mod}' in text or f"import_module('{mod}" in text:
                bad.append(f"{path.relative_to(ROOT)}: {mod}")
    assert not bad


def test_imports_flow_one_way():
    bad = []
    for path in ROOT.rglob("*.py"):
        mine = _layer(path)
        if mine is None:
            continue
        for name in _imports(path):
            if not name.startswith("safetrace."):
                continue
            other = LAYERS.get(name.split(".")[1])
            if other is not None and other > mine:
                bad.append(f"{path.relative_to(ROOT)} (layer {mine}) imports {name} "
                           f"(layer {other})")
    assert not bad, "\n".join(bad)


def test_symbolic_engine_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None; import safetrace.symbolic as s; "
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT.parent)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_symbolic_engine_passes_mypy_strict():
    import importlib.util

    import pytest

    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (it is in the dev extra)")
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
                          str(ROOT / "symbolic")], capture_output=True, text=True,
                         cwd=ROOT.parent)
    assert out.returncode == 0, out.stdout[-3000:]


def test_modules_stay_small():
    """One job per module: a module past the budget wants splitting (STYLE.md)."""
    budget = 650
    big = [f"{p.relative_to(ROOT)}: {n} lines" for p in ROOT.rglob("*.py")
           if (n := len(p.read_text().splitlines())) > budget]
    assert not big, "\n".join(big)


def test_fast_node_insertion_is_active_on_the_pinned_torch():
    """graph.add_node's direct path (fx.Graph internals) passed its import-time self-check;
    losing it on a torch upgrade would silently cost ~15 µs per traced op.  (Other torch
    releases in the package's range may lack it; the slow path is then used.)"""
    import pytest
    import torch

    from safetrace.trace import graph

    pinned = re.search(r"^torch==(\S+)", (ROOT.parent / "constraints.txt").read_text(), re.M)
    if pinned is None or torch.__version__.split("+")[0] != pinned.group(1):
        pytest.skip(f"torch {torch.__version__} is not the pinned release: the fast path's "
                    f"self-check may fail here by design")

    assert graph.FAST_NODES


# Every catalogue error outside safetrace/errors/ comes from a builder there (issue 20 item
# 4): no raise site constructs a catalogue class itself, with free text or any other
# argument (174 free-text sites before the conversion, 0 since).


def _catalogue_kinds() -> set[str]:
    import inspect

    import safetrace.errors as E

    return {n for n, v in vars(E).items()
            if inspect.isclass(v) and issubclass(v, E.StructuredError)}


def _constructions_in(source: str, kinds: set[str]) -> list[int]:
    """The lines where `source` calls a catalogue class (``X(...)`` or ``mod.X(...)``)."""
    lines = []
    for node in ast.walk(sources.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            if (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)) in kinds:
                lines.append(node.lineno)
    return sorted(lines)


def _catalogue_constructions() -> list[tuple[str, str]]:
    """(package part, "path:line") of each call of a catalogue class outside errors/."""
    kinds = _catalogue_kinds()
    sites = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if parts[0] != "errors":
            sites += [(parts[0], f"{path.relative_to(ROOT)}:{line}")
                      for line in _constructions_in(path.read_text(), kinds)]
    return sites


def test_catalogue_errors_are_built_by_their_builders():
    elsewhere = [s for _part, s in _catalogue_constructions()]
    assert not elsewhere, (
        f"catalogue errors constructed outside safetrace/errors/: {elsewhere}; add (or use) "
        f"a builder there that takes the facts and composes cause and fix")


def test_the_construction_check_sees_every_spelling():
    src = ("from safetrace import errors\nfrom safetrace.errors import SpecError\n"
           "raise SpecError(f'{x}: bad')\nraise errors.LoadError(msg)\n"
           "raise errors.spec_keys(['z'], ['x'], '')\nisinstance(e, errors.LoadError)\n")
    assert _constructions_in(src, _catalogue_kinds()) == [3, 4]
