"""Splits on a relation of input sizes the code branches on (exporter/relation_splits.py):
``if x.numel() % 2 == 0:`` or ``if x.shape[2] >= 4 * x.shape[1]:`` kept as a run-time check
refused the inputs taking the other branch, which eager computes; the other answer is now
traced too and a torch.cond on the relation runs each.  Found by the differential fuzzer
(seeds 2301/2302)."""

import io

import pytest
import torch

import safetrace as st
from safetrace import Dim


class EvenOrOdd(torch.nn.Module):
    def forward(self, x):
        return x.reshape(-1, 2) * 2 if x.numel() % 2 == 0 else x.reshape(-1, 1) - 1


class WideOrTall(torch.nn.Module):
    def forward(self, x):
        if x.shape[2] >= 4 * x.shape[1]:
            return x * 2
        return x[:1] + 1


def _matches_eager(model, spec, example, sizes, outside):
    ep = st.export(model, (torch.randn(*example),), dynamic_shapes=(spec,))
    buf = io.BytesIO()
    st.save(ep, buf)
    buf.seek(0)
    for ours in (ep.module(), st.load(buf).module()):
        for s in sizes:
            x = torch.randn(*s)
            torch.testing.assert_close(ours(x), model(x), msg=str(s))
        for s in outside:
            with pytest.raises(st.InputMismatchError):
                ours(torch.randn(*s))
    return ep


def test_a_branch_on_numel_parity_runs_both_answers():
    # (a relation between named Dims that only sizes below 2 of `a` break is a run-time
    # check, as in torch.export; it refused the odd sizes eager computes)
    spec = {0: Dim("a", max=1), 1: Dim("b", max=5), 2: Dim.AUTO}
    ep = _matches_eager(EvenOrOdd(), spec, (1, 3, 3),
                        [(1, 3, 3), (0, 1, 3), (1, 2, 3), (1, 5, 3), (1, 1, 3), (0, 0, 3),
                         (1, 4, 3), (1, 3, 7)], [(2, 1, 3), (1, 6, 3), (1, 3)])
    assert not ep.contract.conditions


def test_a_branch_on_a_relation_of_two_dims_runs_both_answers():
    ep = _matches_eager(WideOrTall(), {1: Dim("a", max=1), 2: Dim("b", min=1, max=20)},
                        (2, 1, 5),
                        [(2, 1, 5), (2, 0, 1), (2, 1, 3), (2, 1, 4), (2, 0, 7), (2, 1, 1),
                         (2, 1, 20)], [(2, 2, 4), (3, 1, 5), (2, 1, 21), (2, 1, 0)])
    assert not ep.contract.conditions


class Few(torch.nn.Module):
    def forward(self, x):
        if x.numel() < 4:
            return x * 2
        return x.flip(0)


class Cube(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] * x.shape[0] * x.shape[1] >= 4:
            return x.sum(0, keepdim=True)
        return x[:, :1] + 1


def test_the_other_answer_of_a_relation_is_no_narrowing_of_its_dims():
    # (its trace ran at a = 1, b = 2, where `a*b <= 3` was refused as a relation between
    # independent Dims, and `(a*b >= 4)` stayed a check of the inputs: found by the fuzzer)
    ep = _matches_eager(Few(), {0: Dim("a", min=1, max=10), 1: Dim("b")}, (7, 7),
                        [(1, 1), (1, 3), (2, 1), (3, 1), (1, 0), (2, 2), (10, 5), (4, 0)],
                        [(11, 2), (0, 3), (2, 2, 2)])
    assert not ep.contract.conditions


def test_a_relation_of_a_dim_squared_runs_both_answers():
    ep = _matches_eager(Cube(), {0: Dim("a", max=8), 1: Dim("b", min=1, max=9)}, (3, 3),
                        [(0, 1), (1, 1), (1, 3), (1, 4), (2, 1), (2, 9), (8, 9), (0, 9)],
                        [(9, 1), (2, 0), (2, 10)])
    assert not ep.contract.conditions


class AllInRows(torch.nn.Module):
    def forward(self, x):
        if x.size(-3) == x.numel():
            return x * 2
        return x.sum(0, keepdim=True)


def test_a_range_the_other_answer_implies_is_no_narrowing():
    # (`a == a*b*c` with a >= 2 holds only where c >= 1: the other answer's trace narrowed
    # c to [1, 16], which was refused; its program runs only where the relation fails)
    spec = {0: Dim("a", min=2, max=16), 1: Dim("b", max=16), 2: Dim("c", max=16)}
    _matches_eager(AllInRows(), spec, (4, 6, 4),
                   [(10, 1, 1), (2, 1, 1), (2, 0, 3), (2, 3, 0), (3, 1, 2), (16, 16, 16)],
                   [(1, 1, 1), (2, 17, 1), (2, 1, 17)])


class Diagonal(torch.nn.Module):
    def forward(self, x, z):
        v0 = x.diagonal()
        v1 = v0 * 2 if v0.shape[0] > 1 else v0 - 1
        return v1 - z


def test_a_dynamic_dim_related_to_the_split_dims_follows_the_sides_sizes():
    # (z.shape[1] == min(a, b): the other answer was traced at a = 0 with z's example size
    # 2, so broadcasting failed there and `min(a, b) >= 2` stayed a check of the inputs)
    model = Diagonal()
    spec = ({0: Dim("a", max=16), 1: Dim("b", min=2, max=16)}, {0: Dim.DYNAMIC, 1: Dim.DYNAMIC})
    ep = st.export(model, (torch.randn(7, 2), torch.randn(7, 2)), dynamic_shapes=spec)
    assert not ep.contract.conditions
    buf = io.BytesIO()
    st.save(ep, buf)
    buf.seek(0)
    for ours in (ep.module(), st.load(buf).module()):
        for a, b, n in [(7, 2, 7), (0, 7, 3), (1, 7, 2), (1, 2, 1), (2, 2, 0), (16, 16, 1)]:
            x, z = torch.randn(a, b), torch.randn(n, min(a, b))
            torch.testing.assert_close(ours(x, z), model(x, z), msg=str((a, b, n)))
        for xs, zs in [((3, 1), (2, 1)), ((2, 3), (2, 3)), ((17, 2), (1, 2))]:
            with pytest.raises(st.InputMismatchError):
                ours(torch.randn(*xs), torch.randn(*zs))


class Scaled(torch.nn.Module):
    def forward(self, x):
        if x.numel() * 0.7 >= 3.5:
            return x * 2
        return x.flip(0)


class TwoTests(torch.nn.Module):
    def forward(self, x):
        y = x * 2 if x.numel() % 2 == 0 else x - 1
        if x.shape[0] * 2 >= x.shape[1]:
            return y.sum(0, keepdim=True)
        return y + 1


class RowParity(torch.nn.Module):
    def forward(self, x):
        return x.reshape(-1, 2) * 2 if x.shape[0] % 2 == 0 else x.reshape(-1, 1) - 1


@pytest.mark.parametrize("model, spec, example, sizes, outside", [
    # a relation between independent Dims at sizes >= 2 (refused with Dim.DYNAMIC as the
    # fix), a float relation among them
    (Scaled(), {0: Dim("a", max=10), 1: Dim("b", max=10)}, (3, 4),
     [(1, 1), (2, 2), (1, 5), (0, 3), (7, 1), (1, 4), (5, 1), (10, 10)], [(11, 1), (2, 2, 2)]),
    # two relations in one program: each side split again on the other
    (TwoTests(), {0: Dim("a", max=10), 1: Dim("b", max=10)}, (4, 4),
     [(3, 3), (1, 5), (0, 3), (2, 7), (7, 1), (1, 4), (5, 5), (10, 1)], [(11, 1), (1, 11)]),
    # one Dim's parity, which no range expresses (refused with a derived Dim as the fix)
    (RowParity(), {0: Dim("n", max=9)}, (4, 3),
     [(3, 3), (0, 3), (1, 3), (9, 3), (8, 3)], [(10, 3), (4, 2)]),
], ids=["float relation", "two relations", "parity of one Dim"])
def test_a_relation_refused_at_export_runs_both_answers(model, spec, example, sizes, outside):
    ep = _matches_eager(model, spec, example, sizes, outside)
    assert not ep.contract.conditions
    assert "the torch.cond's true branch" in str(ep)



class FewTurns(torch.nn.Module):
    def forward(self, x):
        v = x.clone()
        for _ in range(min(x.numel(), 3)):
            v = v + 1
        return v


@pytest.mark.parametrize("spec, example, sizes, outside", [
    ({0: Dim("b", min=1), 1: Dim("d", max=7), 2: Dim("d", max=7)}, (1, 4, 4),
     [(1, 4, 4), (1, 0, 0), (1, 1, 1), (2, 1, 1), (3, 1, 1), (5, 2, 2)],
     [(0, 1, 1), (1, 2, 3), (1, 8, 8)]),
    ({0: Dim("d0", max=4), 1: Dim("d1", min=1, max=4), 2: Dim("d2", min=1, max=16)},
     (4, 4, 4), [(0, 4, 1), (1, 1, 1), (1, 1, 2), (1, 3, 1), (2, 2, 2)], [(5, 1, 1)]),
], ids=["a Dim from 1", "a Dim from 0"])
def test_a_loop_count_of_a_relation_runs_each_count(spec, example, sizes, outside):
    """Each side pins the count, a relation of the Dims: split again inside it, until the
    count its assumptions leave is one number (``!= 3`` and ``!= 2`` of a count from 1:
    proved from the declared ranges and the assumptions alone, not the trace's guards,
    exporter/sides.py).  The check refused the sizes of every other count (fuzz seeds 4,
    6); an earlier try that sampled sizes kept vit_interp's check silently."""
    ep = _matches_eager(FewTurns(), spec, example, sizes, outside)  # (each count, 0 too:
    assert "the torch.cond's true branch" in str(ep)  # the check left is the sides' union)


class SquareOfSixteen(torch.nn.Module):
    """dinov2's ``num_patches == num_positions and height == width`` on patch counts: the
    side where ``h*w == 16`` branches again on ``h == w``, which holds at h == w == 4 alone."""

    def forward(self, x):
        h, w = x.shape[1] // 2, x.shape[2] // 2
        if h * w == 16 and h == w:
            return x * 2
        return x.cumsum(1)


def test_a_nested_relation_that_holds_at_one_size_traces_that_size():
    h, w = Dim("h", min=1, max=12), Dim("w", min=1, max=12)
    sizes = [(2, 2 * a, 2 * b) for a, b in ((3, 5), (4, 4), (2, 8), (8, 2), (1, 1), (12, 12),
                                            (1, 12), (4, 3), (3, 3))]
    ep = _matches_eager(SquareOfSixteen(), {1: 2 * h, 2: 2 * w}, (2, 6, 10), sizes,
                        [(2, 26, 8), (2, 7, 8), (2, 8, 0)])
    assert sum(n.target is torch.ops.higher_order.cond for n in ep.graph.nodes) == 1
    out = ep.module()(torch.ones(2, 8, 8))
    assert torch.equal(out, torch.full((2, 8, 8), 2.0))  # h == w == 4: x * 2, not cumsum


def _parity_of_last(y):
    v = y.max(1, keepdim=True).values
    return v * 2 if v.size(-1) % 2 == 0 else v - 1


def test_a_condition_broken_at_one_size_alone_traces_and_loads_that_size():
    """`d % 2 == 0` over d in [0, 2] fails at d == 1 alone: that side is traced at 1, its
    branch asserts it (a fact where st.load evaluates the branch; fuzz seed 51)."""
    _matches_eager(_parity_of_last, {0: Dim("b", max=8), 2: Dim("d", max=2)}, (3, 7, 2),
                   [(3, 7, 0), (3, 7, 1), (3, 7, 2), (1, 7, 1), (8, 7, 2)],
                   [(3, 7, 3), (9, 7, 1)])
