"""Behaviours pinned by the first part of torch's test_export.py, met by a user who
replaces ``torch.export.export(...)`` with ``st.export(...).to_torch()`` (issue 21).  Each
case runs the same model through torch.export in the same test.  Our own cases."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch._higher_order_ops.while_loop import while_loop
from torch.export import Dim

import safetrace as st

from tests.export.dropin_check import same


# -- a write through a view inside a loop body or a branch (test_while_loop_tensor_constant_idx)
# The converted subgraph must be functional (torch's control-flow operators require it):
# ``out[i] = v`` becomes a scatter of the new value into ``out``, not a copy nobody reads.
class FillRowsInLoop(nn.Module):
    def forward(self, x, y0):
        def cond_fn(idx, out, acc):
            return idx < out.size(0)

        def body_fn(idx, out, acc):
            i = idx.item()
            torch._check(i >= 0)
            torch._check(i < x.size(0))
            acc = x[i] + acc
            out = out.clone()
            out[i] = acc
            return idx + 1, out, acc

        _, out, _ = while_loop(cond_fn, body_fn, [torch.tensor(0), torch.zeros_like(x), y0])
        return out


class WritesThroughViewsInBranches(nn.Module):
    def forward(self, p, x):
        def true_fn(x):
            out = x.clone()
            out[1:3] = 7.0          # slice
            out[0].mul_(2)          # select, then an in-place op on the view
            return out

        def false_fn(x):
            out = x.clone()
            out.diagonal().add_(1)  # diagonal
            out[:, 0][1:].zero_()   # a view of a view
            return out

        return torch.cond(p, true_fn, false_fn, (x,))


WRITE_CASES = [
    # (model, input maker by seed; the loop's length is the example's: sizes are static)
    (FillRowsInLoop, lambda k: (torch.randn(4, 3), torch.randn(3))),
    (WritesThroughViewsInBranches, lambda k: (torch.tensor(k % 2 == 0), torch.randn(4, 4))),
]


@pytest.mark.parametrize("model, make", WRITE_CASES, ids=["while_loop", "cond"])
def test_subgraph_write_through_a_view_survives_conversion(model, make) -> None:
    ref = torch.export.export(model(), make(0))
    ours = st.export(model(), make(0))
    converted = ours.to_torch()
    for k in range(4):
        args = make(k)
        want = model()(*args)
        same(ours.module()(*args), want)
        same(converted.module()(*args), want)
        same(ref.module()(*args), want)
    with pytest.raises(st.InputMismatchError):
        ours.module()(make(0)[0], torch.randn(5))


# -- a fake kernel's size made as k * a fresh size (test_unbacked_bindings_for_divisible_u_symint)
@torch.library.custom_op("st_head::tens_of_rows", mutates_args=())
def tens_of_rows(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a[: 10 * int(b.item())].clone()


@tens_of_rows.register_fake
def _(a, b):
    n = torch.library.get_ctx().new_dynamic_size(min=0, max=len(a) // 10)
    return a.new_empty(n * 10, a.shape[1])


class TakesTensOfRows(nn.Module):
    def forward(self, a, b):
        return torch.ops.st_head.tens_of_rows(a, b) * 2


def test_fresh_size_times_a_constant_converts() -> None:
    args = (torch.randn(100, 4), torch.tensor(3))
    ref = torch.export.export(TakesTensOfRows(), args)
    ours = st.export(TakesTensOfRows(), args)
    converted = ours.to_torch()  # refused before: "10*u0 ... gives 10*u0"
    bindings = [n.meta["unbacked_bindings"] for n in converted.graph.nodes
                if "unbacked_bindings" in n.meta and n.name.startswith("tens_of_rows")]
    assert bindings and type(next(iter(bindings[0].values()))[-1]).__name__ == "DivideByKey"
    for k in (0, 1, 3, 10):
        b = torch.tensor(k)
        a = torch.randn(100, 4)
        want = TakesTensOfRows()(a, b)
        for prog in (ours, converted, ref):
            same(prog.module()(a, b), want)
    with pytest.raises(st.InputMismatchError):
        ours.module()(torch.randn(90, 4), torch.tensor(1))


# -- a constant made in forward and written in place is made anew by every call ------------
class BumpsALiteral(nn.Module):
    def forward(self, x):
        c = torch.tensor([6.0, 1.0])
        c.add_(2)
        c[1] = c[0] * 3
        return x * c


def test_constant_made_in_forward_and_written_is_fresh_every_call() -> None:
    ref = torch.export.export(BumpsALiteral(), (torch.randn(2),))
    ours = st.export(BumpsALiteral(), (torch.randn(2),))
    programs = {"ours": ours, "converted": ours.to_torch(), "torch": ref}
    for name, prog in programs.items():
        module = prog.module()
        for _ in range(3):  # eager gives [8, 24] every time (before: 10, 12, ... here)
            x = torch.randn(2)
            same(module(x), BumpsALiteral()(x))
    with pytest.raises(st.InputMismatchError):
        ours.module()(torch.randn(3))


# -- view / reshape to sizes read from data (test_simple_unbacked_view,
#    test_suggested_fixes_for_data_dependent_errors_basic): size >= 0 and the element count
#    are the op's preconditions, checked at run time
class ViewsToReadSizes(nn.Module):
    def forward(self, y, n):
        a, b = n.tolist()
        return y.view(a, 4) * 2, torch.zeros(a * 4).reshape(b, -1)


def test_view_to_sizes_read_from_data_checks_them_at_run_time() -> None:
    args = (torch.randn(24), torch.tensor([6, 3]))
    ours = st.export(ViewsToReadSizes(), args)
    ref = torch.export.export(ViewsToReadSizes(), args)
    model = ViewsToReadSizes()
    for prog in (ours, ours.to_torch(), ref):
        for b in (3, 1, 24, 8):
            inp = (torch.randn(24), torch.tensor([6, b]))
            same(prog.module()(*inp), model(*inp))
        for bad in ((torch.randn(24), torch.tensor([5, 1])), (torch.randn(24), torch.tensor([-6, 1])),
                    (torch.randn(24), torch.tensor([6, 5])), (torch.randn(24), torch.tensor([6, 0]))):
            with pytest.raises(RuntimeError):
                model(*bad)
            with pytest.raises(Exception):
                prog.module()(*bad)
    with pytest.raises(st.RuntimeAssertionError):
        ours.module()(torch.randn(24), torch.tensor([5, 1]))


# -- a GraphModule exported again keeps its own and its nodes' custom metadata
#    (test_custom_tag_metadata_re_export)
class LinearOnly(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.rand(4, 2))
        self.b = nn.Parameter(torch.rand(4))

    def forward(self, x):
        return torch.nn.functional.linear(x, self.w, self.b)


@pytest.mark.parametrize("again", ["ours", "converted", "torch"])
def test_re_export_keeps_custom_metadata(again: str) -> None:
    import copy

    inputs = (torch.zeros(1, 2),)
    model = LinearOnly()
    first = torch.export.export(model, inputs)
    gm = copy.deepcopy(first.graph_module)
    gm.meta["custom"] = {"f": "bar"}
    for node in gm.graph.nodes:
        if node.target is torch.ops.aten.linear.default:
            node.meta["custom"] = {"quantization_tag": "foo"}
    annotated = first._update(gm, first.graph_signature).module()
    if again == "torch":
        prog = torch.export.export(annotated, inputs)
    else:
        prog = st.export(annotated, inputs)
        prog = prog.to_torch() if again == "converted" else prog
    assert prog.graph_module.meta["custom"] == {"f": "bar"}
    tagged = [n for n in prog.graph.nodes if "custom" in n.meta]
    assert [(n.target, n.meta["custom"]) for n in tagged] == [
        (torch.ops.aten.linear.default, {"quantization_tag": "foo"})]
    x = torch.randn(1, 2)  # (static sizes)
    same(prog.module()(x), model(x))
    if again == "ours":
        with pytest.raises(st.InputMismatchError):
            prog.module()(torch.randn(3, 2))


# -- math.pow of a size to a whole power (test_math_pow) -------------------------------------
class ScalesByAPower(nn.Module):
    def forward(self, x, y):
        return y * math.pow(min(x.item(), 10), 10), y * math.pow(y.shape[0], 2)


def test_math_pow_of_a_size_is_symbolic() -> None:
    args = (torch.tensor(5), torch.randn(5))
    spec = (None, {0: Dim("n", max=64)})
    ours = st.export(ScalesByAPower(), args, dynamic_shapes=spec)
    ref = torch.export.export(ScalesByAPower(), args, dynamic_shapes=spec)
    for prog in (ours, ours.to_torch(), ref):
        for v, n in ((5, 5), (2, 1), (20, 0), (-3, 7)):
            inp = (torch.tensor(v), torch.randn(n))
            same(prog.module()(*inp), ScalesByAPower()(*inp))
    with pytest.raises(st.InputMismatchError):
        ours.module()(torch.tensor(1), torch.randn(65))
