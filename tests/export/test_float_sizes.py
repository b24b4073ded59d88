"""Float arithmetic on sizes exports with eager's IEEE double semantics (issue 14): the
branch taken, interpolate's output sizes and sizes computed with int()/round()/floor match
eager at every size the program accepts, and the rest are rejected before computing."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import safetrace as st

SIZES = [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 13, 17, 20, 29, 30, 31, 49, 50, 64, 97, 100]


def _sweep(model: torch.nn.Module, make, ep: st.ExportedProgram, sizes=SIZES) -> int:
    """Every size eager handles either matches eager or is rejected up front; returns how
    many matched."""
    ok = 0
    for n in sizes:
        x = make(n)
        try:
            want = model(x)
        except Exception:  # noqa: BLE001  (eager refuses: the program must too, or agree)
            continue
        try:
            got = ep.module()(x)
        except st.InputMismatchError:
            continue
        assert got.shape == want.shape, (n, got.shape, want.shape)
        torch.testing.assert_close(got, want)
        ok += 1
    return ok


class Branch(torch.nn.Module):
    def forward(self, y):
        if y.shape[0] * 0.7 >= 3.5:  # 5 * 0.7 == 3.5 in Python
            return y + 1
        return y * 2


@pytest.mark.parametrize("hint", [4, 5, 6])
def test_branch_on_float_size_matches_python(hint: int) -> None:
    m = Branch()
    ep = st.export(m, (torch.randn(hint, 3),), dynamic_shapes={"y": {0: st.Dim.AUTO}})
    # exactly eager's branch; below it, the sizes above its end are the branch's other side
    # (auto_small._branch_top: split at 5, each side traced; 5 itself on the y + 1 side)
    accepted = [n for n in SIZES if (n >= 5) == (hint >= 5) or hint < 5]
    assert _sweep(m, lambda n: torch.randn(n, 3), ep) == len(accepted)
    bound = ep.range_constraints[next(iter(ep.range_constraints))]
    assert (bound.lower, bound.upper) == ((5, math.inf) if hint >= 5 else (0, math.inf))


def test_named_dim_gets_the_exact_fix() -> None:
    with pytest.raises(st.ConstraintViolationError, match="min=5"):
        st.export(Branch(), (torch.randn(5, 3),), dynamic_shapes={"y": {0: st.Dim("n")}},
                  max_splits=0)  # (by default: a size split, exporter/splits.py)
    ep = st.export(Branch(), (torch.randn(5, 3),),
                   dynamic_shapes={"y": {0: st.Dim("n", min=5)}})
    assert _sweep(Branch(), lambda n: torch.randn(n, 3), ep) == len([n for n in SIZES if n >= 5])


class Interp(torch.nn.Module):
    def __init__(self, scale: float, mode: str, recompute: bool | None) -> None:
        super().__init__()
        self.scale, self.mode, self.recompute = scale, mode, recompute

    def forward(self, x):
        return F.interpolate(x, scale_factor=self.scale, mode=self.mode,
                             recompute_scale_factor=self.recompute)


@pytest.mark.parametrize("scale,mode,recompute,width", [
    (1.7, "nearest", True, 10), (1 / 3, "area", None, 6), (0.3, "nearest", True, 10),
    (2 / 3, "nearest", True, 6), (2.3, "area", None, 10), (1.7, "nearest", None, 10),
    (0.5, "bilinear", None, 10), (1 / 49, "nearest", True, 98), (2.5, "bicubic", None, 7),
])
def test_interpolate_output_sizes_match_eager(scale, mode, recompute, width) -> None:
    m = Interp(scale, mode, recompute)
    x = torch.randn(1, 2, width, width)
    ep = st.export(m, (x,), dynamic_shapes={"x": {3: st.Dim.AUTO}})
    assert ep.module()(x).shape == m(x).shape
    assert _sweep(m, lambda n: torch.randn(1, 2, width, n), ep) >= 4


class IntOfFloat(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        a = round(n / 3)
        b = math.floor(n * 1.1)
        return x.new_zeros(a + 1, b), torch.arange(math.ceil(n * 0.7))


def test_round_floor_ceil_of_sizes_stay_symbolic() -> None:
    m = IntOfFloat()
    ep = st.export(m, (torch.randn(10),), dynamic_shapes={"x": {0: st.Dim("n")}})
    for n in [0, 1, 2, 3, 5, 9, 10, 11, 29, 100]:
        x = torch.randn(n)
        for g, w in zip(ep.module()(x), m(x)):
            assert g.shape == w.shape and torch.equal(g, w), n


def test_saved_program_keeps_float_sizes(tmp_path) -> None:
    m = IntOfFloat()
    ep = st.export(m, (torch.randn(10),), dynamic_shapes={"x": {0: st.Dim("n")}})
    st.save(ep, tmp_path / "p.st")
    ep2 = st.load(tmp_path / "p.st")
    for n in [0, 4, 7, 31]:
        x = torch.randn(n)
        for g, w in zip(ep2.module()(x), m(x)):
            assert g.shape == w.shape, n


@pytest.mark.parametrize("scale", [1 / 49, 1.7, 0.3, 2 / 3, 1 / 3, 0.1])
def test_upsample_vec_scale_matches_eager(scale: float) -> None:
    """The C++ path (no recompute): floor(double(size) * scale) in the kernel."""
    m = Interp(scale, "nearest", None)
    x = torch.randn(1, 1, 50, 98)  # the static height: the smallest that every scale keeps >= 1
    ep = st.export(m, (x,), dynamic_shapes={"x": {3: st.Dim.AUTO}})
    assert _sweep(m, lambda n: torch.randn(1, 1, 50, n), ep, sizes=range(1, 300)) >= 150


class DataScale(torch.nn.Module):
    def forward(self, x):
        s = x.max().item()  # an unbacked float: the graph computes with it
        st.check(s > 0)
        return x * s, x / s


def test_float_read_from_data_is_an_unbacked_float(tmp_path) -> None:
    m = DataScale()
    ep = st.export(m, (torch.rand(3, 4) + 0.1,), dynamic_shapes={"x": {0: st.Dim.AUTO}})
    assert "aten.item.default" in ep.graph_module.code
    for n in (1, 3, 7):
        x = torch.rand(n, 4) + 0.5
        for g, w in zip(ep.module()(x), m(x)):
            torch.testing.assert_close(g, w)
    with pytest.raises(Exception, match=r"u0 > 0"):  # the check runs inside the graph
        ep.module()(-torch.rand(2, 4) - 1)
    st.save(ep, tmp_path / "p.st")
    x = torch.rand(2, 4) + 1
    for g, w in zip(st.load(tmp_path / "p.st").module()(x), m(x)):
        torch.testing.assert_close(g, w)


def test_branch_on_a_float_from_data_asks_for_a_check() -> None:
    def f(x):
        return x if x.max().item() > 0 else -x

    with pytest.raises(st.DataDependentError, match=r"st.check\(u0 > 0\)"):
        st.export(f, (torch.rand(3),))


def test_a_float_item_can_be_returned() -> None:
    ep = st.export(lambda x: x.sum().item() * 2.0, (torch.randn(3),))
    x = torch.randn(3)
    assert ep.module()(x) == x.sum().item() * 2.0
