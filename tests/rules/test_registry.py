"""The rule registry: one decorator keyed by op objects, no silent overwrites, derived
in-place forms, rules named after their ops, and a rules package without tangles."""

from __future__ import annotations

import ast
import collections
import pathlib

import pytest
import torch

from safetrace.errors import OpShapeError
from safetrace.meta import TensorMeta
from safetrace.rules import RULES, get_rule, register_shape_rule, rule
from safetrace.rules.registry import FAMILY, inplace_form, op_name

from tests import sources

aten = torch.ops.aten
RULES_DIR = pathlib.Path(__file__).resolve().parents[2] / "safetrace" / "rules"
# an op no rule covers (the rule-less example in tests/export and tests/zoo)
FREE = aten.special_bessel_j0.default


@pytest.fixture
def scratch():
    """Registrations made in a test are undone afterwards."""
    saved = dict(RULES), dict(FAMILY)
    yield
    RULES.clear()
    RULES.update(saved[0])
    FAMILY.clear()
    FAMILY.update(saved[1])


def meta(*shape, dtype=torch.float32):
    return TensorMeta(shape, dtype, torch.device("cpu"))


def test_a_second_rule_for_an_op_raises(scratch):
    with pytest.raises(ValueError, match=r"aten.add.Tensor already has a shape rule"):
        rule(aten.add.Tensor)(lambda self, other, alpha=1: self)
    assert get_rule(aten.add.Tensor).__name__ == "add_Tensor"


def test_a_clash_in_a_derived_in_place_form_raises_and_registers_nothing(scratch):
    with pytest.raises(ValueError, match="aten.relu_.default already has a shape rule"):
        rule(FREE, inplace=(aten.relu_.default,))(lambda self: self.like())
    assert get_rule(FREE) is None


def test_rules_are_keyed_by_op_objects_not_strings():
    with pytest.raises(TypeError, match="operator objects"):
        rule("aten.max.other")
    with pytest.raises(TypeError, match="operator objects"):
        rule(torch.max)


def test_inplace_true_needs_an_in_place_form(scratch):
    with pytest.raises(ValueError, match="no in-place form"):
        rule(FREE, inplace=True)(lambda self: self.like())


def test_derived_in_place_rule_keeps_self_and_rejects_what_does_not_fit_back():
    add_ = get_rule(aten.add_.Tensor)
    assert add_.__name__ == "add_"
    out = add_(meta(2, 3), meta(3))
    assert out.shape == (2, 3) and out.dtype is torch.float32
    with pytest.raises(OpShapeError, match="doesn't match the broadcast shape"):
        add_(meta(3), meta(2, 3))  # broadcasting would grow self
    with pytest.raises(OpShapeError, match="can't be cast"):
        add_(meta(3, dtype=torch.int64), meta(3))  # int self cannot hold a float sum


def test_explicit_in_place_pairs_where_overload_names_differ():
    # pow_.Scalar is pow.Tensor_Scalar in place, not pow.Scalar (a scalar base)
    assert inplace_form(aten.pow.Scalar) is aten.pow_.Scalar
    assert get_rule(aten.pow_.Scalar)(meta(3), 2).shape == (3,)
    assert get_rule(aten.floor_divide_.Tensor)(meta(2, 3), meta(3)).shape == (2, 3)
    assert get_rule(aten.ldexp_.default).__name__ == "ldexp_"


def test_in_place_forms_with_their_own_checks_are_not_derived():
    # a complex tensor cannot hold its real abs; float_power_ needs a double self
    with pytest.raises(OpShapeError, match="In-place abs"):
        get_rule(aten.abs_.default)(meta(3, dtype=torch.complex64))
    with pytest.raises(OpShapeError, match="float_power_"):
        get_rule(aten.float_power_.Scalar)(meta(3), 2.0)


def test_public_registration_may_replace_a_rule(scratch):
    @register_shape_rule(FREE)
    def first(self):
        return self.like()

    @register_shape_rule(FREE)
    def second(self):
        return self.like(dtype=torch.float64)

    assert get_rule(FREE) is second
    assert FAMILY[FREE] == __name__


def _normalized(name: str) -> str:
    return name.lower().strip("_").removesuffix("_rule").removesuffix("_inplace")


def test_every_rule_is_named_after_one_of_its_ops():
    ops = collections.defaultdict(list)
    for op, fn in RULES.items():
        ops[fn].append(op)
    bad = []
    for fn, its_ops in ops.items():
        name = _normalized(fn.__name__)
        names = {_normalized(op_name(op)) for op in its_ops}
        names |= {_normalized(str(op).split(".", 1)[1].replace(".", "_")) for op in its_ops}
        if not any(n in name or name in n for n in names):
            bad.append(f"{FAMILY[its_ops[0]]}.{fn.__name__}: {[str(o) for o in its_ops]}")
    assert not bad, "\n".join(bad)


def test_rules_made_by_shared_factories_belong_to_the_family_registering_them():
    assert FAMILY[aten.special_expit.default] == "safetrace.rules.special"
    assert FAMILY[aten.sigmoid_.default] == "safetrace.rules.elementwise"
    assert FAMILY[aten.softmax.int] == "safetrace.rules.activations"


# -- the package's shape --------------------------------------------------------------


def _modules() -> dict[str, ast.Module]:
    return {p.stem: sources.tree(p) for p in RULES_DIR.glob("*.py")}


def _imported(node: ast.AST) -> list[tuple[str, list[str]]]:
    if isinstance(node, ast.ImportFrom) and node.module:
        return [(node.module, [a.name for a in node.names])]
    if isinstance(node, ast.Import):
        return [(a.name, []) for a in node.names]
    return []


def test_rules_imports_are_at_module_top():
    bad = []
    for name, tree in _modules().items():
        top = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top:
                bad.append(f"{name}.py:{node.lineno}")
    assert not bad, bad


def test_no_private_names_imported_across_modules():
    bad = [f"{name}.py: {mod}.{n}" for name, tree in _modules().items()
           for node in ast.walk(tree) for mod, names in _imported(node)
           if mod.startswith("safetrace") for n in names if n.startswith("_")]
    assert not bad, bad


def test_no_import_cycle_among_rule_modules():
    graph = {}
    for name, tree in _modules().items():
        deps = set()
        for node in ast.walk(tree):
            for mod, names in _imported(node):
                if mod == "safetrace.rules":
                    deps |= {n for n in names if (RULES_DIR / f"{n}.py").exists()}
                elif mod.startswith("safetrace.rules."):
                    deps.add(mod.split(".")[2])
        graph[name] = deps - {name}
    state: dict[str, int] = {}

    def visit(n: str, path: list[str]) -> None:
        state[n] = 1
        for m in graph.get(n, ()):
            assert state.get(m) != 1, "import cycle: " + " -> ".join(path + [m])
            if m not in state:
                visit(m, path + [m])
        state[n] = 2

    for n in graph:
        if n not in state:
            visit(n, [n])
    # the package face imports the families; no family imports the package face
    assert all("__init__" not in deps for deps in graph.values())
