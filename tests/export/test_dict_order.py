"""Dict inputs: keys matter, their insertion order does not (as in torch.export)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import safetrace as st


class DictModel(torch.nn.Module):
    def forward(self, d, pairs, *, k):
        return d["a"] * 2 + d["b"] + k["x"] * k["y"] + pairs[0]["p"] - pairs[1]["q"]


def _inputs(n, order_ab=("a", "b"), order_xy=("x", "y")):
    g = torch.Generator().manual_seed(n)
    d = {key: torch.randn(n, generator=g) for key in order_ab}
    k = {key: torch.randn(n, generator=g) for key in order_xy}
    pairs = [{"p": torch.randn(n, generator=g)}, {"q": torch.randn(n, generator=g)}]
    return (d, pairs), {"k": k}


@pytest.mark.parametrize("n", [0, 1, 5])
def test_dicts_in_another_key_order_are_accepted_like_torch_export(n):
    args, kwargs = _inputs(3)
    spec = {"d": {"a": {0: st.Dim.DYNAMIC}, "b": {0: st.Dim.DYNAMIC}},
            "pairs": [{"p": {0: st.Dim.DYNAMIC}}, {"q": {0: st.Dim.DYNAMIC}}],
            "k": {"x": {0: st.Dim.DYNAMIC}, "y": {0: st.Dim.DYNAMIC}}}
    model = DictModel()
    ep = st.export(model, args, kwargs, dynamic_shapes=spec)
    ref = torch.export.export(model, args, kwargs, dynamic_shapes={
        "d": {"a": {0: torch.export.Dim.DYNAMIC}, "b": {0: torch.export.Dim.DYNAMIC}},
        "pairs": [{"p": {0: torch.export.Dim.DYNAMIC}}, {"q": {0: torch.export.Dim.DYNAMIC}}],
        "k": {"x": {0: torch.export.Dim.DYNAMIC}, "y": {0: torch.export.Dim.DYNAMIC}}})
    args2, kwargs2 = _inputs(n, ("b", "a"), ("y", "x"))
    expected = model(*args2, **kwargs2)
    assert torch.allclose(ep.module()(*args2, **kwargs2), expected)
    assert torch.allclose(ref.module()(*args2, **kwargs2), expected)
    # the caller's dicts are not reordered in place
    assert list(args2[0]) == ["b", "a"] and list(kwargs2["k"]) == ["y", "x"]


def test_other_keys_are_still_refused():
    args, kwargs = _inputs(3)
    ep = st.export(DictModel(), args, kwargs)
    (d, pairs), k = _inputs(3)
    d["c"] = d.pop("a")
    with pytest.raises(st.InputMismatchError, match="keys"):
        ep.module()(d, pairs, **k)
    (d, pairs), k = _inputs(4, ("b", "a"))
    with pytest.raises(st.InputMismatchError, match="expected 3"):  # reordered, then checked
        ep.module()(d, pairs, **k)


@dataclasses.dataclass
class Holder:
    maps: dict
    w: torch.Tensor


def test_dicts_inside_registered_classes_are_reordered():
    st.register_dataclass(Holder)

    def f(h):
        return h.maps["u"] + 2 * h.maps["v"] + h.w

    h = Holder({"u": torch.randn(3), "v": torch.randn(3)}, torch.randn(3))
    ep = st.export(f, (h,))
    h2 = Holder({"v": torch.randn(3), "u": torch.randn(3)}, torch.randn(3))
    assert torch.allclose(ep.module()(h2), f(h2))
