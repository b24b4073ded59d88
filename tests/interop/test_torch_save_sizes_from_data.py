"""Converted programs sized by data (unbacked symbols) through ``torch.export.save`` /
``torch.export.load``: torch's loader binds each data-dependent symbol again from the
graph's values, and refuses a program with one bound by no node (``expected no unbacked
symbols``).  Forms torch's own program of the model saves and loads (nonzero, masked_select,
unique, ``item()`` into sizes) load from ours too; a cond whose value the conversion makes
from our shapes (torch's fake cond cannot merge its sides) with a size ``u % 9`` of a
symbol no output holds bare (fuzz seed 3601) now loads as well: that size is one fresh
symbol the cond node binds, as torch's merge makes for a size its sides make differently.
Each loaded program computes eager's values at other sizes (0 and 1 included) and
refuses an input outside the declared space."""

from __future__ import annotations

import io
import warnings

import pytest
import torch

import safetrace as st
from safetrace import Dim


class _NonZero(torch.nn.Module):
    def forward(self, x):
        return x.nonzero(), x.nonzero().shape[0] * 2


class _MaskedSelect(torch.nn.Module):
    def forward(self, x):
        return torch.masked_select(x, x > 0) * 2


class _Unique(torch.nn.Module):
    def forward(self, x):
        return torch.unique(x)


class _ItemArange(torch.nn.Module):
    def forward(self, x):
        n = x.max().item()
        torch._check(n >= 0)
        torch._check(n < 100)
        return torch.arange(n) + x.shape[0]


class _ItemZerosMod(torch.nn.Module):
    def forward(self, x, y):
        n = int(x.sum().item())
        torch._check(n >= 0)
        return y.new_zeros(n % 9) + 1


class _ItemModSlices(torch.nn.Module):
    """A split on a size from data (fuzz seed 3601): each side makes `u % 9` of its own
    item(); torch's fake cond cannot merge the sides, the cond's value is made from ours."""
    def forward(self, x):
        v0 = torch.ones(torch.tensor(x.shape[2] * 1).to(torch.int32).item() % 9)
        v1 = v0[:x.size(1)]
        if v1.shape[0] == 1:
            v3 = v1.squeeze(0)
        else:
            v3 = v1.sum(0)
        return v0, v1, v3


def _ints(n):
    return torch.arange(n) % 3


_b = Dim("b", max=64)
CASES = {
    # model, inputs at a size, spec, sizes to run, a size outside
    "nonzero": (_NonZero(), lambda n: (torch.tensor([1., 0, 2]).repeat(n, 1),),
                ({0: _b},), (0, 1, 5), 65),
    "masked_select": (_MaskedSelect(), lambda n: (torch.randn(n, 3),), ({0: _b},),
                      (0, 1, 7), 65),
    "unique": (_Unique(), lambda n: (_ints(n),), ({0: _b},), (0, 1, 6), 65),
    "item_arange": (_ItemArange(), lambda n: (_ints(n),), ({0: _b},), (1, 4), 65),
    "item_zeros_mod": (_ItemZerosMod(), lambda n: (torch.ones(n, dtype=torch.int64),
                                                   torch.randn(3)),
                       ({0: _b}, None), (0, 1, 10, 19), 65),
    # (x.shape[2] read through a tensor: a size from data to our engine too)
    "item_mod_slices": (_ItemModSlices(), lambda n: (torch.randn(2, 7, n),),
                        ({0: Dim("e0", min=1), 2: Dim.AUTO},), (0, 1, 9, 10, 17), None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_program_sized_by_data_loads_in_torch_and_computes_eager(name, monkeypatch):
    if name == "item_mod_slices":  # (verify: torch cannot tell that the side
        # v1.shape[0] == 1 holds min(7, u % 9) == 1, a fact from data: test_cond_merge)
        monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "0")
    model, make, spec, sizes, outside = CASES[name]
    ep = st.export(model, make(2), dynamic_shapes=spec)
    with warnings.catch_warnings():  # (a cond's value from ours: ConversionWarning)
        warnings.simplefilter("ignore", st.ConversionWarning)
        converted = ep.to_torch()
    buf = io.BytesIO()
    torch.export.save(converted, buf)
    loaded = torch.export.load(io.BytesIO(buf.getvalue())).module()
    for n in sizes:
        args = make(n)
        torch.testing.assert_close(loaded(*args), model(*args), check_dtype=True)
    if outside is not None:
        with pytest.raises(Exception, match=r"(?i)(must be|range|guard|assert|expected)"):
            loaded(*make(outside))
    else:  # (x.shape[0] >= 1 declared)
        with pytest.raises(Exception, match=r"(?i)(must be|range|guard|assert|expected)"):
            loaded(torch.randn(0, 7, 3))


def test_the_merged_size_is_bound_by_the_cond_node(monkeypatch):
    """torch's loader finds each data-dependent symbol of the cond's value bound by the
    cond node itself (the whole `u % 9` size: one bare symbol)."""
    monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "0")
    model, make, spec, *_ = CASES["item_mod_slices"]
    ep = st.export(model, make(2), dynamic_shapes=spec)
    with pytest.warns(st.ConversionWarning):
        converted = ep.to_torch()
    conds = [n for n in converted.graph.nodes if n.target is torch.ops.higher_order.cond]
    assert conds and all(n.meta.get("unbacked_bindings") for n in conds)
    size = conds[0].meta["val"][0].shape[0]
    assert isinstance(size, torch.SymInt) and size.node.expr.is_symbol
