"""Rows for the issue's first bullet: ops and constructs that were refused exports."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from torch._higher_order_ops.hints_wrap import hints_wrapper
from torch._ops import HigherOrderOperator

import safetrace as st

from tests.export.dropin_table.runner import Fn, NoValues, Refuses, Row, run_row

D = torch.export.Dim
R = torch.randn


# -- torch.distributed collectives (a one-rank gloo group) ---------------------------------
class Collectives(nn.Module):
    def forward(self, x):
        dist = torch.distributed
        y = x * 2
        dist.all_reduce(y)
        gathered = torch.empty_like(x)
        dist.all_gather_into_tensor(gathered, x + 1)
        scattered = torch.empty_like(x)
        dist.reduce_scatter_tensor(scattered, x - 1)
        swapped = torch.empty_like(x)
        dist.all_to_all_single(swapped, x * 3)
        parts = [torch.empty_like(x)]
        dist.all_gather(parts, x.cos())
        return y, gathered, scattered, swapped, parts[0]


class AsyncCollective(nn.Module):
    def forward(self, x):
        y = x.clone()
        dist = torch.distributed
        dist.all_reduce(y, async_op=True).wait()
        return y


def _collective_targets(ep, ref, tmp) -> None:
    def names(prog):
        return {str(n.target) for n in prog.graph.nodes
                if getattr(n.target, "namespace", "") == "_c10d_functional"}
    assert names(ref) and names(ref) <= names(ep), (names(ref), names(ep))


def _in_group(row: Row):
    def custom(tmp: Path) -> None:
        dist = torch.distributed
        if not (dist.is_available() and dist.is_gloo_available()):
            import pytest
            pytest.skip("torch.distributed with gloo is not in this torch build")
        mine = not dist.is_initialized()
        if mine:
            dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
        try:
            run_row(row, tmp)
        finally:
            if mine:
                dist.destroy_process_group()
    return custom


COLLECTIVES = Row(
    "collectives", "c10d all_reduce/all_gather/all_gather_into_tensor/all_to_all_single/"
    "reduce_scatter_tensor", Collectives, (R(4, 3),), ({0: D("n", max=64)},),
    [(R(0, 3),), (R(1, 3),), (R(64, 3),)], [(R(65, 3),), (R(4, 2),)],
    check=_collective_targets)
ASYNC = Row(
    "collective-async-refused", "c10d collectives: async_op=True", AsyncCollective,
    (R(4, 3),), refused=(st.UnsupportedOpError, r"all_reduce\(\.\.\., async_op=True\)",
                         "async_op=False"),
    theirs=Refuses(Exception))


# -- single ops ---------------------------------------------------------------------------
class NonzeroStatic(nn.Module):
    def forward(self, x):
        return torch.nonzero_static(x, size=4, fill_value=-1)


class Multinomial(nn.Module):
    def forward(self, p):
        return torch.multinomial(p, 3, replacement=True)


class NativeMHA(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv, self.proj = nn.Linear(8, 24), nn.Linear(8, 8)

    def forward(self, q, k, v):
        return torch._native_multi_head_attention(
            q, k, v, 8, 2, self.qkv.weight, self.qkv.bias, self.proj.weight,
            self.proj.bias, None, need_weights=True, average_attn_weights=False)


class PadSequence(nn.Module):
    def forward(self, a, b):
        return nn.utils.rnn.pad_sequence([a, b], batch_first=True, padding_value=-1.0)


class IsNonzero(nn.Module):
    def forward(self, x):
        return torch.is_nonzero(x)


class LegacyType(nn.Module):
    def forward(self, x):
        return x.type(torch.FloatTensor) * 2 + x.type("torch.DoubleTensor").sum()


class EmptyOfATensor(nn.Module):
    def forward(self, x):
        n = torch.tensor([3])
        return torch.empty(n).shape[0] + x, torch.zeros(1, n) + 1


def _seq3(b: int, s: int = 5) -> tuple:
    q = R(b, s, 8)
    return (q, q.clone(), q.clone())


_MHA_B = D("b", min=1, max=16)
OPS = [
    Row("nonzero-static", "aten.nonzero_static", NonzeroStatic,
        (torch.tensor([0.0, 1, 2, 0, 3, 4, 5]),), ({0: D("n")},),
        [(torch.zeros(0),), (torch.tensor([1.0]),), (torch.arange(9.0),)],
        stricter=[(torch.zeros(2, 2),)]),
    Row("multinomial", "aten.multinomial", Multinomial, (torch.rand(2, 5),),
        ({0: D("b"), 1: D("k")},), [(torch.rand(1, 1),), (torch.rand(3, 9),)],
        [(torch.rand(2, 5, 1),)], seed=True),
    # weights need a nonempty query: b >= 1 (torch.export's own program takes b = 0 and
    # promises weights the kernel does not return)
    Row("native-mha", "aten._native_multi_head_attention", lambda: NativeMHA().eval(),
        _seq3(2), ({0: _MHA_B}, {0: _MHA_B}, {0: _MHA_B}), [_seq3(1), _seq3(16)],
        [_seq3(2, 6), _seq3(17)], stricter=[_seq3(0)]),
    Row("pad-sequence", "pad_sequence", PadSequence, (R(3, 2), R(5, 2)),
        ({0: D("la")}, {0: D("lb")}), [(R(0, 2), R(1, 2)), (R(7, 2), R(2, 2))],
        [(R(3, 3), R(5, 2))]),
    # torch.export refuses it (a guard on the data); ours reads the bool at run time
    Row("is-nonzero", "aten.is_nonzero", IsNonzero, (torch.ones(()),), None,
        [(torch.zeros(()),), (torch.full((), 3.0),)], [(torch.ones(1),),
                                                        (torch.ones((), dtype=torch.int64),)],
        theirs=Refuses(Exception, "data-dependent")),
    Row("legacy-type", "Tensor.type(torch.FloatTensor)", LegacyType, (R(3).double(),),
        ({0: D("n", max=8)},), [(R(0).double(),), (R(1).double(),), (R(8).double(),)],
        [(R(3),), (R(9).double(),)]),
    Row("legacy-type-unknown-refused", "Tensor.type(<an unknown name>)",
        lambda: Fn(lambda x: x.type("torch.NoSuchTensor")), (R(3),),
        refused=(st.UnsupportedOpError, "not the name of a tensor type", "."),
        theirs=Refuses(Exception)),
    Row("empty-of-a-tensor", "torch.empty(<1-element tensor>)", EmptyOfATensor, (R(4),),
        ({0: D("n", max=16)},), [(R(0),), (R(1),), (R(16),)], [(R(17),)],
        stricter=[(R(2, 2),), (R(4).double(),)]),
]


# -- constructs ---------------------------------------------------------------------------
class Hinted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, y):
        out = hints_wrapper(lambda a, b: self.lin(a).relu() + b * 2.0, (x, y), {},
                            hints={"outer_body": True})
        return out - 1


class _UserHop(HigherOrderOperator):
    def __init__(self, name: str) -> None:
        super().__init__(name)

    def __call__(self, fn, x):
        return super().__call__(fn, x)


_dense_hop = _UserHop("st_table_dense_hop")
_grad_only_hop = _UserHop("st_table_grad_only_hop")


@_dense_hop.py_impl(torch._C.DispatchKey.CompositeExplicitAutograd)
@_dense_hop.py_impl(torch._C.DispatchKey.Autograd)
@_grad_only_hop.py_impl(torch._C.DispatchKey.Autograd)
def _hop_body(fn, x):
    return fn(x)


class UserHop(nn.Module):
    def forward(self, x):
        return _dense_hop(lambda y: y.sin() * 2, x) + 1


class UserHopWithoutDense(nn.Module):
    def forward(self, x):
        return _grad_only_hop(lambda y: y.sin(), x)


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


class FunctionUnderVmap(nn.Module):
    def forward(self, x):
        return torch.vmap(_Sin.apply)(x)


class CondInts(nn.Module):
    def forward(self, x):
        y, n = torch.cond(x.sum() > 0, lambda v: (v + 1, 3), lambda v: (v - 1, 4), (x,))
        return y * n, n


class CondSize(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda v: (v + 1, v.shape[0]),
                          lambda v: (v - 1, v.shape[0]), (x,))


@torch.jit.script
def _scripted(x: torch.Tensor, k: int) -> torch.Tensor:
    return x.sin() * k + x.cumsum(0)


class CallsScript(nn.Module):
    def forward(self, x):
        return _scripted(x, 3) - 1


class Profiled(nn.Module):
    def forward(self, x):
        with torch.profiler.record_function("block"):
            y = x * 2
        with torch.autograd.profiler.record_function("other"):
            return y + 1


_LIB = torch.library.Library("st_table_cia", "DEF")
_LIB.define("scaled(Tensor x, int k=2) -> Tensor")
_LIB.define("no_kernel(Tensor x) -> Tensor")
_LIB.impl("scaled", lambda x, k=2: x.sin() * k + x.shape[0], "CompositeImplicitAutograd")


class CompositeOp(nn.Module):
    def forward(self, x):
        return torch.ops.st_table_cia.scaled(x) + torch.ops.st_table_cia.scaled(x, k=5)


def _no_profiler_nodes(ep, ref, tmp) -> None:
    assert not any("profiler" in str(n.target) for n in ep.graph.nodes)


def _pos(n: int, sign: float = 1.0) -> tuple:
    return (sign * (torch.rand(n) + 0.1),)


N32 = D("n", max=32)
CONSTRUCTS = [
    # torch.export takes it; its program returns FakeTensors when run (torch 2.13)
    Row("hints-wrapper", "hints_wrapper", Hinted, (R(3, 4), R(3, 4)),
        ({0: D("b", max=64)}, {0: D("b", max=64)}),
        [(R(0, 4), R(0, 4)), (R(1, 4), R(1, 4)), (R(64, 4), R(64, 4))],
        [(R(3, 4), R(4, 4)), (R(65, 4), R(65, 4))],
        theirs=NoValues("torch 2.13's program of hints_wrapper returns FakeTensors")),
    Row("user-hop", "user-defined higher-order op (dense kernel)", UserHop, (R(2, 3),),
        ({0: N32},), [(R(0, 3),), (R(1, 3),), (R(32, 3),)], [(R(33, 3),), (R(2, 4),)],
        theirs=Refuses(AssertionError, "ProxyTorchDispatchMode")),
    Row("user-hop-refused", "user-defined higher-order op without a dense kernel",
        UserHopWithoutDense, (R(2, 3),),
        refused=(st.UnsupportedOpError, "higher-order operator st_table_grad_only_hop",
                 "call the operator's body function directly"),
        theirs=Refuses(Exception)),
    Row("function-under-vmap", "autograd.Function under vmap", FunctionUnderVmap,
        (R(2, 3),), None, [(R(2, 3),)], [(R(3, 3),)],
        theirs=Refuses(AssertionError)),
    Row("cond-ints", "torch.cond branches returning ints", CondInts, _pos(4), None,
        [_pos(4, -1.0)], [(torch.rand(5),)], stricter=[(torch.rand(4, 1),)]),
    Row("cond-dynamic-size-refused", "torch.cond branch returning a dynamic size", CondSize,
        _pos(4), ({0: N32},),
        refused=(st.UnsupportedOpError, "output 1 is a dynamic size",
                 "return the size as a tensor"),
        theirs=Refuses(Exception, "branch return type")),
    Row("torchscript-call", "TorchScript function call", CallsScript, (R(3, 4),),
        ({0: D("n")},), [(R(0, 4),), (R(1, 4),), (R(6, 4),)], [(R(3, 5),)]),
    Row("profiler-ranges", "profiler.record_function", Profiled, (R(4),),
        ({0: D("n", max=8)},), [(R(0),), (R(1),), (R(8),)], [(R(9),)], [(R(2, 2),)],
        check=_no_profiler_nodes),
    Row("composite-custom-op", "custom op with a CompositeImplicitAutograd kernel",
        CompositeOp, (R(4),), ({0: N32},), [(R(0),), (R(1),), (R(32),)],
        [(R(33),)], [(R(4, 1),)]),
    Row("missing-fake-refused", "custom op with neither kernel nor fake",
        lambda: Fn(lambda x: torch.ops.st_table_cia.no_kernel(x)), (R(3),),
        refused=(st.UnsupportedOpError, "st_table_cia::no_kernel has no fake", "."),
        theirs=Refuses(Exception)),
]

ROWS = [Row(COLLECTIVES.id, COLLECTIVES.item, custom=_in_group(COLLECTIVES)),
        Row(ASYNC.id, ASYNC.item, custom=_in_group(ASYNC)), *OPS, *CONSTRUCTS]
