"""Who writes an Env's attributes from outside ``safetrace/symbolic``.

Computations on symbolic sizes are replayed across exports under the name of the
environment's state (``symbolic/history.py``, ``trace/memo.py``).  That is sound only
while every change that can alter an answer goes through a described Env method, is named
with ``Env.note`` (the configuration the tracer notes before a trace), or gives a unique
name.  A write to an Env attribute from elsewhere can break that silently, so each one is
listed here with why it is safe; a new one fails this test until it is looked at.
"""

from __future__ import annotations

import ast
import pathlib

from tests import sources

ROOT = pathlib.Path(__file__).resolve().parents[1] / "safetrace"

# (module, attribute): why the write cannot change a replayed answer
KNOWN = {
    ("exporter/api.py", "origin_provider"): "names where a question came from (messages)",
    ("exporter/api.py", "precondition_probe"): "set before the trace; noted by the tracer",
    ("exporter/api.py", "flipped"): "set before the trace; noted by the tracer",
    ("exporter/api.py", "subgraph_probe"): "set before the trace, one function for every "
                                           "export (the tracer's scope depth)",
    ("exporter/api.py", "on_undecided"): "set before the trace; noted by the tracer",
    ("exporter/dynamic.py", "flexible"): "set before the trace; noted by the tracer",
    ("exporter/dynamic.py", "named"): "set before the trace; noted by the tracer",
    ("exporter/caught.py", "raised"): "records questions already answered by a policy "
                                      "(a unique state name)",
    ("trace/tracer.py", "on_settled"): "emits the assert of an answer already recorded",
    ("trace/tracer.py", "settle_policy"): "its answers give a unique state name",
    ("rules/common.py", "precondition_depth"): "part of each guard the name records",
    ("rules/common.py", "required_from"): "part of each guard the name records",
    ("rules/common.py", "required_sizes"): "part of each guard the name records",
    ("meta/symtypes.py", "int_cls"): "set once per env before use; noted by the tracer",
    ("meta/symtypes.py", "bool_cls"): "set once per env before use",
    ("meta/symtypes.py", "float_cls"): "set once per env before use",
    ("meta/symtypes.py", "opaque_float"): "set once per env before use; noted by the tracer",
    ("serialize/scratch.py", "enumerate_up_to"): "the loader's env: shares no state names",
    ("serialize/scratch.py", "case_decisions"): "the loader's env: shares no state names",
    ("serialize/scratch.py", "positive_factors"): "the loader's env: shares no state names",
    ("serialize/scratch.py", "shares_state_names"): "turns naming off for the loader's env",
    ("exporter/eager_raises.py", "shares_state_names"): "turns naming off for a new env "
                                                        "that proves a condition fails on "
                                                        "an interval (no trace reads it)",
    ("exporter/sides.py", "shares_state_names"): "turns naming off for a new env that proves "
                                                 "one implication (no trace reads it)",
    ("interop/implication.py", "shares_state_names"): "turns naming off for a new env that "
                                                    "proves a retrace's condition implied "
                                                    "(no trace reads it)",
    ("interop/unbacked.py", "pending_fresh_unbacked_symbols"): "torch's ShapeEnv, not ours",
    ("trace/hops/ops.py", "symbols"): "a symbol's origin (named in messages only)",
    ("trace/script_graph.py", "setdefault"): "a TorchScript interpreter's dict, not an Env",
}
_MUTATORS = {"append", "add", "update", "discard", "clear", "extend", "remove", "pop",
             "setdefault", "insert"}


def _is_env(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "env") or \
        (isinstance(node, ast.Attribute) and node.attr == "env")


def _writes(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _MUTATORS:
            targets = [node.func.value]
        for t in targets:
            for part in ast.walk(t):
                while isinstance(part, ast.Subscript):
                    part = part.value
                if isinstance(part, ast.Attribute) and _is_env(part.value):
                    found.add(part.attr)
    return found


def test_every_env_write_outside_symbolic_is_known():
    seen: set[tuple[str, str]] = set()
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("symbolic/"):
            continue
        for attr in _writes(sources.tree(path)):  # (parsed once per process)
            seen.add((rel, attr))
    new = sorted(seen - set(KNOWN))
    assert not new, (
        f"new writes to Env attributes outside safetrace/symbolic: {new}. A change the "
        "state name does not describe can make trace/memo.py replay a wrong answer across "
        "exports: make it through a described Env method, name it with env.note(...) before "
        "the trace, or give a unique name (symbolic/history.unique); then list it in KNOWN "
        "with the reason")
    assert not sorted(set(KNOWN) - seen), "KNOWN lists writes that no longer exist"
