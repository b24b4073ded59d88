"""``st.to_executorch`` of a size split (a torch.cond on ``seq == 1``) in a program with a
second dynamic dim: it lowers and matches eager at every size, or is refused with the
catalogue's error.  Before (session 38): torch's ``RuntimeError: Cannot evaluate a finite
upper bound for symbolic expression u12`` from ExecuTorch's memory plan, where the
branches' sizes ``b * 1`` and ``b * seq`` became a fresh size of no bound; now that size
gets our bounds after the cond (``interop/cond_bounds.py``)."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st

pytest.importorskip("executorch")
warnings.filterwarnings("ignore")


class FlatSplit(torch.nn.Module):
    def forward(self, x):
        if x.shape[1] == 1:
            return x.reshape(-1) * 3
        return x.reshape(-1) + 1


class FlipSplit(torch.nn.Module):
    def forward(self, x):
        y = x * 3 if x.shape[1] == 1 else x.flip(1)
        return y.reshape(x.shape[0] * x.shape[1])


class FirstColumnSplit(torch.nn.Module):
    def forward(self, x):
        if x.shape[1] == 1:
            return x[:, 0:1] * 3
        return x[:, -1:] + x[:, :1]


def _spec():
    return ({0: st.Dim("b", max=8), 1: st.Dim("seq", min=1, max=16)},)


_INSIDE = [(0, 1), (0, 5), (1, 1), (2, 1), (8, 1), (1, 2), (3, 4), (8, 16)]
_OUTSIDE = [(3, 0), (9, 2), (2, 17)]


@pytest.mark.parametrize("model", [FlatSplit(), FlipSplit()], ids=["flat", "flip"])
def test_a_merged_size_gets_our_bounds_and_the_pte_matches_eager(model, tmp_path):
    from executorch.runtime import Runtime

    ep = st.export(model, (torch.randn(3, 4),), dynamic_shapes=_spec())
    st.to_executorch(ep, tmp_path / "m.pte")
    method = Runtime.get().load_program(tmp_path / "m.pte").load_method("forward")
    for shape in _INSIDE:
        x = torch.randn(*shape)
        torch.testing.assert_close(method.execute([x])[0], model(x))
    for shape in _OUTSIDE:  # outside the declared space: refused
        with pytest.raises(Exception):
            method.execute([torch.randn(*shape)])


def test_a_merged_size_without_our_bounds_is_refused_by_the_catalogue(tmp_path, monkeypatch):
    # (where the bounds are not written: the catalogue's error, not torch's RuntimeError)
    from safetrace.interop import executorch as ET

    monkeypatch.setattr(ET, "bound_cond_outputs", lambda tep, ep: 0)
    ep = st.export(FlatSplit(), (torch.randn(3, 4),), dynamic_shapes=_spec())
    with pytest.raises(st.errors.ConversionError, match="no upper bound"):
        st.to_executorch(ep, tmp_path / "m.pte")


def test_a_split_beside_a_second_dim_lowers_and_matches_eager(tmp_path):
    from executorch.runtime import Runtime

    ep = st.export(FirstColumnSplit(), (torch.randn(3, 4),), dynamic_shapes=_spec())
    st.to_executorch(ep, tmp_path / "m.pte")
    method = Runtime.get().load_program(tmp_path / "m.pte").load_method("forward")
    for shape in _INSIDE:
        x = torch.randn(*shape)
        torch.testing.assert_close(method.execute([x])[0], FirstColumnSplit()(x))
    for shape in _OUTSIDE:  # outside the declared space: refused
        with pytest.raises(Exception):
            method.execute([torch.randn(*shape)])
