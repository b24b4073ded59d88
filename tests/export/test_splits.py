"""Size splits: a decision on a named Dim's size keeps the declared range (exporter/splits.py).

Every program is checked against eager at every size of the declared range that matters
(1 included), and inputs outside the declared space are rejected before running."""

import pytest
import torch

import safetrace as st

SEQ = st.Dim("seq", min=1, max=64)


class OneIsSpecial(torch.nn.Module):
    """torch.export accepts this with seq in [1, 64] and returns x + x at seq == 1."""

    def forward(self, x):
        if x.shape[1] == 1:
            return x * 3
        return x + x


class SameEitherWay(torch.nn.Module):
    """Both sides of the decision trace the same ops (transformers' `q_length == 1` shape)."""

    def forward(self, x):
        n = x.shape[1]
        k = 2 if n == 1 else 2
        return x * k + n


class ThreeWays(torch.nn.Module):
    def forward(self, x):
        n = x.shape[1]
        if n == 1:
            return x * 3
        elif n <= 8:
            return x.cumsum(1)
        return x - 1


class TwoDims(torch.nn.Module):
    def forward(self, x):
        y = x * 3 if x.shape[0] == 1 else x + 1
        return y.sum(1, keepdim=True) if x.shape[1] == 1 else y.cumsum(1)


class SevenIsSpecial(torch.nn.Module):
    """`n == 7` decided at n = 5: seq != 7 holds on two ranges around the point."""

    def forward(self, x):
        return x * 7 if x.shape[1] == 7 else x.cumsum(1)


class Uneven(torch.nn.Module):
    """b is decided on one side of the seq split only."""

    def forward(self, x):
        if x.shape[1] == 1:
            return x * 3
        return x + 1 if x.shape[0] == 1 else x.cumsum(0)


class ConditionOnOneSide(torch.nn.Module):
    """Only the seq == 1 side needs an even batch (a residual condition of that side)."""

    def forward(self, x):
        if x.shape[1] == 1:
            return x.reshape(-1, 2).sum(1)
        return x.sum(1)


def _conds(graph):
    return [n for n in graph.nodes if n.op == "call_function"
            and n.target is torch.ops.higher_order.cond]


def _check(ep, model, shapes):
    mod = ep.module()
    for shape in shapes:
        x = torch.randn(*shape)
        assert torch.allclose(mod(x), model(x)), shape


def _rejected(ep, shapes):
    mod = ep.module()
    for shape in shapes:
        with pytest.raises(st.InputMismatchError):
            mod(torch.randn(*shape))


@pytest.mark.parametrize("example", [5, 1, 2, 64])
def test_the_unsound_pattern_gives_eager_results_at_every_size(example):
    m = OneIsSpecial()
    ep = st.export(m, (torch.randn(2, example),), dynamic_shapes={"x": {1: SEQ}})
    assert len(_conds(ep.graph)) == 1
    _check(ep, m, [(2, k) for k in (*range(1, 10), 33, 63, 64)])
    out = ep.module()(torch.ones(2, 1))
    assert torch.equal(out, torch.full((2, 1), 3.0))  # not x + x
    _rejected(ep, [(2, 0), (2, 65), (3, 4)])
    assert ep.range_constraints["s0"].lower == 1 and ep.range_constraints["s0"].upper == 64
    text = str(ep)
    assert "  seq == 1: its own graph" in text and "  2 <= seq <= 64: its own graph" in text


def test_same_graph_on_both_sides_drops_the_guard():
    m = SameEitherWay()
    ep = st.export(m, (torch.randn(2, 5),), dynamic_shapes={"x": {1: SEQ}})
    assert not _conds(ep.graph)
    assert "guard dropped" in str(ep)
    _check(ep, m, [(2, k) for k in (1, 2, 3, 7, 64)])
    _rejected(ep, [(2, 0), (2, 65)])


def test_three_ranges_nest_two_conds():
    m = ThreeWays()
    ep = st.export(m, (torch.randn(2, 5),), dynamic_shapes={"x": {1: SEQ}})
    inner = ep.graph_module.false_graph_0.graph
    assert len(_conds(ep.graph)) == 1 and len(_conds(inner)) == 1
    _check(ep, m, [(2, k) for k in range(1, 65)])
    _rejected(ep, [(2, 0), (2, 65)])


def test_a_point_inside_the_range_splits_in_three():
    m = SevenIsSpecial()
    ep = st.export(m, (torch.randn(2, 5),), dynamic_shapes={"x": {1: SEQ}})
    assert "  seq == 7: its own graph" in str(ep)
    _check(ep, m, [(2, k) for k in range(1, 65)])
    _rejected(ep, [(2, 0), (2, 65)])


def _parity(x):
    return x * 2 if x.shape[1] % 3 != 0 else x


def test_a_condition_on_many_ranges_splits_on_the_condition():
    """No few ranges express `seq % 3 != 0`: the two answers are traced as a relation's
    (exporter/relation_splits.py), a torch.cond on the condition between them."""
    ep = st.export(_parity, (torch.randn(2, 4),), dynamic_shapes={"x": {1: SEQ}})
    assert len(_conds(ep.graph)) == 1
    _check(ep, _parity, [(2, k) for k in range(1, 65)])
    _rejected(ep, [(2, 0), (2, 65)])
    with pytest.raises(st.ConstraintViolationError, match="it holds when seq % 3 != 0"):
        st.export(_parity, (torch.randn(2, 4),), dynamic_shapes={"x": {1: SEQ}}, max_splits=0)


def test_two_dims_split_into_four_programs():
    m = TwoDims()
    b = st.Dim("b", min=1, max=16)
    ep = st.export(m, (torch.randn(3, 5),), dynamic_shapes={"x": {0: b, 1: SEQ}})
    assert str(ep).count("its own graph") == 4
    _check(ep, m, [(i, k) for i in (1, 2, 5, 16) for k in (1, 2, 9, 64)])
    _rejected(ep, [(0, 3), (17, 3), (3, 0), (3, 65)])


def test_a_dim_split_on_one_side_only():
    m = Uneven()
    b = st.Dim("b", min=1, max=16)
    ep = st.export(m, (torch.randn(3, 5),), dynamic_shapes={"x": {0: b, 1: SEQ}})
    assert str(ep).count("its own graph") == 3  # (b, seq == 1) merged: one graph
    _check(ep, m, [(i, k) for i in (1, 2, 16) for k in (1, 2, 64)])
    _rejected(ep, [(0, 3), (17, 1), (3, 65)])


def test_saved_and_converted_split_programs_keep_dispatching(tmp_path):
    m = ThreeWays()
    ep = st.export(m, (torch.randn(2, 5),), dynamic_shapes={"x": {1: SEQ}})
    st.save(ep, tmp_path / "three.st")
    loaded = st.load(tmp_path / "three.st")
    _check(loaded, m, [(2, k) for k in (1, 2, 8, 9, 64)])
    _rejected(loaded, [(2, 0), (2, 65)])
    converted = ep.to_torch().module()
    for k in (1, 2, 8, 9, 64):
        x = torch.randn(2, k)
        assert torch.allclose(converted(x), m(x)), k


def test_a_condition_of_one_side_applies_on_that_side_only():
    m = ConditionOnOneSide()
    ep = st.export(m, (torch.randn(4, 3),), dynamic_shapes={"x": {0: st.Dim.DYNAMIC, 1: SEQ}})
    _check(ep, m, [(4, 1), (6, 1), (5, 2), (5, 64), (3, 7)])
    _rejected(ep, [(5, 1), (3, 1)])  # odd batch: only seq == 1 needs it even


def test_the_number_of_splits_is_bounded():
    m = ThreeWays()
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(m, (torch.randn(2, 5),), dynamic_shapes={"x": {1: SEQ}}, max_splits=1)
    assert type(info.value).__name__ == "TooManySplits"
    assert "max_splits=1" in str(info.value) and "9 <= seq <= 64" in str(info.value)
    ep = st.export(m, (torch.randn(2, 5),), dynamic_shapes={"x": {1: SEQ}}, max_splits=2)
    _check(ep, m, [(2, k) for k in (1, 5, 20)])


def test_max_splits_zero_checks_the_size_below_two_at_run_time():
    # no split allowed: the side seq == 1 is not traced; torch.export accepts the program
    # (it runs seq == 1 unchecked, as x + x), safetrace's refuses it before computing
    m = OneIsSpecial()
    ep = st.export(m, (torch.randn(2, 5),), dynamic_shapes={"x": {1: SEQ}}, max_splits=0)
    assert not _conds(ep.graph) and ep.deferred_checks
    _check(ep, m, [(2, k) for k in (2, 3, 33, 64)])
    with pytest.raises(st.InputMismatchError, match=r"must be >= 2 \(from `if x.shape"):
        ep.module()(torch.randn(2, 1))
    _rejected(ep, [(2, 0), (2, 65)])
    torch_ep = torch.export.export(m, (torch.randn(2, 5),),
                                   dynamic_shapes={"x": {1: torch.export.Dim("seq", max=64)}})
    assert torch.equal(torch_ep.module()(torch.ones(2, 1)), torch.full((2, 1), 2.0))


def test_a_split_never_mutates_the_model_or_inputs():
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("n", torch.zeros(()))

        def forward(self, x):
            self.n.add_(1)
            return x * self.n if x.shape[1] == 1 else x + self.n

    m = Counter()
    x = torch.randn(2, 5)
    before = x.clone()
    ep = st.export(m, (x,), dynamic_shapes={"x": {1: SEQ}})
    assert float(m.n) == 0 and torch.equal(x, before)
    mod, ref = ep.module(), Counter()
    for k in (1, 3, 1, 64):
        a = torch.randn(2, k)
        assert torch.allclose(mod(a), ref(a)), k
    assert float(m.n) == 0


def test_explain_lists_the_splits():
    report = st.explain(OneIsSpecial(), (torch.randn(2, 5),), dynamic_shapes={"x": {1: SEQ}})
    assert report.ok and report.program is not None
    text = str(report)
    assert "Splits (" in text and "seq == 1" in text and "2 <= seq <= 64" in text


def test_a_derived_dim_splits_on_its_root():
    class Derived(torch.nn.Module):
        def forward(self, y):
            return y * 3 if y.shape[1] == 2 else y + 1

    seq = st.Dim("seq", min=1, max=32)
    m = Derived()
    ep = st.export(m, (torch.randn(2, 10),), dynamic_shapes={"y": {1: 2 * seq}})
    assert len(_conds(ep.graph)) == 1
    _check(ep, m, [(2, 2 * k) for k in (1, 2, 3, 32)])
    _rejected(ep, [(2, 3), (2, 66), (2, 0)])


PREDICATES = {
    "eq1": lambda n: n == 1,
    "gt20": lambda n: n > 20,
    "lt3": lambda n: n < 3,
    "eq7": lambda n: n == 7,
    "window": lambda n: 10 <= n <= 12,
    "ne5": lambda n: n != 5,
    "min4": lambda n: min(n, 4) == 4,
    "le1_or_ge60": lambda n: n <= 1 or n >= 60,
}


@pytest.mark.parametrize("example", [1, 5, 11, 64])
@pytest.mark.parametrize("name", sorted(PREDICATES))
def test_every_size_gives_eager_result(name, example):
    """A branch on a size predicate, exported from examples on both sides: the program gives
    eager's result at every size of the declared range, which is kept whole."""
    pred = PREDICATES[name]

    def f(x):
        return x * 3 if pred(x.shape[1]) else x.cumsum(1)

    ep = st.export(f, (torch.randn(2, example),), dynamic_shapes={"x": {1: SEQ}})
    assert ep.range_constraints["s0"].lower == 1 and ep.range_constraints["s0"].upper == 64
    _check(ep, f, [(2, k) for k in range(1, 65)])
    _rejected(ep, [(2, 0), (2, 65)])


class CountsCalls(torch.nn.Module):
    """A split whose sides write a buffer in place (a StaticCache's length does)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        if x.shape[1] == 1:
            self.steps.add_(1)
            return x * 3 + self.steps
        self.steps.add_(x.shape[1])
        return x + x + self.steps


def test_sides_writing_a_buffer_convert_to_functional_cond_branches():
    m = CountsCalls()
    ep = st.export(CountsCalls(), (torch.randn(2, 5),), dynamic_shapes={"x": {1: SEQ}})
    tep = ep.to_torch()
    branches = [g for g in tep.graph_module.modules() if isinstance(g, torch.fx.GraphModule)
                and g is not tep.graph_module]
    assert branches and not any(n.target._schema.is_mutable for g in branches
                                for n in g.graph.nodes if isinstance(
                                    n.target, torch._ops.OpOverload))  # torch's cond's rule
    mod = tep.module()
    for k in (1, 4, 1, 64):
        x = torch.randn(2, k)
        torch.testing.assert_close(mod(x), m(x))  # the written state carried across calls
    assert int(m.steps) == 70
    x = torch.randn(2, 1)  # one state: ep's module continues from the converted one's
    torch.testing.assert_close(ep.module()(x), m(x))


# -- the code every side runs before the decision: computed once, before the cond ------------
class ReadThenSplit(torch.nn.Module):
    """A position read from data and checked with the sequence length, then a split on
    ``seq == 1`` (a StaticCache model's wrapper: the read and its checks come first)."""

    def forward(self, x, pos):
        start = pos[0].item()
        torch._check(start >= 0)
        torch._check(start + x.shape[1] <= 64)
        if x.shape[1] == 1:
            return x * 2
        return x.cumsum(1)


def _items(graph):
    return [n for n in graph.nodes if n.target is torch.ops.aten.item.default]


def _branches(ep):
    return [m.graph for name, m in ep.graph_module.named_modules() if name]


def test_the_read_before_the_split_is_made_once_outside_the_cond():
    m = ReadThenSplit()
    ep = st.export(m, (torch.randn(2, 5, 3), torch.tensor([4, 0])),
                   dynamic_shapes={"x": {1: SEQ}, "pos": None})
    assert len(_conds(ep.graph)) == 1 and len(_items(ep.graph)) == 1
    item, cond = _items(ep.graph)[0], _conds(ep.graph)[0]
    order = list(ep.graph.nodes)
    assert order.index(item) < order.index(cond)
    checks = [n for n in ep.graph.nodes if "assert" in str(n.target)]
    assert len(checks) == 2 and all(order.index(c) < order.index(cond) for c in checks)
    for g in _branches(ep):  # no read, no check inside: only each side's own ops
        assert not _items(g) and not any("assert" in str(n.target) for n in g.nodes)
    assert "4 ops every side runs before they differ" in str(ep)
    for n, start in ((1, 0), (1, 63), (2, 62), (7, 3), (64, 0)):
        x, pos = torch.randn(2, n, 3), torch.tensor([start, 0])
        torch.testing.assert_close(ep.module()(x, pos), m(x, pos))
    for n, start in ((1, 64), (7, 58), (2, -1), (64, 1)):
        with pytest.raises(RuntimeError):  # each side's checks, now before the cond
            ep.module()(torch.randn(2, n, 3), torch.tensor([start, 0]))
    for shape in ((2, 0, 3), (2, 65, 3)):
        with pytest.raises(st.InputMismatchError):
            ep.module()(torch.randn(*shape), torch.tensor([0, 0]))
    tep = ep.to_torch()  # torch's program: the read in its top graph too, once
    assert len(_items(tep.graph)) == 1
    assert not any(_items(m.graph) for name, m in tep.graph_module.named_modules() if name)
    for n in (1, 5):
        x, pos = torch.randn(2, n, 3), torch.tensor([3, 0])
        torch.testing.assert_close(tep.module()(x, pos), m(x, pos))


class SharedThenSplit(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(3, 3))

    def forward(self, x):
        h = torch.relu(x @ self.w)
        return h * 3 if x.shape[1] == 1 else h.cumsum(1)


def test_a_shared_tensor_is_an_operand_narrowed_in_the_point_branch():
    m = SharedThenSplit()
    ep = st.export(m, (torch.randn(2, 5, 3),), dynamic_shapes={"x": {1: SEQ}})
    cond = _conds(ep.graph)[0]
    assert [n.target for n in cond.args[3] if n.op != "placeholder"] == \
        [torch.ops.aten.relu.default]  # h: computed once, passed to both branches
    assert all(torch.ops.aten.matmul.default not in {n.target for n in g.nodes}
               for g in _branches(ep))
    _check_params(ep, m, [(2, k) for k in (1, 2, 3, 64)])
    _rejected(ep, [(2, 0, 3), (2, 65, 3)])


def _check_params(ep, model, shapes):
    mod = ep.module()
    for shape in shapes:
        x = torch.randn(*shape, 3)
        torch.testing.assert_close(mod(x), model(x))


class ReadUsedInside(torch.nn.Module):
    def forward(self, x, pos):
        start = pos[0].item()
        torch._check(start >= 0)
        torch._check(start <= 8)
        if x.shape[1] == 1:
            return x * start
        return x + torch.ones(start).sum()


def test_a_read_that_a_branch_uses_stays_in_each_branch():
    """torch's cond takes no data-dependent size as an operand: the read stays inside."""
    m = ReadUsedInside()
    ep = st.export(m, (torch.randn(2, 5, 3), torch.tensor([4, 0])),
                   dynamic_shapes={"x": {1: SEQ}, "pos": None})
    assert not _items(ep.graph) and all(len(_items(g)) == 1 for g in _branches(ep))
    for n, start in ((1, 0), (1, 8), (5, 3)):
        x, pos = torch.randn(2, n, 3), torch.tensor([start, 0])
        torch.testing.assert_close(ep.module()(x, pos), m(x, pos))


class CheckThenSame(torch.nn.Module):
    """Both sides of ``seq == 1`` trace the same ops; they differ only in how each writes
    the check (``u0 <= 63`` at seq 1, ``s0 + u0 <= 64`` else) and the range it gives u0."""

    def forward(self, x, pos):
        start = pos[0].item()
        torch._check(start >= 0)
        torch._check(start + x.shape[1] <= 64)
        k = 2 if x.shape[1] == 1 else 2
        return x * k + start


def test_sides_differing_only_in_a_data_dependent_range_are_one_graph():
    m = CheckThenSame()
    ep = st.export(m, (torch.randn(2, 5), torch.tensor([4, 0])),
                   dynamic_shapes={"x": {1: SEQ}, "pos": None})
    assert not _conds(ep.graph) and "guard dropped" in str(ep)
    assert ep.range_constraints["s0"].lower == 1 and ep.range_constraints["s0"].upper == 64
    for n, start in ((1, 0), (1, 63), (5, 59), (64, 0)):
        x, pos = torch.randn(2, n), torch.tensor([start, 0])
        torch.testing.assert_close(ep.module()(x, pos), m(x, pos))
    for n, start in ((1, 64), (5, 60), (1, -1)):  # the check, at seq 1 as elsewhere
        with pytest.raises(RuntimeError):
            ep.module()(torch.randn(2, n), torch.tensor([start, 0]))


class _ReshapedInPlace(torch.nn.Module):
    def forward(self, x):
        v0 = x.clone()
        v0.unsqueeze_(0)  # the clone's shape changes after it is made
        if v0.shape[1] > 2:
            return v0, v0 * 2
        return v0, v0 * 0


def test_a_value_written_in_place_later_is_not_hoisted():
    """A value some op later writes in place (here its shape: unsqueeze_) stays in each
    branch: hoisted, its operand was narrowed with the shape it has after the write (the
    program raised IndexError at the split point, fuzzer seed 53)."""
    m = _ReshapedInPlace()
    ep = st.export(m, (torch.randn(3),), dynamic_shapes=({0: st.Dim("d0", min=2)},))
    for n in (2, 3, 5):
        x = torch.randn(n)
        for got, want in zip(ep.module()(x), m(x)):
            assert torch.equal(got, want)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(1))
