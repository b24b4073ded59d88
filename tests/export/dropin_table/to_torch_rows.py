"""Rows for the issue's second bullet: ``to_torch()`` never refuses an equal program, and
torch's own tools (``run_decompositions``, ``.module()``, ``unflatten``, re-export,
FakeTensor inputs) take what it produces."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import safetrace as st

from tests.export.dropin_table.runner import SAME, Fn, Refuses, Row, same

D = torch.export.Dim
R = torch.randn
_DATA = [(torch.tensor([0, 0]),), (torch.tensor([1, 6]),), (torch.tensor([7, 2]),)]


def _sum(x):
    a, b = x.tolist()
    torch._check_is_size(a)
    torch._check_is_size(b)
    return torch.ones(a + b), torch.ones(b + a) * 2


def _half(x):
    a = x[0].item()
    torch._check_is_size(a)
    return torch.ones(a // 2), torch.ones((a + 1) // 2)


def _ten(x):
    a = x[0].item()
    torch._check_is_size(a)
    return torch.ones(10 * a), torch.ones(a * 10)


def _max_order(x):
    a, b = x.tolist()
    torch._check_is_size(a)
    torch._check_is_size(b)
    return torch.ones(max(a, b)), torch.ones(max(b, a)), torch.ones(min(a, 2 * b))


def _int_div(x, y):
    return torch.ones(int(y.shape[0] / 1)) + y


def _numbering(x, y):
    m = y.nonzero()  # numbered before x's in torch's trace
    k = x.nonzero()
    return torch.cat([k, k]).sum(), m.repeat(3, 1).shape[0] + 0 * m.sum()


class Fn2(nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x, y):
        return self.fn(x, y)


def _equal_sizes(rid: str, item: str, fn, sized: bool, theirs=SAME) -> Row:
    """A size written two ways that are equal: converted, decomposed by torch, and
    compared with torch.export's program of the same code."""
    if not sized:
        return Row(rid, item, lambda: Fn(fn), (torch.tensor([3, 4]),), None, _DATA,
                   paths=("decompose",))
    y = torch.tensor([0.0, 1.0, 2.0, 3.0])
    return Row(rid, item, lambda: Fn2(fn), (torch.tensor([3, 4]), y),
               (None, {0: D("n", max=16)}),
               [(d[0], torch.arange(float(n))) for d in _DATA for n in (0, 1, 9)],
               [(torch.tensor([3, 4]), R(17))], paths=("decompose",), theirs=theirs)


_FALSE_REFUSALS = "to_torch: a false 'would change the program' refusal"
EQUAL_SIZES = [
    _equal_sizes("eq-u0-plus-u1", f"{_FALSE_REFUSALS} (u0 + u1)", _sum, False),
    _equal_sizes("eq-u0-floordiv-2", f"{_FALSE_REFUSALS} (u0//2)", _half, False),
    _equal_sizes("eq-10-u0", f"{_FALSE_REFUSALS} (10*u0)", _ten, False),
    _equal_sizes("eq-max-order", f"{_FALSE_REFUSALS} (Max argument order)", _max_order,
                 False),
    # (torch.export specializes n on int(n / 1): "Constraints violated")
    _equal_sizes("eq-int-s0-div-1", f"{_FALSE_REFUSALS} (int(s0/1))", _int_div, True,
                 Refuses(Exception, "Constraints violated")),
    _equal_sizes("eq-unbacked-numbering", f"{_FALSE_REFUSALS} (unbacked numbering)",
                 _numbering, True),
]


class _SubWithConstants(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.foo = torch.ones(3)  # a plain tensor attribute: a lifted constant

    def forward(self, x):
        return x + self.foo + torch.tensor([1.0, 2.0, 3.0])


class ConstantsInAndOut(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.sub = _SubWithConstants()
        self.foo = torch.ones(3) * 2

    def forward(self, x):
        return self.sub(x) * self.foo + torch.tensor(5.0)


class ParamInDict(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.table = {"w": nn.Parameter(torch.full((2, 3), 0.5))}

    def forward(self, x):
        return x * self.table["w"]


class NoGradBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(3, 3), nn.Linear(3, 3)

    def forward(self, x):
        with torch.no_grad():
            y = self.a(x)
        return self.b(y) + self.a(x).sin()


def _grads(module, x) -> dict:
    for p in module.parameters():
        p.grad = None
    module(x).sum().backward()
    return {n: p.grad for n, p in module.named_parameters()}


def _same_grads(ep, ref, tmp) -> None:
    """Gradients through ours, the converted and torch's program are eager's: nothing
    flows through the no_grad block (a lost region let it)."""
    torch.manual_seed(0)
    model = NoGradBlock()
    ep = st.export(model, (R(4, 3),), dynamic_shapes=({0: D("b", max=64)},))
    ref = torch.export.export(model, (R(4, 3),), dynamic_shapes=({0: D("b", max=64)},))
    targets = [n.target for n in ep.to_torch().graph.nodes]
    assert torch.ops.higher_order.wrap_with_set_grad_enabled in targets
    for n in (1, 4, 9):
        x = R(n, 3)
        want = _grads(model, x)
        for prog in (ep.module(), ep.to_torch().module(), ref.module()):
            same(_grads(prog, x), want)


@torch.library.custom_op("st_table::three_ints", mutates_args=())
def _three_ints(t: torch.Tensor, x: torch.Tensor) -> tuple[int, int, int]:
    return tuple(int(x[i].item()) for i in range(3))


@torch.library.register_fake("st_table::three_ints")
def _three_ints_fake(t, x):
    sizes = tuple(torch.library.get_ctx().new_dynamic_size() for _ in range(3))
    for i, size in enumerate(sizes):
        torch._check(size <= t.shape[i])
    return sizes


class PicksByIndices(nn.Module):
    def forward(self, t, x):
        i, j, k = _three_ints(t, x)
        return t[:i, None, :j, None, :k], t[None, ..., None, j]


class FirstHalf(nn.Module):
    def forward(self, x, y):
        return y[: x.size(0) // 2]


class HalvesTwice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.m1, self.m2 = FirstHalf(), FirstHalf()

    def forward(self, x, y):
        return y[: x.size(0) // 2] * 3 + self.m1(x, y) + self.m2(x, y)


class _SizeAndDouble(nn.Module):
    def forward(self, x):
        return x * 2, x.shape[0]


class ReturnsASize(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = _SizeAndDouble()

    def forward(self, x):
        y, n = self.inner(x + 1)
        return y + n, n


class _Linear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(2, 3)

    def forward(self, x):
        return self.linear(x).relu()


def _fake_inputs(tmp: Path) -> None:
    """Exported inside the user's FakeTensorMode, by both; torch's tools run the
    converted program on fake inputs of other sizes, in that mode."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    spec = ({0: D("n", max=64)},)
    for exporter in ("ours", "torch"):
        mode = FakeTensorMode()
        with mode:
            x, model = torch.rand(5, 2), _Linear()
            prog = (st.export(model, (x,), dynamic_shapes=spec).to_torch()
                    if exporter == "ours" else
                    torch.export.export(model, (x,), dynamic_shapes=spec))
            for run in (prog.module(), prog.run_decompositions().module()):
                for n in (0, 1, 7):
                    out = run(torch.rand(n, 2))
                    assert out.shape == (n, 3) and out.fake_mode is mode
            with pytest.raises(Exception):
                prog.module()(torch.rand(65, 2))


class CountsCalls(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = nn.Buffer(torch.zeros(1))

    def forward(self, x):
        self.calls.add_(1)
        return x.sum(0) * self.calls + x.size(0)


def _re_export(tmp: Path) -> None:
    """A to_torch() module exported again with its dims dynamic, by st.export and by
    torch.export (no shape rule was missing for the conversion's own nodes)."""
    spec = ({0: D("n", min=2, max=32)},)
    x = R(5, 3)

    def source():
        return st.export(CountsCalls(), (x,), dynamic_shapes=spec).to_torch().module()

    for again in (lambda: st.export(source(), (x,), dynamic_shapes=spec),
                  lambda: st.export(source(), (x,), dynamic_shapes=spec).to_torch(),
                  lambda: torch.export.export(source(), (x,), dynamic_shapes=spec)):
        module, model = again().module(), CountsCalls()
        for n in (2, 7, 32):  # the counter advances in both
            y = R(n, 3)
            same(module(y), model(y))
        for bad in (R(1, 3), R(33, 3)):
            with pytest.raises(Exception):
                module(bad)


_PRESERVE_M1 = {"preserve_module_call_signature": ("m1",)}
_DH = D("d", min=1, max=64)
ROWS = [
    *EQUAL_SIZES,
    Row("decompose-constants-preserved", "to_torch: run_decompositions ('Output c_foo does "
        "not exist'), a lifted constant passed to a preserved call", ConstantsInAndOut,
        (R(2, 3),), ({0: D("b")},), [(R(0, 3),), (R(1, 3),), (R(4, 3),)], [(R(2, 4),)],
        paths=("decompose", "unflatten"),
        options={"preserve_module_call_signature": ("sub",)}),
    Row("param-in-dict-module", "to_torch: .module() ('c_lifted_tensor_0 is not a buffer')",
        ParamInDict, (R(4, 2, 3),), {"x": {0: D("n")}}, [(R(0, 2, 3),), (R(1, 2, 3),)],
        [(R(4, 3, 3),)], paths=("decompose", "torch_save")),
    Row("fake-tensor-inputs", "to_torch: FakeTensor inputs", custom=_fake_inputs),
    Row("no-grad-region", "to_torch: a lost no_grad region", NoGradBlock, (R(4, 3),),
        ({0: D("b", max=64)},), [(R(0, 3),), (R(1, 3),), (R(64, 3),)], [(R(65, 3),)],
        check=_same_grads, paths=("st_save",)),
    Row("custom-op-several-ints", "to_torch: tuple >= int (each int of a custom op read)",
        PicksByIndices, (R(4, 5, 6), torch.tensor([2, 3, 4])), None,
        [(R(4, 5, 6), torch.tensor(i)) for i in ([0, 0, 0], [3, 4, 5], [1, 2, 0])],
        [(R(4, 5, 7), torch.tensor([2, 3, 4]))]),
    # torch's program specializes d = 1 (its d >= 2)
    Row("preserved-derived-size", "to_torch: a preserved call signature with a size no "
        "input carries (a derived size's root)", HalvesTwice, (R(10), R(10)),
        ((2 * _DH,), (2 * _DH,)), [(R(2 * n), R(2 * n)) for n in (1, 2, 7, 64)],
        # (an odd size is no 2*d: torch's program does not check the declared form)
        [(R(130), R(130))], stricter=[(R(5), R(5))], paths=("unflatten",),
        torch_runs=lambda c: c.args[0].shape[0] >= 4, options=_PRESERVE_M1),
    Row("preserved-call-returns-size", "to_torch: a preserved call returning a size "
        "(found by the audit)", ReturnsASize, (R(3),), ({0: D("b")},),
        [(R(0),), (R(1),), (R(5),)], [(R(2, 2),)], paths=("unflatten", "decompose"),
        options={"preserve_module_call_signature": ("inner",)},
        theirs=Refuses(Exception)),
    # torch's retrace hoists the size read onto the program input: read again inside the
    # call from its own input (interop/hierarchy.py), so the call unflattens
    Row("preserved-call-returns-size-decomposed-unflatten", "to_torch: a preserved call "
        "returning a size, unflatten after run_decompositions (found by the audit)",
        ReturnsASize, (R(3),), ({0: D("b")},), [(R(0),), (R(1),), (R(5),)],
        paths=("unflatten_decomposed",), theirs=Refuses(Exception),
        options={"preserve_module_call_signature": ("inner",)}),
    Row("re-export-converted", "to_torch module re-exported with dynamic dims",
        custom=_re_export),
]
