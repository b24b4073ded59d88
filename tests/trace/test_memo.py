"""Calls on static sizes replayed from the first one (trace/memo.py): a replayed call gets
its own tensors, its own line and module stack, the layout and dtype the general path
gives, and nothing remembered outlives what it was computed from (a replaced shape rule,
the default dtype, the sign of a zero)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from safetrace import Dim
from safetrace.rules import get_rule
from safetrace.rules.registry import FAMILY
from tests.helpers import matches_eager
from tests.trace.rules_asked import RulesAsked


class _Swapped(torch.nn.Module):
    """The same call twice on tensors of one shape, operands swapped."""

    def forward(self, x, y):
        return x - y, y - x, torch.sub(y, x, alpha=2), torch.sub(x, y, alpha=2)


def test_a_replayed_call_takes_its_own_operands():
    model = _Swapped()
    for _ in range(2):  # the second export replays every call
        ep = st.export(model, (torch.randn(3, 4), torch.randn(3, 4)))
        x, y = torch.randn(3, 4), torch.randn(3, 4)
        for got, want in zip(ep.module()(x, y), model(x, y)):
            torch.testing.assert_close(got, want)
        with pytest.raises(st.InputMismatchError):
            ep.module()(torch.randn(2, 4), torch.randn(2, 4))
    ref = torch.export.export(model, (torch.randn(3, 4), torch.randn(3, 4)))
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    for got, want in zip(ep.module()(x, y), ref.module()(x, y)):
        torch.testing.assert_close(got, want)


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        return F.linear(x, self.w).relu()


class _TwoBlocks(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = _Block(), _Block()

    def forward(self, x):
        h = self.a(x)
        return self.b(h) + F.linear(h, self.a.w)


def _calls(ep, target):
    return [n for n in ep.graph.nodes if n.op == "call_function" and n.target == target]


def test_replayed_calls_keep_their_weights_lines_and_module_stacks():
    model = _TwoBlocks()
    first = st.export(model, (torch.randn(2, 4),))
    again = st.export(model, (torch.randn(2, 4),))
    for ep in (first, again):
        x = torch.randn(5, 4)[:2]
        torch.testing.assert_close(ep.module()(x), model(x))
    linears = [_calls(ep, torch.ops.aten.linear.default) for ep in (first, again)]
    assert len(linears[1]) == 3
    weights = [[n.args[1].meta["target"] for n in calls] for calls in linears]
    assert weights[0] == weights[1] == ["a.w", "b.w", "a.w"]
    for a, b in zip(*linears):
        assert a.meta["stack_trace"] == b.meta["stack_trace"]
        assert a.meta.get("nn_module_stack") == b.meta.get("nn_module_stack")
    stacks = [list(n.meta.get("nn_module_stack", {}).values()) for n in linears[1]]
    assert stacks[0][-1][0] == "a" and stacks[1][-1][0] == "b" and stacks[2] == []
    lines = [n.meta["stack_trace"].splitlines()[-1].strip() for n in linears[1]]
    assert lines == ["return F.linear(x, self.w).relu()"] * 2 + [
        "return self.b(h) + F.linear(h, self.a.w)"]
    ref = torch.export.export(model, (torch.randn(2, 4),))
    ref_stacks = [list(n.meta["nn_module_stack"].values())[-1][0]
                  for n in ref.graph.nodes if n.target == torch.ops.aten.linear.default]
    assert ref_stacks == ["a", "b", ""]


class _Layers(torch.nn.Module):
    """Two torch layers of one shape: the second's call is replayed from the first's, at
    the same line of the user's code, inside another module call."""

    def __init__(self) -> None:
        super().__init__()
        self.seq = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4))

    def forward(self, x):
        return self.seq(x)


def test_a_replayed_call_names_the_torch_layer_it_runs_in():
    model = _Layers()
    for _ in range(2):  # (replayed within the first export, and all of it in the second)
        ep = st.export(model, (torch.randn(2, 4),))
        lines = [n.meta["stack_trace"].splitlines() for n in
                 _calls(ep, torch.ops.aten.linear.default)]
        assert [trace[-1].strip() for trace in lines] == [
            "(in layer `seq.0`, Linear)", "(in layer `seq.1`, Linear)"]
        assert {trace[-2].strip() for trace in lines} == {"return self.seq(x)"}
        x = torch.randn(2, 4)
        torch.testing.assert_close(ep.module()(x), model(x))


class _LayoutAfterTranspose(torch.nn.Module):
    def forward(self, x):
        y = x.transpose(0, 1)
        z = x.transpose(0, 1)  # the same call again: a view, its layout unknown
        return y if z.is_contiguous() else z


def test_a_replayed_view_keeps_its_layout():
    # static sizes: the transpose's strides are known (not contiguous), again when replayed
    x = torch.randn(3, 4)
    for _ in range(2):
        ep = st.export(_LayoutAfterTranspose(), (x,))
        torch.testing.assert_close(ep.module()(x), _LayoutAfterTranspose()(x))
    # sizes that may be 1: its contiguity is not known, again when replayed
    for _ in range(2):
        with pytest.raises(st.UnsupportedOpError, match="is_contiguous"):
            st.export(_LayoutAfterTranspose(), (x,), dynamic_shapes=({0: Dim("a"), 1: Dim("b")},))


def _merged(x):
    return x.view(4, 2)


def _merged_in_try(x):
    try:
        return x.view(4, 2)
    except RuntimeError:
        return x.reshape(4, 2) * 2


@pytest.mark.parametrize("first", ["fits", "raises"])
def test_a_replayed_view_is_checked_on_its_own_strides_and_try(first):
    # two (2, 2, 2) inputs, neither contiguous: one call key (the view of a tensor of
    # unknown layout); whether eager's view fits depends on the example's strides, and a
    # `try` around the line refuses it: a replay of the view recorded by one export
    # checks the next one as a fresh trace does
    from safetrace.trace import memo

    fits = torch.randn(2, 2, 4)[:, :, :2]    # strides (8, 4, 1): dims 0 and 1 merge
    raises = torch.randn(2, 4, 2)[:, :2, :]  # strides (8, 2, 1): they do not
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        _merged(raises)
    if first == "raises":
        with pytest.raises(st.OpShapeError, match="view size is not compatible"):
            st.export(_merged, (raises,))
    for _ in range(2):
        ep = st.export(_merged, (fits,))
        torch.testing.assert_close(ep.module()(fits), _merged(fits))
    assert any(k[0] is torch.Tensor.view and k[-1] == 2 for k in memo.MEMO)  # (recorded)
    with pytest.raises(st.OpShapeError, match="view size is not compatible"):
        st.export(_merged, (raises,))
    with pytest.raises(st.OpShapeError, match="inside a `try` block"):
        st.export(_merged_in_try, (fits,))
    ep = st.export(_merged, (fits,))
    torch.testing.assert_close(ep.module()(fits), _merged(fits))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 2, 2))


class _AddConstant(torch.nn.Module):
    def __init__(self, c: float) -> None:
        super().__init__()
        self.c = c

    def forward(self, x):
        return torch.add(x, self.c)


def test_the_sign_of_a_zero_argument_is_not_taken_from_an_earlier_call():
    x = torch.tensor([-0.0, 1.0])
    for c in (0.0, -0.0, 0.0):
        ep = st.export(_AddConstant(c), (torch.randn(2),))
        got = ep.module()(x)
        assert torch.equal(torch.signbit(got), torch.signbit(x + c)), c


class _IntPlusFloat(torch.nn.Module):
    def forward(self, i):
        return i + 1.5


def test_the_default_dtype_is_part_of_what_is_remembered():
    i = torch.arange(4)
    assert st.export(_IntPlusFloat(), (i,)).module()(i).dtype == torch.float32
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        ep = st.export(_IntPlusFloat(), (i,))
        out = ep.module()(i)
        assert out.dtype == torch.float64 == _IntPlusFloat()(i).dtype
    finally:
        torch.set_default_dtype(before)
    assert st.export(_IntPlusFloat(), (i,)).module()(i).dtype == torch.float32


class _Add(torch.nn.Module):
    def forward(self, x, y):
        return x + y


def test_a_replaced_shape_rule_is_asked_again():
    op = torch.ops.aten.add.Tensor
    original, family = get_rule(op), FAMILY[op]
    args = (torch.randn(2, 3), torch.randn(2, 3))
    st.export(_Add(), args)
    st.export(_Add(), args)  # remembered now
    asked = []

    def counting(*a, **k):
        asked.append(1)
        return original(*a, **k)

    try:
        st.register_shape_rule(op)(counting)
        ep = st.export(_Add(), args)
        assert asked, "the replaced rule was not asked: a remembered answer outlived it"
        torch.testing.assert_close(ep.module()(*args), args[0] + args[1])
    finally:
        st.register_shape_rule(op)(original)
        FAMILY[op] = family  # (the library's rule again, as docs/ops.md lists it)
    n = len(asked)
    st.export(_Add(), args)
    assert len(asked) == n  # the original rule again, not the counting one


class _ViewThenPlain(torch.nn.Module):
    """unsqueeze of a view, then of a plain tensor of the same shape: the first result's
    layout is unknown, the second's contiguous."""

    def __init__(self, ask_view: bool) -> None:
        super().__init__()
        self.ask_view = ask_view

    def forward(self, x):
        a = x.t().unsqueeze(0)
        b = x.unsqueeze(0)
        asked = a if self.ask_view else b
        return asked * 2 if asked.is_contiguous() else asked


def test_a_call_on_a_view_and_on_a_plain_tensor_are_remembered_apart():
    x = torch.randn(4, 4)
    for _ in range(2):
        for ask_view in (False, True):  # (the view's strides: known, not contiguous)
            ep = st.export(_ViewThenPlain(ask_view), (x,))
            y = torch.randn(4, 4)
            torch.testing.assert_close(ep.module()(y), _ViewThenPlain(ask_view)(y))


class _LayerNormKeywords(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.LayerNorm(8), torch.nn.LayerNorm(8)
        with torch.no_grad():
            self.b.weight.mul_(3)

    def forward(self, x):
        # F.layer_norm hands weight and bias to the mode as keywords
        return self.a(x) + self.b(x)


def test_tensors_given_by_keyword_fill_their_own_slots():
    model = _LayerNormKeywords()
    for _ in range(2):
        ep = st.export(model, (torch.randn(2, 8),))
        x = torch.randn(2, 8)
        torch.testing.assert_close(ep.module()(x), model(x))
    weights = [n.kwargs.get("weight", n.args[2] if len(n.args) > 2 else None)
               for n in ep.graph.nodes if n.target == torch.ops.aten.layer_norm.default]
    assert [w.meta["target"] for w in weights] == ["a.weight", "b.weight"]


def test_a_tensor_given_twice_is_not_replayed_for_two_tensors():
    """``x * x`` then ``x * v0`` on the same static sizes: the first call's entry must not
    give the second ``v0 * v0`` (found by the differential fuzzer after the memo landed)."""
    class P(torch.nn.Module):
        def forward(self, x):
            v0 = x * x
            v1 = x * v0
            v2 = v1 + v1
            v3 = v0 + v2
            return v0, v1, v2, v3

    model = P()
    for _ in range(2):  # the second export starts with the first one's entries
        ep = st.export(model, (torch.randn(3, 5),))
        x = torch.randn(3, 5)
        for got, want in zip(ep.module()(x), model(x)):
            torch.testing.assert_close(got, want)


# -- calls on symbolic sizes: replayed while the environment is in the same state


class _ThreeAdds(torch.nn.Module):
    def forward(self, x, y):
        return x + y, (x + y) * 2, (x + y).relu()


def test_a_call_on_symbolic_sizes_is_replayed_within_the_export():
    n = st.Dim("n")
    spec = {"x": {0: n}, "y": {0: n}}
    model = _ThreeAdds()
    with RulesAsked(torch.ops.aten.add.Tensor) as rule:
        ep = st.export(model, (torch.randn(3, 4), torch.randn(3, 4)), dynamic_shapes=spec)
    assert rule.asked == 1  # the first add went the whole way, the others were replayed
    adds = _calls(ep, torch.ops.aten.add.Tensor)
    assert len(adds) == 3 and len({n.name for n in adds}) == 3
    assert [str(a.meta["val"].shape[0]) for a in adds] == ["s0"] * 3  # (the trace's sizes)
    ref = torch.export.export(model, (torch.randn(3, 4), torch.randn(3, 4)),
                              dynamic_shapes={"x": {0: torch.export.Dim("n")},
                                              "y": {0: torch.export.Dim("n")}})
    for rows in (0, 1, 7):
        x, y = torch.randn(rows, 4), torch.randn(rows, 4)
        for got, want, theirs in zip(ep.module()(x, y), model(x, y), ref.module()(x, y)):
            torch.testing.assert_close(got, want)
            torch.testing.assert_close(got, theirs)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 4), torch.randn(2, 4))


class _AddTwice(torch.nn.Module):
    def forward(self, x, y, z):
        return x + y, x + z


def test_a_call_on_other_symbolic_sizes_is_not_replayed():
    """``x + z`` after ``x + y``: same op, dtypes and ranks, but z's size is another
    symbol; replaying the first call would drop the guard tying z to x."""
    model = _AddTwice()
    args = (torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4))
    n = st.Dim("n")
    spec = {"x": {0: n}, "y": {0: n}, "z": {0: st.Dim.AUTO}}
    with RulesAsked(torch.ops.aten.add.Tensor) as rule:
        ep = st.export(model, args, dynamic_shapes=spec)
    assert rule.asked == 2
    x = torch.randn(5, 4)
    for got, want in zip(ep.module()(x, x, x), model(x, x, x)):
        torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):
        ep.module()(x, x, torch.randn(4, 4))
    ref = torch.export.export(model, args, dynamic_shapes={
        "x": {0: torch.export.Dim("n")}, "y": {0: torch.export.Dim("n")},
        "z": {0: torch.export.Dim.AUTO}})
    for got, theirs in zip(ep.module()(x, x, x), ref.module()(x, x, x)):
        torch.testing.assert_close(got, theirs)


class _AddsAroundACheck(torch.nn.Module):
    def forward(self, x, y):
        a = x + y  # a guard: x's size equals y's (the environment changes)
        b = x + y  # decided by the environment now: remembered
        torch._check(x.shape[0] >= 2)  # a fact: the environment changes again
        c = x + y  # not replayed from `b` (another epoch): asked again, remembered
        d = x + y  # replayed from `c`
        return a, b, c, d


def test_a_fact_between_two_calls_on_symbolic_sizes_makes_the_second_ask_again():
    model = _AddsAroundACheck()
    args = (torch.randn(3, 4), torch.randn(3, 4))
    spec = {"x": {0: st.Dim.AUTO}, "y": {0: st.Dim.AUTO}}
    with RulesAsked(torch.ops.aten.add.Tensor) as rule:
        ep = st.export(model, args, dynamic_shapes=spec)
    assert rule.asked == 3
    x, y = torch.randn(6, 4), torch.randn(6, 4)
    for got, want in zip(ep.module()(x, y), model(x, y)):
        torch.testing.assert_close(got, want)
    for bad in ((torch.randn(1, 4), torch.randn(1, 4)), (x, torch.randn(5, 4))):
        with pytest.raises(st.InputMismatchError):
            ep.module()(*bad)


class _Squares(torch.nn.Module):
    def __init__(self, twice_first: bool) -> None:
        super().__init__()
        self.twice_first = twice_first

    def forward(self, x, y):
        if self.twice_first:
            return x * x, x * y, y * y
        return x * y, x * x, y * x


@pytest.mark.parametrize("twice_first", [True, False])
def test_a_tensor_given_twice_on_symbolic_sizes_takes_its_own_operands(twice_first):
    model = _Squares(twice_first)
    n = st.Dim("n")
    ep = st.export(model, (torch.randn(3, 4), torch.randn(3, 4)),
                   dynamic_shapes={"x": {0: n}, "y": {0: n}})
    for rows in (0, 1, 5):
        x, y = torch.randn(rows, 4), torch.randn(rows, 4)
        for got, want in zip(ep.module()(x, y), model(x, y)):
            torch.testing.assert_close(got, want)


class _SqueezeThenReshape(torch.nn.Module):
    def forward(self, x):
        y = x.squeeze(0)  # its shape depends on whether x.shape[0] can be 1
        return y.reshape(y.shape[0], -1)


def test_calls_on_symbolic_sizes_are_not_replayed_into_another_export():
    """The same key (``squeeze`` on sizes ``s0``) in a later export, whose ``s0`` is
    another environment's symbol with another range: traced again there (a replay of the
    first export's answer, where ``s0 >= 2``, would miss that a size 1 is squeezed)."""
    model = _SqueezeThenReshape()
    x = torch.randn(3, 4)
    for _ in range(2):
        st.export(model, (x,), dynamic_shapes={"x": {0: st.Dim("n", min=2)}})
    ep = st.export(model, (x,), dynamic_shapes={"x": {0: st.Dim.AUTO}})
    for rows in (1, 2, 5):  # (1: squeezed, a side of its own, exporter/auto_small.py)
        x = torch.randn(rows, 4)
        torch.testing.assert_close(ep.module()(x), model(x))
    with pytest.raises(st.InputMismatchError):  # (reshape(0, -1) is ambiguous)
        ep.module()(torch.randn(0, 4))
    ref = torch.export.export(model, (torch.randn(3, 4),),
                              dynamic_shapes={"x": {0: torch.export.Dim.AUTO}})
    torch.testing.assert_close(ep.module()(x), ref.module()(x))


def test_calls_on_symbolic_sizes_are_replayed_in_another_export_of_the_same_spec():
    """A later export of the same model with the same spec and example sizes reaches the
    same environment states (symbolic/history.py): its calls are replayed from the
    first export's, and it gives the same program; a changed range is another state."""
    model = _ThreeAdds()
    args = (torch.randn(3, 4), torch.randn(3, 4))
    spec = {"x": {0: st.Dim("n")}, "y": {0: st.Dim("n")}}
    with RulesAsked(torch.ops.aten.add.Tensor) as rule:
        first = st.export(model, args, dynamic_shapes=spec)
        asked = rule.asked
        again = st.export(model, args, dynamic_shapes=spec)
        assert rule.asked == asked  # (nothing asked again)
        st.export(model, args, dynamic_shapes={"x": {0: st.Dim("n", max=9)},
                                               "y": {0: st.Dim("n", max=9)}})
        assert rule.asked == asked + 1  # (another range: the rule asked again)
    assert str(again.graph) == str(first.graph)
    for rows in (0, 1, 6):
        matches_eager(again, model, (torch.randn(rows, 4), torch.randn(rows, 4)))
    with pytest.raises(st.InputMismatchError):
        again.module()(torch.randn(3, 4), torch.randn(2, 4))


class _ViewsBySize(torch.nn.Module):
    def forward(self, x, y):
        b = x.shape[0]
        return x.view(b, 2, 4) * 2, y.view(b, 2, 4) + 1


def test_a_size_given_to_a_call_is_keyed_by_its_expression():
    """``x.view(b, 2, 4)`` with ``b`` a symbolic size: remembered with ``b``'s
    expression, and replayed with the replaying trace's node for it (its ``sym_size``
    read), in this export and the next; the programs are the same and match eager."""
    model = _ViewsBySize()
    args = (torch.randn(3, 8), torch.randn(3, 8))
    spec = {"x": {0: st.Dim("n")}, "y": {0: st.Dim("n")}}
    with RulesAsked(torch.ops.aten.view.default) as rule:
        first = st.export(model, args, dynamic_shapes=spec)
        asked = rule.asked
        again = st.export(model, args, dynamic_shapes=spec)
        assert rule.asked == asked
    assert str(again.graph) == str(first.graph)
    views = _calls(again, torch.ops.aten.view.default)
    assert len(views) == 2 and views[0].args[1][0] is views[1].args[1][0]  # (one read of n)
    for rows in (0, 1, 5):
        matches_eager(again, model, (torch.randn(rows, 8), torch.randn(rows, 8)))
    with pytest.raises(st.InputMismatchError):
        again.module()(torch.randn(3, 8), torch.randn(2, 8))


class _Transposed(torch.nn.Module):
    def forward(self, x, y):
        a, b = x.transpose(0, 1), y.transpose(0, 1)  # exact strides, on symbolic sizes
        return a * 2, b.transpose(1, 0) + 1, a.reshape(-1)


def test_exact_strides_on_symbolic_sizes_are_keyed_and_replayed():
    """A transposed tensor of symbolic sizes has exact strides (expressions of the
    sizes): calls on it are keyed by them, and a replayed transpose's result gets them
    again as this export's values; the next export asks no rule again and gives the same
    program, layouts included."""
    model = _Transposed()
    args = (torch.randn(3, 5), torch.randn(3, 5))
    spec = {"x": {0: st.Dim("n"), 1: st.Dim("m")}, "y": {0: st.Dim("n"), 1: st.Dim("m")}}
    with RulesAsked(torch.ops.aten.transpose.int) as rule:
        first = st.export(model, args, dynamic_shapes=spec)
        asked = rule.asked
        again = st.export(model, args, dynamic_shapes=spec)
        assert rule.asked == asked
    assert str(again.graph) == str(first.graph)
    layouts = [[str(n.meta["val"].st_layout) for n in _calls(ep, torch.ops.aten.transpose.int)]
               for ep in (first, again)]
    assert layouts[0] == layouts[1] and "s1" in layouts[0][0]
    for rows, cols in ((0, 3), (1, 1), (4, 6)):
        matches_eager(again, model, (torch.randn(rows, cols), torch.randn(rows, cols)))


class _Norm(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.BatchNorm1d(4), torch.nn.BatchNorm1d(4)

    def forward(self, x):
        return self.b(self.a(x))


def _mutated(ep):
    return sorted(s.target for s in ep.graph_signature.output_specs
                  if s.kind == "buffer_mutation")


def test_batch_norm_in_eval_is_replayed_and_in_training_writes_its_statistics():
    """An op that may write (batch_norm's running statistics) and writes nothing for
    the arguments given (eval) is remembered; the same layers in training mode are keyed
    apart (the flag is an argument) and record their writes every time."""
    model = _Norm()
    for training in (False, True, False, True):
        model.train(training)
        ep = st.export(model, (torch.randn(3, 4),))
        assert len(_calls(ep, torch.ops.aten.batch_norm.default)) == 2
        assert _mutated(ep) == (["a.num_batches_tracked", "a.running_mean", "a.running_var",
                                 "b.num_batches_tracked", "b.running_mean", "b.running_var"]
                                if training else [])
        x = torch.randn(3, 4)
        ref = torch.export.export(model, (torch.randn(3, 4),))
        torch.testing.assert_close(ep.module()(x), ref.module()(x))


class _Pieces(torch.nn.Module):
    """Ops with several results on static sizes: a split by size and by sizes, unbind,
    and a named result (max over a dim), each piece used."""

    def forward(self, x):
        q, k, v = x.split(4, dim=-1)
        a, b = torch.split(x, [5, 7], dim=1)
        rows = x.t().unbind(0)
        top = x.max(dim=1)
        return q * k + v, a.sum(1) - b.sum(1), rows[2] + rows[11], top.values, top.indices


def _pieces_of(ep):
    """Each multi-result node's target, then its getitem users (index, line, layout)."""
    out = []
    for n in ep.graph.nodes:
        if n.op == "call_function" and isinstance(n.meta.get("val"), (tuple, list)):
            items = [(u.args[1], u.meta["stack_trace"], u.meta["val"].st_contig,
                      tuple(u.meta["val"].shape)) for u in n.users]
            out.append((str(n.target), type(n.meta["val"]).__name__,
                        n.meta["stack_trace"], sorted(items, key=lambda t: t[0])))
    return out


def test_an_op_with_several_results_is_replayed_with_a_getitem_each():
    from safetrace.trace import memo

    model = _Pieces()
    memo.refresh()
    first = st.export(model, (torch.randn(6, 12),))
    n_entries = len(memo.MEMO)
    again = st.export(model, (torch.randn(6, 12),))
    assert len(memo.MEMO) == n_entries  # (nothing new: every call was replayed)
    assert any(entry[8] is None for entry in memo.MEMO.values())  # (a several-results one)
    assert _pieces_of(first) == _pieces_of(again) and len(_pieces_of(again)) == 4
    assert [n.name for n in first.graph.nodes] == [n.name for n in again.graph.nodes]
    ref = torch.export.export(model, (torch.randn(6, 12),))
    for x in (torch.randn(6, 12), torch.randn(6, 12)):
        for got, want, eager in zip(again.module()(x), ref.module()(x), model(x)):
            torch.testing.assert_close(got, want)
            torch.testing.assert_close(got, eager)
    with pytest.raises(st.InputMismatchError):
        again.module()(torch.randn(6, 13))
    # (a named result stays one: .values and .indices)
    assert type(st.export(lambda x: x.max(dim=0), (torch.randn(3, 4),)).module()(
        torch.randn(3, 4))).__name__ == "max"
