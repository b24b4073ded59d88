"""Behaviours pinned by torch's own export tests (test_export.py, test_unflatten.py,
test_db.py), met by a user who replaces ``torch.export.export(...)`` with
``st.export(...).to_torch()`` (issue 21).  One row per behaviour: the converted program
against eager and against torch.export's program at other sizes, inputs outside the
declared space refused, and the program attributes torch's tests read.  Our own cases."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pytest
import torch
from torch import nn
from torch.export import Dim
from torch.testing._internal.two_tensor import TwoTensor

import safetrace as st

from tests.export.dropin_check import same


# -- models ------------------------------------------------------------------------------
class UnusedConstant(nn.Module):
    def forward(self, x):
        unused = torch.tensor(7)  # noqa: F841  (made, never read)
        return x * 3


class ParamInDict(nn.Module):
    """A Parameter kept in a plain dict: not registered, so a constant of the program."""

    def __init__(self) -> None:
        super().__init__()
        self.table = {"w": nn.Parameter(torch.full((2, 3), 0.5))}

    def forward(self, x):
        return x * self.table["w"]


class NormOverReadSize(nn.Module):
    """layer_norm over a size read from data, with a weight of fixed size."""

    def forward(self, n, w, b):
        k = n.item()
        return torch.nn.functional.layer_norm(torch.ones(2, k) * w.sum(), (k,), w, b)


class MaskAndIndices(nn.Module):
    """x[mask] and nonzero(mask) count the same rows (torch's kernel knows; ours numbers
    the two counts apart): the conversion must accept torch's shared size."""

    def forward(self, x, k):
        mask = x > 0.5
        picked = x[mask]
        where = torch.nonzero(mask)
        n = torch.minimum(k, torch.tensor(where.shape[0])).item()
        torch._check(n >= 0)
        torch._check(picked.shape[0] >= n)
        top, order = picked.sort(descending=True)
        return top[:n], where[order[:n]]


class SqrtScale(nn.Module):
    """x / sqrt(n) through torch.sym_sqrt: a float of the size, not the example's."""

    def forward(self, x):
        return x / torch.sym_sqrt(x.shape[0])


class ConstantsByPath(nn.Module):
    """Tensor attributes (not registered) of the module and of a child, and one made in
    forward: torch.export keys them by path (``x``, ``sub.w``, ``lifted_tensor_0``)."""

    def __init__(self) -> None:
        super().__init__()
        self.x = torch.tensor([1.0, 2.0])
        self.sub = nn.Module()
        self.sub.w = torch.full((2,), 0.5)

    def forward(self, y):
        return self.x.clone() * y + torch.tensor(3.0) + self.sub.w


class SharedNorm(nn.Module):
    """One LayerNorm under two paths, and a parameter under three names."""

    def __init__(self) -> None:
        super().__init__()
        norm = nn.LayerNorm(3)
        self.norms = nn.ModuleList([norm, norm])
        self.alpha = nn.Parameter(torch.randn(3))
        self.beta = self.gamma = self.alpha

    def forward(self, x):
        for norm in self.norms:
            x = norm(x)
        return x * self.gamma


# -- the table ---------------------------------------------------------------------------
@dataclass
class Row:
    name: str
    model: Callable[[], Any]
    args: tuple
    spec: Any = None
    others: list = field(default_factory=list)  # further valid inputs (other sizes)
    bad: list = field(default_factory=list)  # inputs outside the declared space
    check: Callable[[Any, Any], None] | None = None  # (converted, torch's) program checks
    stricter_torch: list = field(default_factory=list)  # valid inputs torch's program refuses


def _no_constants(conv: Any, ref: Any) -> None:
    assert dict(conv.constants) == {} and dict(ref.constants) == {}


def _constants_by_path(conv: Any, ref: Any) -> None:
    assert list(conv.constants) == list(ref.constants) == ["x", "lifted_tensor_0", "sub.w"]
    assert conv.graph_signature.lifted_tensor_constants == \
        ref.graph_signature.lifted_tensor_constants
    same(torch.export.unflatten(conv)(torch.ones(3, 2)), ConstantsByPath()(torch.ones(3, 2)))


def _every_alias_listed(conv: Any, ref: Any) -> None:
    names = list(SharedNorm().state_dict())  # norms.0.*, norms.1.*, alpha, beta, gamma
    for ep in (conv, ref):
        assert sorted(ep.state_dict) == sorted(names)
        assert sorted(ep.module().state_dict()) == sorted(names)
        assert sorted(torch.export.unflatten(ep).state_dict()) == sorted(names)
    fresh = SharedNorm()
    module = conv.module()
    module.load_state_dict(fresh.state_dict())  # the model's own state dict loads as is
    same(module(torch.ones(2, 3)), fresh(torch.ones(2, 3)))


def _constant_not_parameter(conv: Any, ref: Any) -> None:
    for ep in (conv, ref):
        assert len(ep.graph_signature.lifted_tensor_constants) == 1
        assert list(ep.graph_signature.parameters) == []
        assert list(ep.module().named_parameters()) == []


ROWS = [
    Row("unused tensor constant is no program input", UnusedConstant, (torch.ones(3),),
        {"x": {0: Dim("n")}}, [(torch.randn(0),), (torch.randn(1),), (torch.randn(6),)],
        check=_no_constants),
    Row("Parameter in a dict is a lifted constant", ParamInDict, (torch.randn(4, 2, 3),),
        {"x": {0: Dim("n")}}, [(torch.randn(0, 2, 3),), (torch.randn(1, 2, 3),)],
        [(torch.randn(4, 3, 3),)], check=_constant_not_parameter),
    Row("nonzero of a mask that x[mask] counted", MaskAndIndices,
        (torch.rand(4, 3), torch.tensor(4)), None,
        [(torch.rand(4, 3), torch.tensor(2)), (torch.zeros(4, 3), torch.tensor(3)),
         (torch.ones(4, 3), torch.tensor(20))]),
    Row("layer_norm over a data-dependent size", NormOverReadSize,
        (torch.tensor(6), torch.randn(6), torch.randn(6)), None,
        [(torch.tensor(6), torch.randn(6), torch.randn(6))]),
    Row("constants keyed by their attribute path", ConstantsByPath, (torch.randn(4, 2),),
        {"y": {0: Dim("n")}}, [(torch.randn(0, 2),), (torch.randn(1, 2),)],
        [(torch.randn(4, 3),)], check=_constants_by_path),
    Row("a module and a parameter shared under several paths", SharedNorm,
        (torch.randn(4, 3),), {"x": {0: Dim("n")}}, [(torch.randn(0, 3),), (torch.randn(1, 3),)],
        [(torch.randn(4, 2),)], check=_every_alias_listed),
    Row("torch.sym_sqrt of a dynamic size", SqrtScale, (torch.randn(16, 4),),
        {"x": {0: Dim("n", max=64)}}, [(torch.randn(1, 4),), (torch.randn(7, 4),),
                                       (torch.randn(9, 4),)], [(torch.randn(65, 4),)]),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_row_matches_torch_export(row: Row) -> None:
    model = row.model()
    ref = torch.export.export(model, row.args, dynamic_shapes=row.spec)
    conv = st.export(model, row.args, dynamic_shapes=row.spec).to_torch()
    module, ref_module = conv.module(), ref.module()
    for args in [row.args] + row.others:
        want = model(*args)
        same(module(*args), want)
        same(ref_module(*args), want)
    for args in row.stricter_torch:
        same(module(*args), model(*args))
        with pytest.raises(Exception):
            ref_module(*args)
    ours = st.export(model, row.args, dynamic_shapes=row.spec).module()
    for args in row.bad:
        with pytest.raises(Exception):  # torch's module's own guard error
            module(*args)
        with pytest.raises(Exception):
            ref_module(*args)
        # refused before running (an input check), or by a run-time check of a size read
        # from data
        with pytest.raises((st.InputMismatchError, st.RuntimeAssertionError)):
            ours(*args)
    if row.check is not None:
        row.check(conv, ref)


def test_data_dependent_op_check_refuses_what_eager_refuses() -> None:
    model = NormOverReadSize()
    args = (torch.tensor(6), torch.randn(6), torch.randn(6))
    bad = (torch.tensor(5), torch.randn(6), torch.randn(6))
    with pytest.raises(RuntimeError):
        model(*bad)
    with pytest.raises(st.RuntimeAssertionError):
        st.export(model, args).module()(*bad)
    with pytest.raises(Exception):
        st.export(model, args).to_torch().module()(*bad)


# -- refusals: an ExportError naming the construct, never an internal exception -----------
class _Sine(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sin()


class HoldsScripted(nn.Module):
    """torch.jit.script of an nn.Module (torch.export fails on it: its forward's Python is
    called with the wrong arguments); safetrace follows its TorchScript graph.  A
    ScriptModule subclass written with @script_method: tests/export/test_dropin_torchscript.py."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = torch.jit.script(_Sine())

    def forward(self, x):
        return self.inner(x) + 1


class SubclassParameter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(TwoTensor(torch.ones(2, 3), torch.full((2, 3), 2.0)))

    def forward(self, x):
        return x + (self.w * 2).get_elem_a().a


class TwoDerived(nn.Module):
    def forward(self, z, y):
        return z[1:] + y[1::2]


def test_a_scripted_submodule_exports_following_its_graph() -> None:
    ep = st.export(HoldsScripted(), (torch.randn(3),), dynamic_shapes=({0: Dim("n")},))
    with pytest.raises(TypeError):
        torch.export.export(HoldsScripted(), (torch.randn(3),))
    for n in (0, 1, 4):
        x = torch.randn(n)
        same(ep.module()(x), x.sin() + 1)


_dx = Dim("dx", min=3, max=6)

REFUSALS = [
    ("an attribute of a tensor subclass parameter's inner tensor", SubclassParameter,
     (torch.randn(2, 3),), None, st.UnsupportedOpError, "`.a`"),
    # the root Dim used only through derived dims, with examples that disagree on it
    ("derived dims of one root whose examples disagree", TwoDerived,
     (torch.randn(6), torch.randn(11)), ({0: _dx + 1}, {0: _dx * 2 - 1}),
     st.SpecError, "2*dx - 1 = 11"),
]


@pytest.mark.parametrize("name, model, args, spec, error, names",
                         REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refused_with_an_export_error(name, model, args, spec, error, names) -> None:
    if name.startswith("derived"):  # torch refuses it too
        with pytest.raises(Exception, match="to be equal to 2\\*dx - 1"):
            torch.export.export(model(), args, dynamic_shapes=spec)
    with pytest.raises(error) as info:
        st.export(model(), args, dynamic_shapes=spec)
    assert names in str(info.value) and "docs/errors.md#" in str(info.value)


# -- a converted program's module, exported again (torch's test_retracable_ep) -------------
class CountsCalls(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = nn.Buffer(torch.zeros(1))

    def forward(self, x):
        self.calls.add_(1)
        return x.sum(0) * self.calls + x.size(0)


def test_a_converted_module_re_exports_with_its_dims_dynamic() -> None:
    spec = ({0: Dim("n", min=2, max=32)},)
    x = torch.randn(5, 3)

    def source() -> Any:  # (a program's module writes its source's buffers, as in torch)
        return st.export(CountsCalls(), (x,), dynamic_shapes=spec).to_torch().module()

    programs = [lambda: st.export(source(), (x,), dynamic_shapes=spec),
                lambda: st.export(source(), (x,), dynamic_shapes=spec).to_torch(),
                lambda: torch.export.export(source(), (x,), dynamic_shapes=spec)]
    for program in programs:
        module, model = program().module(), CountsCalls()
        for n in (2, 7, 32, 3):  # the counter buffer advances in both
            y = torch.randn(n, 3)
            same(module(y), model(y))
        with pytest.raises(Exception):
            module(torch.randn(1, 3))  # outside n's range
        with pytest.raises(Exception):
            module(torch.randn(4, 3, dtype=torch.float64))
    with pytest.raises(st.InputMismatchError):
        programs[0]().module()(torch.randn(33, 3))


# -- no dead code in a converted module (torch's test_to_module_with_mutated_buffer) --------
class BumpsBuffer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.buf = nn.Buffer(torch.zeros(1))

    def forward(self, x):
        self.buf.add_(1)
        return x.sum(0) + self.buf


@pytest.mark.parametrize("spec", [None, {"x": {0: Dim("n", max=16)}}], ids=["static", "dim"])
def test_converted_module_has_no_dead_code_and_keeps_its_rank_check(spec) -> None:
    x = torch.randn(5, 3)

    def conv() -> Any:  # (one fresh program each: a program's buffers are its own)
        return st.export(BumpsBuffer(), (x,), dynamic_shapes=spec).to_torch()

    ref = torch.export.export(BumpsBuffer(), (x,), dynamic_shapes=spec)
    sizes = (5, 4, 1) if spec else (5, 5, 5)
    for prog in (conv(), conv().run_decompositions(), ref):
        module, model = prog.module(), BumpsBuffer()
        assert not module.graph.eliminate_dead_code()  # nothing torch's DCE would drop
        for n in sizes:
            y = torch.randn(n, 3)
            same(module(y), model(y))
    for prog in (conv(), conv().run_decompositions()):  # a wrong rank is refused, decomposed too
        with pytest.raises(Exception):
            prog.module()(torch.randn(5, 3, 1))
    # (torch's own program accepts the extra dim and sums over it: unsound there)
    ref.module()(torch.randn(5, 3, 1))


# -- the root of every node's module stack is the exported class (torch's test_nested_module)
class MakesItsOwn(nn.Module):
    def forward(self, x):
        return UnusedConstant()(x) * x  # a module made inside forward: no submodule


def test_module_stack_root_names_the_exported_class() -> None:
    x = torch.randn(3, 3)
    conv = st.export(MakesItsOwn(), (x,), dynamic_shapes={"x": {0: Dim("n")}}).to_torch()
    ref = torch.export.export(MakesItsOwn(), (x,), dynamic_shapes={"x": {0: Dim("n")}})
    for prog in (conv, ref):
        for node in prog.graph.nodes:
            if node.op == "call_function" and node.target is torch.ops.aten.mul.Tensor:
                (root_fqn, root_type), = node.meta["nn_module_stack"].values()
                assert root_fqn == "" and root_type.endswith(".MakesItsOwn")
        for n in (0, 1, 4):
            y = torch.randn(n, 3)
            same(torch.export.unflatten(prog)(y), MakesItsOwn()(y))


# -- int inputs given as torch's _IntWrapper, keyed in a ShapesCollection --------------------
class AddsInts(nn.Module):
    def forward(self, x, n, m):
        return x * n + m


def test_int_wrappers_keyed_in_a_shapes_collection() -> None:
    from torch.export.dynamic_shapes import _IntWrapper

    def inputs() -> tuple:
        return torch.randn(3), _IntWrapper(5), _IntWrapper(7)

    def spec(args: tuple) -> torch.export.ShapesCollection:
        sc = torch.export.ShapesCollection()
        sc[args[1]] = Dim.DYNAMIC
        return sc  # m (unkeyed) stays static

    args = inputs()
    ours = st.export(AddsInts(), args, dynamic_shapes=spec(args))
    args = inputs()
    ref = torch.export.export(AddsInts(), args, dynamic_shapes=spec(args))
    x = torch.randn(3)
    for prog in (ours, ours.to_torch(), ref):
        for n in (5, 0, 1, 11):  # (Dim.DYNAMIC on an int: [0, inf], torch's range too)
            same(prog.module()(x, n, 7), AddsInts()(x, n, 7))
        with pytest.raises(Exception):
            prog.module()(x, 5, 8)  # m was not declared dynamic
    with pytest.raises(st.InputMismatchError):
        ours.module()(x, 5, 8)
    with pytest.raises(st.InputMismatchError):  # outside the range torch's program declares
        ours.module()(x, -2, 7)


class _NeedsMin(nn.Module):
    def forward(self, x, y):
        if x.shape[0] > 2:
            return x[2:] + y
        return x


class _Static(nn.Module):
    def forward(self, x, w):
        return x.reshape(2, 2) @ w[: x.shape[0] // 2]


def test_torchs_refine_from_suggested_fixes_reads_our_error() -> None:
    """torch's refine_dynamic_shapes_from_suggested_fixes(exc.msg, spec) loop works on our
    DeclaredSpaceViolation (a narrowed range, a relation, a specialization), and the
    refined spec exports a program that matches eager and refuses outside it."""
    from torch.export.dynamic_shapes import refine_dynamic_shapes_from_suggested_fixes

    cases = [(_NeedsMin(), (torch.randn(5), torch.randn(3)),
              {"x": {0: Dim("dx", max=64)}, "y": {0: Dim("dy", max=64)}},
              [(torch.randn(3), torch.randn(1)), (torch.randn(9), torch.randn(7))],
              (torch.randn(2), torch.randn(0))),
             (_Static(), (torch.randn(4), torch.randn(6, 3)),
              {"x": {0: Dim("sx", max=64)}, "w": {0: Dim("sw", min=2, max=40)}},
              [(torch.randn(4), torch.randn(2, 3)), (torch.randn(4), torch.randn(40, 3))],
              (torch.randn(6), torch.randn(6, 3)))]
    for model, args, spec, inside, outside in cases:
        with pytest.raises(st.ConstraintViolationError) as info:
            st.export(model, args, dynamic_shapes=spec)
        assert "Suggested fixes:" in info.value.msg
        refined = refine_dynamic_shapes_from_suggested_fixes(info.value.msg, spec)
        m = st.export(model, args, dynamic_shapes=refined).to_torch().module()
        for inp in inside:
            torch.testing.assert_close(m(*inp), model(*inp))
        with pytest.raises(Exception):
            m(*outside)


# (compiled here, not in this module: pytest rewrites the assert statements of test
# modules into if/raise, and these must stay Python asserts as a user's model has them)
_ASSERT_MODELS = """
import torch
from torch import nn


class AssertsOnData(nn.Module):
    def forward(self, x):
        n = (x > 0).sum().item()
        assert n >= 1, "no positives"
        assert n <= 60 and not (n == 7)
        return torch.ones(n) * x.sum()


class AssertsEither(nn.Module):
    def forward(self, x):
        n = (x > 0).sum().item()
        assert n == 3 or n == 5  # an `or`: another operand may pass, not assumed
        return torch.ones(n)
"""


def _assert_models() -> dict:
    scope: dict = {}
    exec(compile(_ASSERT_MODELS, "<assert models>", "exec"), scope)
    return scope


def test_python_assert_on_a_value_read_from_data_is_checked_at_run_time() -> None:
    """``assert n >= 1`` on a value read from data: traced as passing and checked at run
    time (eager raises AssertionError there; torch.export keeps a run-time assert too)."""
    models = _assert_models()
    model = models["AssertsOnData"]()
    x = torch.tensor([1.0, -2.0, 3.0])
    spec = ({0: Dim("b", max=64)},)
    m = st.export(model, (x,), dynamic_shapes=spec).module()
    for inp in (torch.tensor([5.0]), torch.tensor([1.0, 2.0, 3.0, -1.0, 4.0])):
        torch.testing.assert_close(m(inp), model(inp))
    for bad in (torch.tensor([-1.0, -2.0]), torch.tensor([]), torch.ones(7)):
        with pytest.raises(AssertionError):
            model(bad)
        with pytest.raises(st.RuntimeAssertionError, match="assert statement"):
            m(bad)
    with pytest.raises(st.InputMismatchError):
        m(torch.ones(65))
    with pytest.raises(st.DataDependentError):
        st.export(models["AssertsEither"](), (x,), dynamic_shapes=spec)
