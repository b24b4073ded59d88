"""Behaviours met by a user who replaces ``torch.export.export(...)`` with
``st.export(...).to_torch()`` in torch's own export tests (issue 21, the suite17 pass):
a 0-d tensor given for an ``int`` argument of an ATen overload, a relation between named
Dims that only an op's broadcast needs, a TorchScript submodule held by the model, and
failures of safetrace's own code named as export errors.  Each case runs the same model
through torch.export in the same test where torch exports it.  Our own cases."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.export import Dim

import safetrace as st

from tests.export.dropin_check import check_program, same

A = torch.ops.aten


class Calls(nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


# -- a tensor for an int argument of an ATen overload or packet (torch's nonzero_static
#    tests): eager's parser reads its value; the rule got the tensor (an internal TypeError)
CONSTANT_SIZE = [
    ("nonzero_static packet", lambda x: A.nonzero_static(x, size=torch.tensor(4)),
     lambda n: (torch.tensor([0, 1, 2, 0, 3] * n)[:5],)),
    ("nonzero_static overload", lambda x: A.nonzero_static.default(
        x, size=torch.tensor(2), fill_value=-5), lambda n: (torch.arange(5) % (n + 1),)),
    ("view size list", lambda y: A.view.default(y, [torch.tensor(2), 3]),
     lambda n: (torch.randn(6) * n,)),
    ("select index", lambda y: A.select.int(y, 0, torch.tensor(1)),
     lambda n: (torch.randn(3, 2) * n,)),
]


@pytest.mark.parametrize("fn, make", [c[1:] for c in CONSTANT_SIZE],
                         ids=[c[0] for c in CONSTANT_SIZE])
def test_a_constant_tensor_for_an_int_argument_is_read_as_eager_reads_it(fn, make) -> None:
    args = make(2)
    ours = st.export(Calls(fn), args)
    ref = torch.export.export(Calls(fn), args)
    check_program(ours.to_torch(), fn, [make(2), make(3)], ref=ref)
    check_program(ours, fn, [make(2), make(3)])


def test_an_input_tensor_for_an_int_argument_is_an_unbacked_size() -> None:
    """torch refuses a FakeTensor where the overload takes an int; eager reads the value
    (``__index__``): the program does, as of ``.item()``, with eager's own range check."""
    def f(x, n):
        return A.nonzero_static.default(x, size=n)

    with pytest.raises(RuntimeError, match="Expected a value of type 'int'"):
        torch.export.export(Calls(f), (torch.tensor([0, 1, 2]), torch.tensor(2)))
    ep = st.export(Calls(f), (torch.tensor([0, 1, 2]), torch.tensor(2)))
    for x, n in (([1, 0, 1], 0), ([1, 1, 1], 1), ([0, 0, 4], 5)):
        same(ep.module()(torch.tensor(x), torch.tensor(n)), f(torch.tensor(x), torch.tensor(n)))
    with pytest.raises(st.RuntimeAssertionError, match="u0 >= 0"):
        ep.module()(torch.tensor([1, 0, 1]), torch.tensor(-1))
    # a float tensor for one int: truncated, as eager's parser does
    g = lambda y: A.select.int(y, 0, torch.tensor(1.7))  # noqa: E731
    same(st.export(Calls(g), (torch.randn(3, 2),)).module()(y := torch.randn(3, 2)), g(y))


# -- a relation between named Dims that only the broadcast needs (torch's
#    test_export_with_slice_and_broadcast-like cases): torch keeps `dy <= dx` as a check of
#    its program; safetrace refused it as a relation the spec declares independent -------
class SliceToOther(nn.Module):
    def forward(self, x, y):
        return x[:y.shape[0]] + y


class BranchOnBoth(nn.Module):
    def forward(self, x, y):
        return x.sum() + (y.sum() if x.shape[0] > y.shape[0] else y.mean())


_XY = {"x": {0: Dim("dx")}, "y": {0: Dim("dy")}}


@pytest.mark.parametrize("defer", [False, True])
def test_a_broadcast_relation_between_named_dims_is_a_run_time_check(defer: bool) -> None:
    args = (torch.randn(6, 3), torch.randn(4, 3))
    ref = torch.export.export(SliceToOther(), args, dynamic_shapes=_XY,
                              prefer_deferred_runtime_asserts_over_guards=defer)
    ours = st.export(SliceToOther(), args, dynamic_shapes=_XY,
                     prefer_deferred_runtime_asserts_over_guards=defer)
    sizes = [(8, 5), (5, 5), (5, 0), (0, 0), (2, 2)]
    inputs = [(torch.randn(a, 3), torch.randn(b, 3)) for a, b in sizes]
    # (3, 5): eager raises; (1, 5): eager broadcasts, torch's program refuses it; ours
    # too, except deferred: it knows where eager's broadcast raises (the sizes differ,
    # neither is 1) and computes what eager does at (1, 5) (session 30)
    one = (torch.randn(1, 3), torch.randn(5, 3))
    bad = [(torch.randn(3, 3), torch.randn(5, 3))] + ([] if defer else [one])
    check_program(ours, SliceToOther(), inputs, bad, ref=ref)
    conv = ours.to_torch().module()
    for args in inputs + ([one] if defer else []):
        same(conv(*args), SliceToOther()(*args))
    if defer:
        same(ours.module()(*one), SliceToOther()(*one))
    for args in bad:  # (torch's guard error; the graph's assert where no guard says it)
        with pytest.raises((AssertionError, RuntimeError)):
            conv(*args)


def test_a_branch_on_two_named_dims_runs_both_answers_where_torch_refuses_it() -> None:
    args = (torch.randn(6, 3), torch.randn(4, 3))
    with pytest.raises(Exception, match="Constraints violated"):
        torch.export.export(BranchOnBoth(), args, dynamic_shapes=_XY)
    with pytest.raises(st.ConstraintViolationError, match="dx, dy"):  # (not split)
        st.export(BranchOnBoth(), args, dynamic_shapes=_XY, max_splits=0)
    ours = st.export(BranchOnBoth(), args, dynamic_shapes=_XY)  # (a relation split)
    sizes = [(6, 4), (4, 6), (5, 5), (0, 3), (3, 0), (1, 1)]
    check_program(ours, BranchOnBoth(), [(torch.randn(a, 3), torch.randn(b, 3))
                                         for a, b in sizes], [])


def test_a_broadcast_that_narrows_one_named_dim_below_two_is_checked_at_run_time() -> None:
    """``x[:2] + ones(2, 3)`` with ``b`` from 1: eager broadcasts one row; without a size
    split the program refuses ``b == 1`` at run time (torch.export's trace assumes b >= 2
    and exports too); a size of 2 or more computes eager's answer."""
    def f(x):
        return x[:2] + torch.ones(2, 3)

    ep = st.export(Calls(f), (torch.randn(2, 3),),
                   dynamic_shapes=({0: Dim("b", min=1, max=64)},), max_splits=0)
    for n in (2, 9, 64):
        x = torch.randn(n, 3)
        torch.testing.assert_close(ep.module()(x), f(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(1, 3))


# -- a torch.jit.script / torch.jit.trace submodule held by the model (torch exports it:
#    only a call of its TorchScript is refused, naming the submodule and the line) --------
class Sine(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.full((4,), 2.0))
        self.b = nn.Buffer(torch.arange(4.0))

    def forward(self, x):
        return torch.sin(x) * self.w


class HoldsUnused(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.scale = nn.Parameter(torch.full((4,), 3.0))

    def forward(self, x):
        return x * self.scale


class ReadsItsState(HoldsUnused):
    def forward(self, x):
        self.inner.b.add_(1)
        return x * self.inner.w + self.inner.b


def _compiled(kind: str) -> nn.Module:
    if kind == "script":
        return torch.jit.script(Sine())
    return torch.jit.trace(Sine(), (torch.randn(2, 4),))


@pytest.mark.parametrize("kind", ["script", "trace"])
@pytest.mark.parametrize("model", [HoldsUnused, ReadsItsState])
def test_a_held_torchscript_submodule_exports_as_in_torch(model, kind: str) -> None:
    args = (torch.randn(3, 4),)
    spec = ({0: Dim("n")},)
    ref = torch.export.export(model(_compiled(kind)), args, dynamic_shapes=spec)
    held = model(_compiled(kind))
    ours = st.export(held, args, dynamic_shapes=spec)
    assert float(held.inner.b.sum()) == 6.0  # exporting wrote nothing
    assert sorted(ours.state_dict) == sorted(ref.state_dict)
    # (a program holds its model's own state, which the calls write: each program and
    # its reference start from a model of their own)
    check_program(ours, model(_compiled(kind)), [(torch.randn(n, 4),) for n in (0, 1, 5)],
                  [(torch.randn(2, 5),)])
    conv = st.export(model(_compiled(kind)), args, dynamic_shapes=spec).to_torch()
    assert sorted(conv.state_dict) == sorted(ref.state_dict)
    program, eager = conv.module(), model(_compiled(kind))
    for n in (2, 5):
        y = torch.randn(n, 4)
        same(program(y), eager(y))


class CallsCompiled(nn.Module):
    def __init__(self, how: str) -> None:
        super().__init__()
        self.inner = torch.jit.script(Sine())
        self.how = how

    def forward(self, x):
        if self.how == "call":
            return self.inner(x)
        if self.how == "_c":
            return self.inner._c.forward(x)
        return self.inner._c._get_method("forward")(x)


@pytest.mark.parametrize("how", ["call", "_c", "_get_method"])
def test_a_call_of_a_torchscript_submodule_follows_its_graph(how: str) -> None:
    """torch fails on ``self.inner(x)`` (it calls the Python forward with the method as
    ``self``) and traces TorchScript's own ops for ``_c`` calls; safetrace follows the
    method's TorchScript graph node by node for each (trace/script_graph.py), the
    submodule's parameters and buffers as the program's state."""
    args = (torch.randn(2, 4),)
    spec = ({0: Dim("n")},)
    ours = st.export(CallsCompiled(how), args, dynamic_shapes=spec)
    if how != "call":  # (torch's TorchScript interpreter specializes the sizes: static)
        ref = torch.export.export(CallsCompiled(how), args)
        same(ref.module()(*args), ours.module()(*args))
    else:
        with pytest.raises(TypeError):
            torch.export.export(CallsCompiled(how), args, dynamic_shapes=spec)
    assert sorted(ours.state_dict) == ["inner.b", "inner.w"]
    check_program(ours, CallsCompiled(how), [(torch.randn(n, 4),) for n in (0, 1, 5)],
                  [(torch.randn(2, 5),)])
    conv = ours.to_torch().module()
    same(conv(torch.ones(3, 4)), torch.sin(torch.ones(3, 4)) * 2)


# -- a failure of safetrace's own code, or of the conversion, is an export error (never a
#    raw TypeError / KeyError from inside the library) -------------------------------------
def test_a_python_error_inside_a_rule_is_named_as_an_internal_export_error(
        monkeypatch) -> None:
    from safetrace.trace import arguments

    op = A.nonzero_static.default
    monkeypatch.setitem(arguments.INT_SLOTS, id(op), ())  # the rule gets the tensor
    with pytest.raises(st.ExportError, match="internal error") as info:
        st.export(Calls(lambda x: op(x, size=torch.tensor(4))), (torch.arange(3),))
    assert "rules/data_dependent.py" in str(info.value)
    assert "test_dropin_torch_suite_17.py" in info.value.where.source


def test_a_failure_inside_to_torch_is_a_conversion_error(monkeypatch) -> None:
    from safetrace.interop import torch_export

    ep = st.export(nn.Linear(2, 3), (torch.randn(4, 2),))

    def broken(self):
        return {}["missing"]

    monkeypatch.setattr(torch_export._Converter, "run", broken)
    with pytest.raises(st.ConversionError, match="KeyError") as info:
        ep.to_torch()
    assert isinstance(info.value.__cause__, KeyError)


# -- a symbolic size given to Python that takes only numbers: an ExportError, or eager's
#    own exception where eager raises at the example too --------------------------------
SIZE_MISUSE = [
    ("compared with a str", lambda x: x * (x.shape[0] < "a"), st.ExportError),
    ("modulo by a zero size", lambda x: x * (x.shape[0] % (x.shape[1] - 4)),
     ZeroDivisionError),
]


@pytest.mark.parametrize("fn, error", [c[1:] for c in SIZE_MISUSE],
                         ids=[c[0] for c in SIZE_MISUSE])
def test_a_size_misused_in_python_raises_an_export_error_or_eagers(fn, error) -> None:
    x = torch.randn(6, 4)
    with pytest.raises(error):
        st.export(Calls(fn), (x,), dynamic_shapes=({0: Dim("n")},))


# -- while_loop's carried values and body_fn's outputs pair leaf by leaf, and the result has
#    body_fn's structure, as eager's (torch's test_while_loop_simple: a list carried, a
#    tuple returned, was refused as another structure) ----------------------------------
def _loop(carried: type, returned: type):
    def fn(ci, a, b):
        def body_fn(i, x, y):
            out = (i - 1, x + y, y - x)
            return list(out) if returned is list else (out[0], out[1:])
        return torch._higher_order_ops.while_loop(
            lambda i, x, y: i > 0, body_fn, carried((ci, a, b)))
    return fn


@pytest.mark.parametrize("carried, returned", [(list, tuple), (tuple, list)],
                         ids=["list carried, nested tuple returned", "list returned"])
def test_while_loop_takes_the_body_outputs_structure(carried, returned) -> None:
    fn = _loop(carried, returned)
    args = (torch.tensor(2), torch.randn(3, 4), torch.randn(3, 4))
    ref = torch.export.export(Calls(fn), args)
    ours = st.export(Calls(fn), args)
    inputs = [(torch.tensor(n), torch.randn(3, 4), torch.randn(3, 4)) for n in (0, 1, 3)]
    check_program(ours, fn, inputs, [(torch.tensor(1), torch.randn(2, 4), torch.randn(3, 4))],
                  ref=ref)
    check_program(ours.to_torch(), fn, inputs)


# -- torch's refine_dynamic_shapes_from_suggested_fixes(exc.msg, spec) reads a new root
#    (`dx = 3*_dx` after `_dx = Dim('_dx', min=3)`) and one Dim for two (`dy1 = dx1`) ----
class ReshapeByThree(nn.Module):
    def forward(self, x):
        if x.shape[0] >= 9:
            return x.reshape([-1, 3])
        return x * 2


class Multiplies(nn.Module):
    def forward(self, x, y):
        return x * y


@pytest.mark.parametrize("model, args, spec, inside, outside", [
    (ReshapeByThree(), (torch.randn(15),), ((Dim("dx"),),),
     [(torch.randn(9),), (torch.randn(30),)], (torch.randn(10),)),
    (Multiplies(), (torch.randn(4, 5), torch.randn(4, 5)),
     {"x": (Dim("dx0"), Dim("dx1")), "y": (Dim("dx0"), Dim("dy1"))},
     [(torch.randn(2, 3), torch.randn(2, 3))], (torch.randn(2, 3), torch.randn(2, 4))),
], ids=["a new root", "one Dim for two"])
def test_torchs_refine_reads_new_roots_and_shared_dims(model, args, spec, inside,
                                                       outside) -> None:
    from torch.export.dynamic_shapes import refine_dynamic_shapes_from_suggested_fixes

    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(model, args, dynamic_shapes=spec)
    refined = refine_dynamic_shapes_from_suggested_fixes(info.value.msg, spec)
    ep = st.export(model, args, dynamic_shapes=refined)
    check_program(ep, model, inside, [outside])
