"""``st.to_executorch``: a ``.pte`` runs every size the program accepts as eager, or the
lowering is refused up front with the catalogue's error naming the Dim and its range
(``interop/executorch_plans.py``).

Before (session 38): ``tensor_split`` + ``roll`` exported at an example of 2 rows lowered,
and its ``.pte`` computed n = 2..5 and failed n = 0, 1 and 6..16 with ExecuTorch's bare
error codes 0x12 / 0x10: the lowering decided ``n//2 - 1 < 2`` (a contiguity check at the
example), which narrowed n to at most 5 in the memory plan, and ``start <= end`` of the
slice, which left its length ``n//2 - 1`` (negative at 0 and 1)."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st

pytest.importorskip("executorch")
warnings.filterwarnings("ignore")


class SplitRoll(torch.nn.Module):
    def forward(self, y):
        v0 = torch.tensor_split(y, [1, y.shape[0] // 2], 0)[1]
        return v0, v0.roll(1, 0)


class SplitMid(torch.nn.Module):
    def forward(self, y):
        return torch.tensor_split(y, [1, y.shape[0] // 2], 0)[1] * 2


def _spec():
    return ({0: st.Dim("n", max=16), 1: st.Dim("c", min=1, max=9)},)


_INSIDE = [(n, c) for n in (0, 1, 2, 3, 5, 6, 7, 8, 11, 16) for c in (1, 4, 9)]
_OUTSIDE = [(17, 4), (3, 0), (3, 10)]


def _eager_everywhere_or_refused(model, example, tmp_path):
    """-> "refused" (a catalogue error at st.to_executorch) or "lowered" (the .pte gives
    eager's values at every size of _INSIDE and refuses every size of _OUTSIDE)."""
    from executorch.runtime import Runtime

    ep = st.export(model, (torch.randn(*example),), dynamic_shapes=_spec())
    try:
        st.to_executorch(ep, tmp_path / "m.pte")
    except st.errors.ConversionError as e:
        assert "st.Dim('n'" in str(e) and "n" in str(e).splitlines()[0], e
        return "refused"
    program = Runtime.get().load_program(tmp_path / "m.pte")
    method = program.load_method("forward")
    for shape in _INSIDE:
        y = torch.randn(*shape)
        want = torch.utils._pytree.tree_leaves(model(y))
        got = method.execute([y])
        assert len(got) == len(want), shape
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, msg=f"at {shape}")
    for shape in _OUTSIDE:
        with pytest.raises(Exception):
            method.execute([torch.randn(*shape)])
    return "lowered"


def test_a_pte_planned_below_the_declared_range_is_refused_up_front(tmp_path):
    # (before: lowered; the .pte failed at (0, 1), (1, 1), (6, 1), ... with 0x12 / 0x10)
    assert _eager_everywhere_or_refused(SplitRoll(), (2, 6), tmp_path) == "refused"


def test_the_refusal_names_the_dim_and_the_range_the_plan_holds(tmp_path):
    ep = st.export(SplitRoll(), (torch.randn(2, 6),), dynamic_shapes=_spec())
    with pytest.raises(st.errors.ConversionError) as info:
        st.to_executorch(ep, tmp_path / "m.pte")
    text = str(info.value)
    assert "y.shape[0] == " in text and "s7" not in text.splitlines()[0]
    assert "Fix:" in text and "st.Dim('n', min=" in text


@pytest.mark.parametrize("model, example", [
    (SplitRoll(), (6, 3)), (SplitMid(), (2, 6)), (SplitMid(), (6, 3))],
    ids=["roll-at-6", "mid-at-2", "mid-at-6"])
def test_every_lowered_pte_is_eager_at_every_accepted_size(model, example, tmp_path):
    _eager_everywhere_or_refused(model, example, tmp_path)


def test_a_mid_slice_lowers_and_runs_zero_and_one(tmp_path):
    # (the plan's facts hold over the whole declared range: nothing refused)
    assert _eager_everywhere_or_refused(SplitMid(), (6, 3), tmp_path) == "lowered"


class UnfoldHalf(torch.nn.Module):
    def forward(self, x):
        return x.unfold(1, 1, max(x.shape[1] // 2, 1)) * 2


class ModHead(torch.nn.Module):
    def forward(self, z):
        return z[: z.shape[0] % 3] + 1


@pytest.mark.parametrize("model, example, spec, inside, outside", [
    # (before: lowered, and the .pte gave other values at w = 4..9: the lowering took
    # unfold's step max(w//2, 1) as 1 at the example, Eq(Max(1, w//2), 1), and dropped it)
    (UnfoldHalf(), (3, 1), {1: st.Dim("w", max=9)},
     [(3, w) for w in range(1, 10)] + [(0, 5), (1, 4)], [(3, 10)]),
    # (a layout decision at the example, Eq(n % 3, 0) of an empty slice's wrapper: lowered,
    # eager at every size)
    (ModHead(), (6, 3), {0: st.Dim("n", max=16)}, [(n, 3) for n in range(17)], [(17, 3)]),
], ids=["unfold-step", "mod-head"])
def test_a_decision_on_a_computed_size_is_refused_a_layout_one_is_not(
        model, example, spec, inside, outside, tmp_path):
    from executorch.runtime import Runtime

    ep = st.export(model, (torch.randn(*example),), dynamic_shapes=(spec,))
    try:
        st.to_executorch(ep, tmp_path / "m.pte")
    except st.errors.ConversionError as e:
        assert isinstance(model, UnfoldHalf), e
        assert "st.Dim('w', min=" in str(e) and "Max(1, (w//2))" in str(e), e
        return
    assert isinstance(model, ModHead)
    program = Runtime.get().load_program(tmp_path / "m.pte")
    method = program.load_method("forward")
    for shape in inside:
        x = torch.randn(*shape)
        torch.testing.assert_close(method.execute([x])[0], model(x), msg=f"at {shape}")
    for shape in outside:
        with pytest.raises(Exception):
            method.execute([torch.randn(*shape)])
