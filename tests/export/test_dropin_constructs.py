"""Constructs a user switching from torch.export meets (issue 21): ``hints_wrapper``
(traced in place: the hints are for a compiler, the body is the value), higher-order
operators defined elsewhere (traced through their dense kernel; one without is refused
with an export error naming it and the fix), an autograd.Function under torch.vmap and a
tensor subclass built inside forward from traced tensors."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch._higher_order_ops.hints_wrap import hints_wrapper
from torch._ops import HigherOrderOperator
from torch.testing._internal.two_tensor import TwoTensor

import safetrace as st

from tests.export.dropin_check import check_program


class Hinted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        def body(x, y):
            return self.lin(x).relu() + y * 2.0

        out = hints_wrapper(body, (x, y), {}, hints={"outer_body": True})
        return out - 1


def test_hints_wrapper_is_traced_in_place_like_torch() -> None:
    # (eager's own argument checks run before the operator: a refused call is refused)
    model = Hinted()
    b = torch.export.Dim("b", max=64)
    args = (torch.randn(3, 4), torch.randn(3, 4))
    spec = ({0: b}, {0: b})
    ep = st.export(model, args, dynamic_shapes=spec)
    # torch.export takes it too (its program, run, returns FakeTensors on torch 2.13: its
    # numbers cannot be compared)
    ref = torch.export.export(model, args, dynamic_shapes=spec)
    assert any(n.target is torch.ops.higher_order.hints_wrapper for n in ref.graph.nodes)
    check_program(ep, model, [args] + [(torch.randn(n, 4), torch.randn(n, 4))
                                       for n in (0, 1, 64)],
                  [(torch.randn(3, 4), torch.randn(4, 4)), (torch.randn(65, 4),
                                                            torch.randn(65, 4))])


class _MyHop(HigherOrderOperator):
    def __init__(self) -> None:
        super().__init__("st_dropin_user_hop")

    def __call__(self, fn, x):
        return super().__call__(fn, x)


_my_hop = _MyHop()


@_my_hop.py_impl(torch._C.DispatchKey.CompositeExplicitAutograd)
@_my_hop.py_impl(torch._C.DispatchKey.Autograd)
def _my_hop_eager(fn, x):
    return fn(x)


class UserHop(nn.Module):
    def forward(self, x):
        return _my_hop(lambda y: y.sin() * 2, x) + 1


def test_a_user_defined_higher_order_op_is_traced_through_its_dense_kernel() -> None:
    """The graph computes what eager's dense kernel computes.  (torch.export 2.13 needs the
    operator's own ProxyTorchDispatchMode and FakeTensorMode rules, which ours does not.)"""
    model, x = UserHop(), torch.randn(2, 3)
    spec = ({0: torch.export.Dim("b", max=32)},)
    ep = st.export(model, (x,), dynamic_shapes=spec)
    with pytest.raises(AssertionError, match="ProxyTorchDispatchMode"):
        torch.export.export(model, (x,), dynamic_shapes=spec)
    check_program(ep, model, [(x,)] + [(torch.randn(n, 3),) for n in (0, 1, 32)],
                  [(torch.randn(33, 3),), (torch.randn(2, 4),)])
    check_program(ep.to_torch(), model, [(x,), (torch.randn(5, 3),)])


class _OnlyAutogradHop(HigherOrderOperator):
    def __init__(self) -> None:
        super().__init__("st_dropin_autograd_only_hop")

    def __call__(self, fn, x):
        return super().__call__(fn, x)


_autograd_only = _OnlyAutogradHop()


@_autograd_only.py_impl(torch._C.DispatchKey.Autograd)
def _autograd_only_eager(fn, x):
    return fn(x)


class UserHopWithoutDenseKernel(nn.Module):
    def forward(self, x):
        return _autograd_only(lambda y: y.sin(), x)


class _Sin(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x.sin()

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g


class VmappedFunction(nn.Module):
    def forward(self, x):
        return torch.vmap(_Sin.apply)(x)


# name -> (model, the error's kind, what the message names, the fix it gives)
REFUSED = {
    "user-hop": (UserHopWithoutDenseKernel, st.UnsupportedOpError,
                 "higher-order operator st_dropin_autograd_only_hop",
                 "call the operator's body function directly"),
}


def test_an_autograd_function_under_vmap_exports() -> None:
    """torch.vmap over a static batch runs the function per slice (trace/vmapping.py):
    the autograd.Function is applied to each slice.  (torch.export 2.13 stops on it in
    this session: "ProxyTorchDispatchMode ... not registered".)"""
    x = torch.randn(2, 3)
    ep = st.export(VmappedFunction(), (x,))
    for y in (torch.randn(2, 3), x):
        torch.testing.assert_close(ep.module()(y), VmappedFunction()(y))
        torch.testing.assert_close(ep.to_torch().module()(y), VmappedFunction()(y))


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_the_construct_and_the_fix(name: str) -> None:
    make, kind, names, fix = REFUSED[name]
    x = torch.randn(2, 3)
    make()(x)  # eager runs it
    with pytest.raises(kind, match=rf"{names}(.|\n)*Fix: {fix}"):
        st.export(make(), (x,))


class SubclassIn(nn.Module):
    def forward(self, x):
        return x.sin() + 1


class SubclassParam(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.p = nn.Parameter(TwoTensor(torch.randn(3), torch.randn(3)))

    def forward(self, x):
        return x * 2 + self.p


class SubclassBuilt(nn.Module):
    def forward(self, x):
        return TwoTensor(x, x + 1).sin()


def _two(n: int) -> TwoTensor:
    return TwoTensor(torch.randn(n), torch.randn(n))


def test_tensor_subclasses_as_input_and_state_export_like_torch() -> None:
    model = SubclassIn()
    ep = st.export(model, (_two(3),))
    ref = torch.export.export(model, (_two(3),))
    check_program(ep, model, [(_two(3),)], [(_two(4),)], ref=ref)
    out = ep.module()(_two(3))
    assert type(out) is TwoTensor
    model = SubclassParam()
    ep = st.export(model, (torch.randn(3),))
    check_program(ep, model, [(torch.randn(3),)], [(torch.randn(4),)])


def test_a_subclass_built_from_traced_tensors_exports_like_eager() -> None:
    # its ops run its __torch_dispatch__ on the traced tensors; the output is rebuilt from
    # its inner tensors (tests/export/test_dropin_subclasses.py)
    model = SubclassBuilt()
    ep = st.export(model, (torch.randn(3),))
    for x in (torch.randn(3), torch.randn(3)):
        out, want = ep.module()(x), model(x)
        assert type(out) is TwoTensor
        torch.testing.assert_close((out.a, out.b), (want.a, want.b))
