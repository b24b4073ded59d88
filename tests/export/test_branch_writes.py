"""In-place writes inside control-flow subgraphs.

Traced: a branch or body writing one of its inputs through a result that may be that input
(``torch.atleast_1d(y).add_(1)``: no view in the op's schema, ``y`` itself in eager) is
refused, as a direct ``y.add_(1)`` is (torch's eager cond, while_loop, scan and map refuse
any input mutation, and so does torch.export).

Loaded: a file may hold a subgraph that writes an operand (one saved before that refusal;
the loader accepts in-place ops on their first argument).  The write analysis then counts
only the operands the subgraph writes as written: the weights it also reads stay
parameters, so ``ep.module()`` keeps autograd through them, as eager's Python does (before,
every operand of the call counted as written and the weights ran detached: no gradient,
silently)."""

from __future__ import annotations

import io

import pytest
import torch
from torch._higher_order_ops.scan import scan
from torch._higher_order_ops.while_loop import while_loop

import safetrace as st
from tests.helpers import assert_close

K = 4
AUTO = st.Dim.AUTO


class CondWritesThroughAlias(torch.nn.Module):
    def forward(self, x, y):
        def writes(x, y):
            torch.atleast_1d(y).add_(1)  # y itself: a write to the branch's input
            return x + y.sum()

        return torch.cond(x.sum() > 0, writes, lambda x, y: x * 2, (x, y))


class MapWritesThroughAlias(torch.nn.Module):
    def forward(self, xs, y):
        def body(x, y):
            torch.atleast_1d(y).mul_(2)
            return x + y

        return st.map(body, xs, y)


@pytest.mark.parametrize("model", [CondWritesThroughAlias(), MapWritesThroughAlias()],
                         ids=["cond", "map"])
def test_a_write_to_an_input_through_an_aliasing_result_is_refused(model):
    args = (torch.randn(3, K).abs(), torch.randn(K))
    with pytest.raises(st.UnsupportedOpError, match=r"writes in place to an input of the "
                                                    r"branch .*atleast_1d\(y\)"):
        st.export(model, args)


@pytest.mark.slow  # (torch compiles the branch to find the write: ~10 s on first use)
def test_torch_export_refuses_the_same_write_in_a_cond_branch():
    with pytest.raises(Exception, match="mutation"):
        torch.export.export(CondWritesThroughAlias(), (torch.randn(3, K).abs(), torch.randn(K)))


class Weighted(torch.nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin, self.kind = torch.nn.Linear(K, K), kind

    def forward(self, x, y):
        if self.kind == "cond":
            return torch.cond(x.sum() > 0, lambda x, y: self.lin(x) + y.sum(),
                              lambda x, y: self.lin(x) * 2, (x, y))
        if self.kind == "while":
            return while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, self.lin(a) + y.sum()),
                              (torch.tensor(0), x))[1]

        def f(c, row):
            n = c + self.lin(row) + y.sum()
            return n, n * 1
        return scan(f, torch.zeros(K), x)[1]


class WritingEagerly(Weighted):
    """What the edited program computes, in Python: the write before each run of the
    subgraph."""

    def forward(self, x, y):
        if self.kind == "cond":
            if x.sum() > 0:
                y.add_(1)
                return self.lin(x) + y.sum()
            return self.lin(x) * 2
        if self.kind == "while":
            for _ in range(3):
                y.add_(1)
                x = self.lin(x) + y.sum()
            return x
        c, ys = torch.zeros(K), []
        for row in x:
            y.add_(1)
            c = c + self.lin(row) + y.sum()
            ys.append(c * 1)
        return torch.stack(ys)


_SUBGRAPH = {"cond": "true_graph_0", "while": "while_loop_body_graph_0",
             "scan": "scan_combine_graph_0"}


def _loaded_with_a_write(kind: str, args: tuple, dynamic_shapes: dict) -> st.ExportedProgram:
    """The program of Weighted(kind) with `y.add_(1)` first in its subgraph, saved and
    loaded (a file an earlier safetrace could write)."""
    ep = st.export(Weighted(kind), args, dynamic_shapes=dynamic_shapes)
    sub = getattr(ep.graph_module, _SUBGRAPH[kind])
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    y = next(n for n in placeholders if n.name == "y")
    with sub.graph.inserting_after(placeholders[-1]):
        write = sub.graph.call_function(torch.ops.aten.add_.Tensor, (y, 1))
    write.meta = dict(y.meta)
    sub.recompile()
    buffer = io.BytesIO()
    st.save(ep, buffer)
    buffer.seek(0)
    return st.load(buffer)


def _rows(b: int, seed: int, shape: tuple = ()) -> torch.Tensor:
    return torch.randn(b, *shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("kind", ["cond", "while"])
def test_a_loaded_subgraph_writing_an_input_keeps_autograd_through_the_weights(kind):
    dims = {"x": {0: AUTO}} if kind == "cond" else None
    x0 = _rows(3, 0, (K,)).abs() if kind == "cond" else _rows(K, 0)
    mod = _loaded_with_a_write(kind, (x0, _rows(K, 1)), dims).module()
    eager = WritingEagerly(kind)
    xs = [_rows(b, b, (K,)).abs() for b in (1, 5)] + [-_rows(2, 9, (K,)).abs()] \
        if kind == "cond" else [_rows(K, s) for s in (2, 3)]
    for i, x in enumerate(xs):
        y_ours, y_eager = _rows(K, 10 + i), _rows(K, 10 + i)
        got, want = mod(x, y_ours), eager(x, y_eager)
        assert_close(got, want)
        assert_close(y_ours, y_eager)  # the write reached the caller's y, as eager's
        assert got.requires_grad and want.requires_grad
        (gw,) = torch.autograd.grad(got.sum(), mod.lin.weight)
        (ww,) = torch.autograd.grad(want.sum(), eager.lin.weight)
        assert_close(gw, ww)
    assert all(p.requires_grad for p in mod.parameters())


def test_a_loaded_scan_writing_an_input_runs_as_eager_without_grad_and_refuses_with_it():
    mod = _loaded_with_a_write("scan", (_rows(3, 0, (K,)), _rows(K, 1)),
                               {"x": {0: AUTO}}).module()
    eager = WritingEagerly("scan")
    with torch.no_grad():
        for b in (1, 6):
            x = _rows(b, b, (K,))
            y_ours, y_eager = _rows(K, 20 + b), _rows(K, 20 + b)
            assert_close(mod(x, y_ours), eager(x, y_eager))
            assert_close(y_ours, y_eager)
    # torch's scan cannot train through an input it writes: it says so (the weights are
    # parameters, not silently detached copies)
    with pytest.raises(RuntimeError, match="in-place input"):
        mod(_rows(2, 30, (K,)), _rows(K, 31))
