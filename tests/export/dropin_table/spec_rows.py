"""Rows for the rest of the issue's first bullet: dynamic_shapes forms torch takes (deferred
asserts, dynamic ints, ``*args`` specs, AUTO dims), named results, and the constructs
that used to end in an internal exception."""

from __future__ import annotations

import warnings

import torch
from torch import nn
from torch.testing._internal.two_tensor import TwoTensor

import safetrace as st

from tests.export.dropin_table.runner import Refuses, Row, Stricter
from tests.helpers import assert_close

D = torch.export.Dim
R = torch.randn


class Reshape(nn.Module):
    def forward(self, x):
        return x.view(x.shape[0] - 1, -1)


class Head(nn.Module):
    def forward(self, x, n):
        return x[:n] * n, n + 1


class Star(nn.Module):
    def forward(self, *args):
        return args[0] + args[1] * 2


class Add(nn.Module):
    def forward(self, x, y):
        return x + y


class Add3(nn.Module):
    def forward(self, x, y, z):
        return x + y + z


class IfNonzero(nn.Module):
    def forward(self, x):
        return x + 1 if x.is_nonzero() else x - 1


class TopkOfSizes(nn.Module):
    def forward(self, x):
        t = x.new_tensor([x.shape[-1], 1])
        return x * torch.topk(t, 1).values


_CONST = torch.tensor([3.0, 1.0, 2.0, 2.0])


class NamedResults(nn.Module):
    """Named results of ops on a module constant, a global and a tensor made from sizes
    (all folded while tracing), and on the input."""

    def __init__(self) -> None:
        super().__init__()
        self.const = torch.tensor([5.0, 4.0, 6.0, 4.5])

    def forward(self, x):
        sized = x.new_tensor([x.shape[-1], 1.0, 2.0, x.shape[-1] - 1.0])
        return (torch.sort(self.const, descending=True), _CONST.max(0),
                torch.kthvalue(sized, 2), torch.mode(_CONST), torch.median(sized, 0),
                x.min(dim=0), torch.topk(sized, 2).indices)


class SubclassIn(nn.Module):
    def forward(self, x):
        return x.sin() + 1


def _two(n: int) -> TwoTensor:
    return TwoTensor(R(n), R(n))


class ScaledSum(torch.Tensor):
    """A subclass overriding __torch_function__ (eager runs the override first)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        out = super().__torch_function__(func, types, args, kwargs or {})
        return out * 2 if func is torch.Tensor.add else out


class PairSum(nn.Module):
    def forward(self, x, y):
        return torch.vmap(lambda a, b: (a * b).sum(0))(x, y)


class CondOnBuffer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("pred", torch.tensor(True))

    def forward(self, x):
        return torch.cond(self.pred, lambda v: v + 1, lambda v: v * 2, (x,))


class SumThree(nn.Module):
    def forward(self, x, y, z):
        return x.sum() + 2 * y.sum() + 3 * z.sum()


def _skips_override(ep, ref, tmp) -> None:
    x, y = R(3, 4).as_subclass(ScaledSum), R(3, 4)
    assert not torch.allclose(ref.module()(x, y), Add()(x, y))  # torch's: wrong


def _int_kept_general(ep, ref, tmp) -> None:
    # (torch's retrace of the converted program runs size-oblivious: no decision on n is
    # taken at the example, so the decomposed module takes n past x's 8 rows as eager)
    with warnings.catch_warnings():
        warnings.simplefilter("error", st.ConversionWarning)
        dec = ep.to_torch().run_decompositions().module()
    for n in (0, 1, 8, 20):
        x = _x()
        got, want = dec(x, n), Head()(x, n)
        assert_close(got[0], want[0])
        assert got[1] == want[1]


def _x(rows: int = 8) -> torch.Tensor:
    return R(rows, 3)


def _ints_in(lo: int, hi: int):
    return lambda c: all(lo <= a <= hi for a in c.args if isinstance(a, int))


def _additional() -> torch.export.AdditionalInputs:
    ai = torch.export.AdditionalInputs()
    ai.add((_x(), 2))
    ai.add((_x(), 6))
    return ai


def _sizes3(a: int, b: int, c: int) -> tuple:
    return (R(a, 2), R(b, 2), R(c, 2))


_DD = D("d", min=2, max=50)
_NB = D("b", min=2, max=16)
ROWS = [
    # a condition the named Dims do not promise stays a run-time check (sound), in both
    Row("deferred-asserts", "prefer_deferred_runtime_asserts_over_guards=True", Reshape,
        (R(3, 4),), {"x": (D.DYNAMIC, D.DYNAMIC)}, [(R(5, 8),), (R(2, 0),), (R(2, 7),)],
        [(R(4, 2),)], options={"prefer_deferred_runtime_asserts_over_guards": True},
        # (torch's program also asserts s % (s - 1) != 0: it refuses 2 rows, eager not)
        torch_runs=lambda c: c.args[0].shape[0] != 2),
    # torch's program specializes 0 and 1 (its ints are >= 2): compared where it runs
    Row("dynamic-int", "Dim.DYNAMIC on an int input", Head, (_x(), 4), (None, D.DYNAMIC),
        [(_x(), 0), (_x(), 1), (_x(), 8), (_x(), 20)], [(_x(), -1), (_x(), 2.0)],
        torch_runs=_ints_in(2, 8)),  # (and n <= 8: x's rows)
    # kept symbolic through torch's tools on the converted program (torch's retrace of it
    # decided n <= 8 at the example, a guard of the decomposed module, until the retrace
    # ran size-oblivious; before that it was refused, "no input's size" to check it by)
    Row("dynamic-int-tools", "dynamic int inputs through save/load and run_decompositions",
        Head, (_x(), 4), (None, D.DYNAMIC), [(_x(), 0), (_x(), 1), (_x(), 8)],
        [(_x(), -1)], torch_runs=_ints_in(2, 8),
        paths=("decompose", "torch_save", "st_save", "ours_decompose"),
        check=_int_kept_general),
    Row("additional-inputs-ints", "AdditionalInputs whose ints differ", Head, (_x(), 4),
        _additional(), [(_x(), 2), (_x(), 6), (_x(), 0), (_x(), 1)], [(_x(9), 4)],
        torch_runs=_ints_in(2, 8)),
    Row("var-args-spec", "torch's nested spec for forward(*args)", Star, (_x(4), _x(4)),
        (({0: D("b")}, {0: D("b")}),), [(_x(0), _x(0)), (_x(1), _x(1)), (_x(7), _x(7))],
        [(_x(3), _x(4))]),
    Row("auto-equals-named", "a named Dim that must equal a Dim.AUTO dim", Add,
        (_x(4), _x(4)), {"x": {0: D.AUTO}, "y": {0: _NB}},
        [(_x(2), _x(2)), (_x(16), _x(16))], [(_x(17), _x(17)), (_x(4), _x(5))],
        stricter=[(_x(1), _x(1))]),  # (torch's program takes b = 1 below b's min 2)
    Row("var-args-spec-wrong-length", "torch's nested spec for forward(*args): a nested "
        "entry of the wrong length", Star, (_x(4), _x(4)), {"args": ({0: D("b")},)},
        refused=(st.SpecError, r"\*args", r"'args': \(None, None\)"),
        theirs=Refuses(Exception, "dynamic_shapes")),
    Row("auto-two-named-refused", "two named Dims equal only through a Dim.AUTO dim",
        Add3, (_x(4), _x(4), _x(4)), {"x": {0: D("a")}, "y": {0: D.AUTO}, "z": {0: D("c")}},
        refused=(st.ConstraintViolationError, "must equal", r"Dim\('a'\)"),
        theirs=Refuses(Exception, "Constraints violated")),
    Row("topk-of-sizes", "torch.topk(x.new_tensor([...]), 1).values", TopkOfSizes,
        (R(3, 5),), {"x": {0: D("b", min=0, max=8)}}, [(R(0, 5),), (R(1, 5),), (R(8, 5),)],
        [(R(3, 6),), (R(9, 5),)]),
    Row("named-results", "values/indices of sort, max, kthvalue, mode, median, min, topk",
        NamedResults, (R(2, 4),), {"x": {0: D("b", min=1, max=8)}},
        [(R(1, 4),), (R(8, 4),)], [(R(9, 4),), (R(2, 5),)]),
    Row("is-nonzero-if-refused", "a Python if on is_nonzero (a decision on data)",
        IfNonzero, (torch.ones(()),),
        refused=(st.DataDependentError, "u0 == 1", r"st\.check"),
        theirs=Refuses(Exception, "data-dependent")),
    Row("subclass-input", "tensor subclass input (a two-tensor wrapper)", SubclassIn,
        (_two(3),), None, [(_two(3),)], [(_two(4),)]),
    Row("subclass-torch-function-refused", "tensor subclass overriding __torch_function__",
        Add, (R(3, 4).as_subclass(ScaledSum), R(3, 4)),
        refused=(st.UnsupportedInputError, "x is a ScaledSum", "."), check=_skips_override,
        theirs=Stricter("torch.export records aten.add past the override: its program "
                        "computes x + y where eager computes (x + y) * 2")),
    Row("script-module-refused", "ScriptModule", lambda: torch.jit.script(nn.Linear(3, 3)),
        (R(2, 3),), refused=(st.UnsupportedInputError, "TorchScript module",
                             "export the original nn.Module"),
        theirs=Refuses(ValueError, "ScriptModule")),
    # eager's vmap also maps an empty batch; the program's map needs a slice: refused
    Row("vmap-dynamic-batch", "vmap over a dynamic batch", PairSum, (_x(3), _x(3)),
        ({0: D.DYNAMIC}, {0: D.DYNAMIC}), [(_x(1), _x(1)), (_x(5), _x(5))],
        [(_x(3), _x(4))], stricter=[(_x(0), _x(0))]),
    Row("buffer-cond-predicate", "a buffer as the cond predicate", CondOnBuffer, (R(4),),
        ({0: D("n", max=16)},), [(R(0),), (R(1),), (R(16),)], [(R(17),)]),
    Row("derived-of-derived", "a derived dim of a derived dim", SumThree,
        _sizes3(4, 5, 10), ({0: _DD}, {0: _DD + 1}, {0: 2 * (_DD + 1)}),
        [_sizes3(2, 3, 6), _sizes3(50, 51, 102)],
        [_sizes3(3, 4, 9), _sizes3(3, 5, 8), _sizes3(51, 52, 104)]),
]

