"""Programs with control flow on data: one table for the tests and the benchmark.

Each case: a model, example inputs, a dynamic_shapes spec, and `fresh(n, sign)` making
inputs of another size `n` (0 and 1 included) whose data drives the branch taken (`sign`
+1 / -1 picks the two outcomes of the cases that branch on a sum's sign).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch
import torch._higher_order_ops as hops
from torch.utils import _pytree as pytree

import safetrace as st


def while_loop(cond_fn, body_fn, carried):
    return hops.while_loop(cond_fn, body_fn, carried)


def hmap(f, xs, *args):
    return hops.map(f, xs, *args)


def scan(combine_fn, init, xs, **kw):
    return hops.scan(combine_fn, init, xs, **kw)


@contextlib.contextmanager
def python_semantics() -> Iterator[None]:
    """The operators' documented meaning in plain Python: a fast eager reference (torch's
    eager versions compile every call with dynamo, seconds per program)."""
    def cond(pred, t, f, operands=()):
        return t(*operands) if bool(pred) else f(*operands)

    def loop(cond_fn, body_fn, carried):
        carried = tuple(carried)
        while bool(cond_fn(*carried)):
            carried = tuple(body_fn(*carried))
        return carried

    def map_(f, xs, *args):
        leaves, spec = pytree.tree_flatten(xs)
        outs = [f(pytree.tree_unflatten([x[i] for x in leaves], spec), *args)
                for i in range(leaves[0].shape[0])]
        flat = [pytree.tree_flatten(o) for o in outs]
        return pytree.tree_unflatten([torch.stack([f[0][k] for f in flat])
                                      for k in range(len(flat[0][0]))], flat[0][1])

    def scan_(fn, init, xs, dim=0, reverse=False):
        leaves, spec = pytree.tree_flatten(xs)
        leaves = [x.movedim(dim, 0) for x in leaves]
        n = leaves[0].shape[0]
        carry, ys = init, [None] * n
        for i in (range(n - 1, -1, -1) if reverse else range(n)):
            carry, ys[i] = fn(carry, pytree.tree_unflatten([x[i] for x in leaves], spec))
        flat = [pytree.tree_flatten(y) for y in ys]
        stacked = [torch.stack([f[0][k] for f in flat]).movedim(0, dim)
                   for k in range(len(flat[0][0]))]
        return carry, pytree.tree_unflatten(stacked, flat[0][1])

    saved = (torch.cond, hops.while_loop, hops.map, hops.scan)
    torch.cond, hops.while_loop, hops.map, hops.scan = cond, loop, map_, scan_
    try:
        yield
    finally:
        torch.cond, hops.while_loop, hops.map, hops.scan = saved


@dataclass
class Case:
    name: str
    make: Callable[[], torch.nn.Module]
    fresh: Callable[[int, int], tuple]
    dynamic: Callable[[], Any]
    min_size: int = 0   # smaller sizes are outside the program's input space
    reference: Any = None  # what eager computes, where torch's eager op cannot run it
    sizes: tuple = (0, 1, 2, 3, 7)


def _rows(n: int, sign: int, cols: int = 4, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed * 101 + n * 7 + (sign > 0))
    return torch.rand(n, cols, generator=g) * sign + 0.01 * sign


def _batch():
    return {"x": {0: st.Dim("n")}}


def _at_least_one(name: str, dim: int = 0, **others):
    return {name: {dim: st.Dim("n", min=1)}, **others}


class Basic(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x.cos() * 2, lambda x: x.sin() - 1, (x,))


class Params(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("scale", torch.full((4,), 0.5))

    def forward(self, x):
        return torch.cond(x.mean() > 0, lambda x: self.lin(x) * self.scale,
                          lambda x: (x - self.scale).relu(), (x,))


class Closure(torch.nn.Module):
    def forward(self, x, y):
        def t(x):
            return x + y

        def f(x):
            return x * y.abs()
        return torch.cond(y.sum() > 0, t, f, (x,))


class Nested(torch.nn.Module):
    def forward(self, x):
        def inner_t(x):
            return x * 3

        def inner_f(x):
            return x - 3

        def outer_t(x):
            return torch.cond(x[..., 0].sum() > 0.5, inner_t, inner_f, (x + 1,))

        def outer_f(x):
            return x.abs()
        return torch.cond(x.sum() > 0, outer_t, outer_f, (x,))


class Layers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(3))

    def forward(self, x):
        for layer in self.layers:
            x = torch.cond(x.sum() > 0, lambda h: layer(h).tanh(), lambda h: h * 0.5 + 1, (x,))
        return x


class MultiOut(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: (x * 2, x.sum(0)),
                          lambda x: (x - 1, x.sum(0) - 1), (x,))


class SymPred(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.shape[0] > 4, lambda x: x * 2, lambda x: x + 1, (x,))


class DiffSizes(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: torch.cat([x, x]) * 2, lambda x: x + 1, (x,))


class UnbackedInside(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x[x > 0.5] * 2, lambda x: x[x < -0.5], (x,))


class CheckInside(torch.nn.Module):
    def forward(self, x):
        def t(x):
            k = (x > 0.5).sum().item()
            torch._check(k >= 0)
            torch._check(k <= x.shape[0] * 4)
            return x.flatten()[:k] * 2

        def f(x):
            return x.flatten()[:0] + 0
        return torch.cond(x.sum() > 0, t, f, (x,))


class CondMatmul(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 6))

    def forward(self, x):
        y = torch.cond(x.sum() > 0, lambda x: x @ self.w, lambda x: (x * 2) @ self.w, (x,))
        return y.sum(-1)


class Counter(torch.nn.Module):
    def forward(self, x, n):
        def c(i, x):
            return i < n

        def b(i, x):
            return i + 1, x * 2 + 1
        return while_loop(c, b, (torch.zeros((), dtype=torch.int64), x))


class Decode(torch.nn.Module):
    """Greedy decoding into a fixed buffer until an end token or the buffer is full."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(8, 4)
        self.head = torch.nn.Linear(4, 8)

    def forward(self, h, tokens):
        eos = 3
        positions = torch.arange(tokens.shape[0])

        def c(step, tokens, h, done):
            return (step < tokens.shape[0]) & ~done

        def b(step, tokens, h, done):
            logits = self.head(h)
            tok = logits.argmax(-1)
            tokens = torch.where(positions == step, tok, tokens)
            h = torch.tanh(h + self.emb(tok))
            return step + 1, tokens, h, tok == eos

        start = (torch.zeros((), dtype=torch.int64), tokens, h, torch.zeros((), dtype=torch.bool))
        step, tokens, h, done = while_loop(c, b, start)
        return step, tokens, h


class Growing(torch.nn.Module):
    def forward(self, x):
        def c(x):
            return x.sum() < 40

        def b(x):
            return (torch.cat([x, x.abs() + 1]),)
        return while_loop(c, b, (x,))


def _growing_reference(x):
    while x.sum() < 40:
        x = torch.cat([x, x.abs() + 1])
    return (x,)


class MapBasic(torch.nn.Module):
    def forward(self, xs, y):
        return hmap(lambda x, y: x * y + 1, xs, y)


class MapParams(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, xs):
        return hmap(lambda x: self.lin(x).relu(), xs)


class ScanCumsum(torch.nn.Module):
    def forward(self, init, xs):
        return scan(lambda c, x: (c + x, (c * x).sin()), init, xs)


class ScanRNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = torch.nn.Linear(8, 4)

    def forward(self, h, xs):
        def step(h, x):
            h = torch.tanh(self.cell(torch.cat([h, x], -1)))
            return h, h * 2
        return scan(step, h, xs)


class ScanReverseDim1(torch.nn.Module):
    def forward(self, init, xs):
        return scan(lambda c, x: (c * 0.5 + x, c - x), init, xs, dim=1, reverse=True)


class IntCounter(torch.nn.Module):
    """A carried Python int: data-dependent inside the loop and after it."""

    def forward(self, x):
        return while_loop(lambda i, x: i < 5, lambda i, x: (i + 1, x * 2 - 1), (0, x))


class UnbackedPred(torch.nn.Module):
    def forward(self, x):
        k = (x > 0).sum().item()
        return torch.cond(k > 3, lambda x: x + 1, lambda x: x * x, (x,))


class MapDict(torch.nn.Module):
    def forward(self, x):
        return hmap(lambda d, s: {"p": d["a"] * d["b"] + s, "q": d["a"].sum()},
                    {"a": x, "b": x + 1}, x.sum(0))


class ScanTuple(torch.nn.Module):
    def forward(self, x):
        def step(c, xs):
            return (c[0] + xs[0], c[1] * 0.5 + xs[1]), c[0] - xs[1]
        return scan(step, (x[0] * 0, x[0] * 0 + 1), (x, x.cos()))


def _decode_inputs(n: int, sign: int):
    g = torch.Generator().manual_seed(n * 13 + (sign > 0))
    return (torch.randn(4, generator=g) * sign, torch.zeros(max(n, 0), dtype=torch.int64))


CASES = [
    Case("basic", Basic, lambda n, s: (_rows(n, s),), _batch),
    Case("params_buffers", Params, lambda n, s: (_rows(n, s),), _batch),
    Case("closure", Closure, lambda n, s: (_rows(n, 1), _rows(1, s)[0]),
         lambda: {"x": {0: st.Dim("n")}, "y": None}),
    Case("nested", Nested, lambda n, s: (_rows(n, s),), _batch),
    Case("layers", Layers, lambda n, s: (_rows(n, s),), _batch),
    Case("multi_out", MultiOut, lambda n, s: (_rows(n, s),), _batch),
    Case("shape_pred", SymPred, lambda n, s: (_rows(n + (3 if s > 0 else 0), s),), _batch),
    Case("diff_sizes", DiffSizes, lambda n, s: (_rows(n, s),), _batch),
    Case("unbacked_inside", UnbackedInside, lambda n, s: (_rows(n, s) * 2 - s * 0.5,), _batch),
    Case("check_inside", CheckInside, lambda n, s: (_rows(n, s),), _batch),
    Case("cond_matmul", CondMatmul, lambda n, s: (_rows(n, s),), _batch),
    Case("while_counter", Counter, lambda n, s: (_rows(n, s), torch.tensor(3 + s)),
         lambda: {"x": {0: st.Dim("n")}, "n": None}),
    Case("while_decode", Decode, _decode_inputs,
         lambda: {"h": None, "tokens": {0: st.Dim("len")}}),
    Case("while_growing", Growing, lambda n, s: (_rows(n, 1) + 1,), lambda: _at_least_one("x"),
         min_size=1, reference=_growing_reference),
    Case("while_int_counter", IntCounter, lambda n, s: (_rows(n, s),), _batch),
    Case("unbacked_pred", UnbackedPred, lambda n, s: (_rows(n, 1) - (0.2 if s > 0 else 0.9),),
         _batch),
    Case("map_dict", MapDict, lambda n, s: (_rows(n, s),), lambda: _at_least_one("x"),
         min_size=1),
    Case("scan_tuple", ScanTuple, lambda n, s: (_rows(n, s),), lambda: _at_least_one("x"),
         min_size=1),
    Case("map_basic", MapBasic, lambda n, s: (_rows(n, s), _rows(1, s)[0]),
         lambda: _at_least_one("xs", y=None), min_size=1),
    Case("map_params", MapParams, lambda n, s: (_rows(n, s),),
         lambda: _at_least_one("xs"), min_size=1),
    Case("scan_cumsum", ScanCumsum, lambda n, s: (_rows(1, s)[0], _rows(n, s)),
         lambda: _at_least_one("xs", init=None), min_size=1),
    Case("scan_rnn", ScanRNN, lambda n, s: (_rows(1, s)[0], _rows(n, s)),
         lambda: _at_least_one("xs", h=None), min_size=1),
    Case("scan_reverse_dim1", ScanReverseDim1,
         lambda n, s: (_rows(1, s, cols=3)[0], _rows(3, s, cols=n)),
         lambda: _at_least_one("xs", 1, init=None), min_size=1),
]


class PyPredLike(torch.nn.Module):
    """A predicate known at export (a static shape): one branch, no subgraph."""

    def forward(self, x):
        return torch.cond(x.shape[0] > 2, lambda x: x * 2, lambda x: x + 1, (x,))
