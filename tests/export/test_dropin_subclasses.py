"""Tensor subclasses (issue 21): traceable wrapper subclasses (``__tensor_flatten__`` with
``__torch_dispatch__``) as parameters and buffers are traced through their dispatch into
their inner tensors, as torch.export's program computes them; what cannot be traced that
way is refused naming the class and the fix.  Each program is checked against eager and
torch.export's program on fresh inputs, and inputs outside the declared space are refused."""

from __future__ import annotations

import io

import pytest
import torch
import torch.nn.functional as F
from torch.testing._internal.custom_tensor import (ConstantExtraMetadataTensor,
                                                   CustomTensorPlainOut)
from torch.testing._internal.two_tensor import TwoTensor

import safetrace as st
from tests.export.dropin_check import check_program

ACCESS = torch.ops.export.access_subclass_inner_tensor.default


def two(*shape: int, nested: bool = False) -> TwoTensor:
    if nested:
        return TwoTensor(two(*shape), two(*shape))
    return TwoTensor(torch.randn(*shape), torch.randn(*shape))


def fresh(*shape: int) -> list[tuple]:
    return [(torch.randn(*shape),) for _ in range(3)]


class NestedState(torch.nn.Module):
    """Nested two-tensor parameter and buffer; a method of the subclass, then an inner
    tensor of the result (torch's test_subclass_nested_attr_access, written anew)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(3, 4))
        self.p = torch.nn.Parameter(two(3, 4, nested=True))
        self.register_buffer("b", two(3, 4, nested=True))

    def forward(self, x):
        total = (3 * self.w - self.p + self.b).sum()
        return x * total.get_elem_a().b


def test_nested_subclass_state_is_traced_through_its_dispatch():
    m = NestedState()
    x = torch.randn(3, 4)
    ep = st.export(m, (x,))
    ref = torch.export.export(m, (x,))
    check_program(ep, m, fresh(3, 4), bad=[(torch.randn(2, 4),)], ref=ref)
    # the graph computes on plain inner tensors: every subclass is read by access nodes
    # right after the placeholders, and the state stays the subclass
    access = [n for n in ep.graph.nodes if n.target is ACCESS]
    assert access and all(n.args[0].op == "placeholder" or n.args[0].target is ACCESS
                          for n in access)
    assert type(ep.state_dict["p"]) is TwoTensor and type(ep.state_dict["b"]) is TwoTensor
    # what the dispatch computed for the halves nothing reads is gone (p.a.a, b.b.b, ...)
    assert all(n.users for n in ep.graph.nodes if n.op == "call_function")
    assert len(access) == 4
    # the program reads the state at run time (not a folded constant)
    module = ep.module()
    with torch.no_grad():
        module.p.a.a.add_(1.0)
        m.p.a.a.add_(1.0)
    torch.testing.assert_close(module(x), m(x))


class MetadataState(torch.nn.Module):
    """A subclass with Python metadata (a flatten context) and a method reading it; one
    nested inside a two-tensor."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(3, 4))
        self.c = torch.nn.Parameter(
            ConstantExtraMetadataTensor(ConstantExtraMetadataTensor(torch.randn(3, 4))))
        self.t = torch.nn.Parameter(TwoTensor(ConstantExtraMetadataTensor(torch.randn(3, 4)),
                                              ConstantExtraMetadataTensor(torch.randn(3, 4))))

    def forward(self, x):
        r = 2 * self.w + self.c
        r = r + r.constant_attribute
        s = self.w + self.t
        s = s + s.a.elem + s.b.constant_attribute
        return x + r.elem.elem + s.a.elem + self.c.get_complicated_metadata().foo


def test_subclass_metadata_and_nesting():
    m = MetadataState()
    x = torch.randn(3, 4)
    ep = st.export(m, (x,))
    ref = torch.export.export(m, (x,))
    check_program(ep, m, fresh(3, 4), bad=[(torch.randn(3, 5),)], ref=ref)


class Weighted(torch.nn.Module):
    """A composite op (F.linear) on a subclass weight: decomposed before the dispatch, as
    in eager; a subclass whose dispatch returns plain tensors."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 5)
        self.lin.weight = torch.nn.Parameter(two(5, 4))
        self.plain = torch.nn.Parameter(CustomTensorPlainOut(torch.randn(2, 5),
                                                             torch.randn(2, 5)))

    def forward(self, x):
        y = self.lin(x)
        return F.relu(y.a - y.b) + (y.a + self.plain).sum() + self.plain.get_elem()


def test_composite_op_and_plain_result_subclass():
    m = Weighted()
    x = torch.randn(2, 4)
    ep = st.export(m, (x,))
    ref = torch.export.export(m, (x,))
    check_program(ep, m, fresh(2, 4), bad=[(torch.randn(3, 4),)], ref=ref)
    assert torch.ops.aten.linear.default not in {n.target for n in ep.graph.nodes}


class Scaled(torch.Tensor):
    """int8 values with a scale (a quantized weight in miniature): a transpose (or detach)
    stays scaled, any other op computes on the dequantized values."""

    @staticmethod
    def __new__(cls, qdata, scale):
        return torch.Tensor._make_wrapper_subclass(cls, qdata.shape, dtype=scale.dtype,
                                                   device=qdata.device)

    def __init__(self, qdata, scale):
        self.qdata, self.scale = qdata, scale

    __torch_function__ = torch._C._disabled_torch_function_impl

    def __tensor_flatten__(self):
        return ["qdata", "scale"], None

    @staticmethod
    def __tensor_unflatten__(inner, ctx, size, stride):
        return Scaled(inner["qdata"], inner["scale"])

    @classmethod
    def __torch_dispatch__(cls, func, types, args, kwargs=None):
        if func in (torch.ops.aten.t.default, torch.ops.aten.detach.default):
            return Scaled(func(args[0].qdata), args[0].scale)
        args, kwargs = torch.utils._pytree.tree_map_only(
            Scaled, lambda s: s.qdata.to(s.scale.dtype) * s.scale, (args, kwargs or {}))
        return func(*args, **kwargs)


def test_a_quantized_weight_in_a_linear_layer():
    m = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU())
    m[0].weight = torch.nn.Parameter(Scaled(torch.randint(-8, 8, (5, 4), dtype=torch.int8),
                                            torch.tensor(0.25)), requires_grad=False)
    x = torch.randn(2, 4)
    ep = st.export(m, (x,))
    ref = torch.export.export(m, (x,))
    check_program(ep, m, fresh(2, 4), bad=[(torch.randn(2, 3),)], ref=ref)
    # eager's path: linear decomposed, the transpose kept scaled, addmm on dequantized values
    targets = {n.target for n in ep.graph.nodes}
    assert torch.ops.aten.addmm.default in targets and torch.ops.aten.t.default in targets


class Built(torch.nn.Module):
    """A subclass built in forward from traced tensors; views and device queries of it."""

    def forward(self, x):
        t = TwoTensor(x, x * 2).t()
        z = torch.zeros(t.shape, device=t.device)
        return (t.sin() + z).b[1:], t.is_cpu


def test_subclass_built_in_forward():
    m = Built()
    ep = st.export(m, (torch.randn(3, 4),))
    check_program(ep, m, fresh(3, 4), bad=[(torch.randn(4, 4),)])


def test_converted_program_keeps_the_subclass_state():
    m = NestedState()
    x = torch.randn(3, 4)
    tp = st.export(m, (x,)).to_torch()
    assert type(tp.state_dict["p"]) is TwoTensor
    torch.testing.assert_close(tp.module()(x), m(x))
    buf = io.BytesIO()
    torch.export.save(tp, buf)
    buf.seek(0)
    torch.testing.assert_close(torch.export.load(buf).module()(x), m(x))


class ScaledSum(torch.Tensor):
    """A tensor subclass whose __torch_function__ changes what torch.add computes."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        out = super().__torch_function__(func, types, args, kwargs or {})
        return out * 2 if func is torch.Tensor.add else out


class Writes(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("b", two(3, 4))

    def forward(self, x):
        self.b.add_(1)
        return x + self.b.a


class WritesInner(Writes):
    def forward(self, x):
        self.b.b.mul_(2)
        return x + self.b.b


class Attribute(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c = two(3, 4)  # neither parameter nor buffer

    def forward(self, x):
        return (x + self.c).a


class Returns(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.p = torch.nn.Parameter(two(3, 4))

    def forward(self, x):
        return x + self.p


def test_subclass_outputs_are_rebuilt_from_their_inner_tensors():
    m = Returns()
    x = torch.randn(3, 4)
    ep = st.export(m, (x,))
    ref = torch.export.export(m, (x,))
    for _ in range(2):
        x = torch.randn(3, 4)
        got, want, theirs = ep.module()(x), m(x), ref.module()(x)
        assert type(got) is type(theirs) is TwoTensor
        torch.testing.assert_close((got.a, got.b), (want.a, want.b))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3))
    # torch's program rebuilds it as torch's training IR calls a subclass constructor
    made = st.export(MakesTwo(), (x,))
    for program, model in ((ep, m), (made, MakesTwo())):
        tep = program.to_torch()
        assert any(n.target is torch.ops.higher_order.flat_apply for n in tep.graph.nodes)
        for x in (torch.randn(3, 4), torch.zeros(3, 4)):
            got, want = tep.module()(x), model(x)
            assert type(got) is TwoTensor
            torch.testing.assert_close((got.a, got.b), (want.a, want.b))
    with pytest.raises(st.UnsupportedInputError, match=r"st.save cannot write an output "
                                                       r"\(TwoTensor"):
        st.save(made, io.BytesIO())


class MakesTwo(torch.nn.Module):
    def forward(self, x):
        return TwoTensor(x, x.cos())


class Dynamic(Returns):
    def forward(self, x):
        return (x + self.p[:1]).a


class Overrides(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("s", torch.ones(3, 4).as_subclass(ScaledSum))

    def forward(self, x):
        return x + self.s


REFUSED = [  # (model, dynamic_shapes, error class, text the message must hold)
    (Writes, None, st.UnsupportedOpError, r"aten.add_.Tensor .* writes in place into a TwoTensor"),
    (WritesInner, None, st.UnsupportedOpError, r"aten.mul_.Tensor .* writes in place into a "
                                               r"TwoTensor"),
    (Attribute, None, st.UnsupportedOpError, r"TwoTensor .* is neither a parameter nor a buffer"
                                             r"(.|\n)*register_buffer"),
    (Dynamic, {"x": {0: st.Dim("n")}}, st.UnsupportedOpError,
     r"on a TwoTensor .* meets a dynamic size"),
    (Overrides, None, st.UnsupportedInputError, r"s is a ScaledSum, a tensor subclass that "
                                                r"overrides __torch_function__"),
]


@pytest.mark.parametrize("model,dynamic,kind,text", REFUSED,
                         ids=[r[0].__name__ for r in REFUSED])
def test_refused_with_the_class_and_the_fix(model, dynamic, kind, text):
    m = model()
    x = torch.randn(3, 4)
    with pytest.raises(kind, match=text):
        st.export(m, (x,), dynamic_shapes=dynamic)


def test_saving_subclass_state_points_to_torch_format():
    ep = st.export(NestedState(), (torch.randn(3, 4),))
    with pytest.raises(st.UnsupportedInputError, match=r"st.save cannot write p, b \(TwoTensor"
                                                       r"(.|\n)*torch.export.save\(ep.to_torch"):
        st.save(ep, io.BytesIO())


class InputSubclass(torch.nn.Module):
    def forward(self, x, y):
        return (x * 2 + y).sin()


def test_subclass_input_dispatches_when_the_program_runs():
    m = InputSubclass()
    args = (two(3, 4), torch.randn(3, 4))
    ep = st.export(m, args)
    ref = torch.export.export(m, args)
    for _ in range(2):
        args = (two(3, 4), torch.randn(3, 4))
        got, want = ep.module()(*args), m(*args)
        assert type(got) is TwoTensor and type(ref.module()(*args)) is TwoTensor
        torch.testing.assert_close(got.a, want.a)
        torch.testing.assert_close(got.b, want.b)
    with pytest.raises(st.InputMismatchError):
        ep.module()(two(2, 4), torch.randn(2, 4))


class InputAndState(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.p = torch.nn.Parameter(two(3, 4))

    def forward(self, x):
        return x * self.p + self.p.a


def test_subclass_input_with_subclass_state_meets_it_as_in_eager():
    # with a subclass input, subclass state is a tensor of the graph too (the two meet when
    # the program runs, as in eager); its inner tensors are still read from it
    m = InputAndState()
    ep = st.export(m, (two(3, 4),))
    for _ in range(2):
        x = two(3, 4)
        got, want = ep.module()(x), m(x)
        assert type(got) is TwoTensor
        torch.testing.assert_close((got.a, got.b), (want.a, want.b))


class BuildsWithInput(torch.nn.Module):
    def forward(self, x, y):
        return (TwoTensor(y, y * 2) + x).a


def test_subclass_dispatch_meeting_a_subclass_input_is_refused():
    with pytest.raises(st.UnsupportedInputError, match=r"input x is a TwoTensor(.|\n)*Fix: pass "
                                                       r"x's inner tensors"):
        st.export(BuildsWithInput(), (two(3, 4), torch.randn(3, 4)))


def test_torch_function_subclass_input_is_refused():
    with pytest.raises(st.UnsupportedInputError, match=r"x is a ScaledSum"):
        st.export(InputSubclass(), (torch.ones(3, 4).as_subclass(ScaledSum), torch.ones(3, 4)))


def test_program_with_subclass_state_exports_again():
    m = NestedState()
    x = torch.randn(3, 4)
    again = st.export(st.export(m, (x,)).module(), (x,))
    check_program(again, m, fresh(3, 4), bad=[(torch.randn(3, 3),)])


class OverridingTwo(TwoTensor):
    """A traceable wrapper subclass that also overrides __torch_function__ (eager runs the
    override first, which a graph of aten ops would skip)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **(kwargs or {}))
        return out * 3 if func is torch.Tensor.mul else out


class OverridingState(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.p = torch.nn.Parameter(OverridingTwo(torch.randn(3, 4), torch.randn(3, 4)))

    def forward(self, x):
        return (self.p * x).a


def test_traceable_subclass_overriding_torch_function_is_refused():
    with pytest.raises(st.UnsupportedInputError, match=r"p is a OverridingTwo, a tensor "
                                                       r"subclass that overrides __torch_function"):
        st.export(OverridingState(), (torch.randn(3, 4),))
