"""``ep.to_torch()`` of size splits whose sides hold only on their own sizes (fuzz seed
3401, docs/benchmarks.md "fuzz34"): torch's ``cond`` traces each branch at the sizes of
every side, where a point side's first assertion (``d0 == 1: a relation split's side``)
failed while tracing, and its operands narrowed to their one size (``x[0:1]``) or a side's
first rows (``x[:2]`` where ``d0 >= 4``) were ``Min(2, s0)`` rows, which later ops did not
fit. The conversion drops an assertion the contract and the branch's predicates imply, and
writes such a slice as the view of those rows (interop/hops.py). Each converted program
computes eager's values on both sides of its splits (0 and 1 included) and refuses an
input outside the declared space, through ``ep.to_torch()`` and through
``st.load(st.save bytes).to_torch()``; a split cond torch still refuses is named as the
export's own split in the message."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.fuzz.converted import converts_like_eager


class _OneInShape(torch.nn.Module):
    def forward(self, x):
        if 1 in x.shape:   # a relation split: d0 == 1 traced at that one size
            v1 = x.flatten()
        else:
            v1 = x.reshape(-1) * 2
        return (v1,)


class _FirstRows(torch.nn.Module):
    def forward(self, x):
        v0 = torch.special.i1e(x.double())
        v1 = x.clone()
        for _j, _r in enumerate(x[:2]):   # a size split at d0 == 1, 2, 3 and d0 >= 4
            v1 = v1 + _r * _j
        v3 = torch.cartesian_prod(v1.flatten()[:3], torch.arange(2.0))
        v4 = torch.stack([p.sum() for p in v3.chunk((v3.shape[0] + v0.shape[0]) // 2 + 1, 0)])
        return (v0, v1, v3, v4)


class _FirstRowOfFlat(torch.nn.Module):
    def forward(self, x, y):
        return y + x.flatten()[:1]  # (a relation split: min(d0*x_shape_0, 1) == 1)


_d0 = Dim("d0", min=1, max=5)
CASES = {
    # the side with 0 rows keeps torch's slice (`Min(1, s0*s1)` at the example's sizes,
    # where a view of 0 rows would not broadcast with y's 3): fuzz seed 3402
    "zero_rows_side_kept": (_FirstRowOfFlat(), [(2, 3), (3, 3, 0, 3)],
                            ({0: Dim.AUTO, 1: _d0}, {1: _d0}),
                            [[(n, m), (3, m, 0, 3)] for n, m in
                             ((0, 1), (1, 1), (0, 3), (4, 5), (1, 2))],
                            [(2, 6), (3, 6, 0, 3)]),
    "relation_point_side": (_OneInShape(), [(0, 0)], ({0: Dim("d0", max=16)},),
                            [[(n, 0)] for n in (0, 1, 2, 5, 16)], [(17, 0)]),
    "point_sides_first_rows": (_FirstRows(), [(3,)], ({0: Dim("d0", min=1, max=6)},),
                               [[(n,)] for n in (1, 2, 3, 4, 6)], [(7,)]),
    "point_sides_from_zero": (_FirstRows(), [(5,)], ({0: Dim("d0", max=9)},),
                              [[(n,)] for n in (0, 1, 2, 3, 4, 9)], [(10,)]),
}


@pytest.mark.parametrize("way", ["to_torch", "load"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_split_sides_convert_like_eager(name, way, monkeypatch):
    model, example, spec, others, outside = CASES[name]
    if name == "zero_rows_side_kept":  # the default path users get (fake values of our
        # shapes): verify=True's torch kernel run of that side's slice at the example's
        # sizes gives 1 row, ours 0 (a disagreement of verify mode before this change too)
        monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "0")
        if way == "load":  # (the loaded program's own check of that side's add fails at
            pytest.skip("the example's sizes: refused before this change too, load34's")
    computed = converts_like_eager(model, example, spec, others, outside, way=way)
    assert computed == 1 + len(others)


def test_point_side_reads_its_rows_as_a_view():
    """The converted point side holds the view of its rows (no ``Min(2, s0)`` slice);
    a user's own slice elsewhere stays a slice."""
    ep = st.export(_FirstRows(), (torch.randn(3),), dynamic_shapes=({0: Dim("d0", min=1, max=6)},))
    gm = ep.to_torch().module()
    targets = [n.target for m in gm.modules() if isinstance(m, torch.fx.GraphModule)
               for n in m.graph.nodes]
    assert torch.ops.aten.as_strided.default in targets
    x = torch.randn(6)[::2]     # a strided input: the view keeps its strides
    torch.testing.assert_close(gm(x), _FirstRows()(x))


class _SplitThenPad(torch.nn.Module):
    def forward(self, x):
        v0 = x.sum()  # (below: size splits at d0 == 0 and d0 == 1, Dim.AUTO)
        if 1 in x.shape:
            v1 = x.flatten()
        else:
            v1 = x.reshape(-1) * 2
        v3 = torch.nn.functional.pad(v1, (0, x.size(0) % 3))
        v4 = torch.cat([x, x.flip(0)]).reshape(2, -1)
        v5 = torch.nn.functional.pad(x, (0, max(len(x) - x.shape[-1], 0)))
        return (v0, v1, v3, v4, v5, v4.flatten()[:0])


def test_split_cond_refusal_names_the_split():
    """A size split's cond torch's cond still refuses (outputs it cannot merge,
    ``Ne(u, 1)``): the message names the cond as the export's split of the user's line,
    not a torch.cond of the user's to fix, and the fix as the Dim's range or ep.module()
    (which computes it)."""
    model = _SplitThenPad()
    ep = st.export(model, (torch.randn(2, 3),), dynamic_shapes=({0: Dim.AUTO},))
    for n in (0, 1, 2, 5):
        x = torch.randn(n, 3)
        torch.testing.assert_close(ep.module()(x), model(x))
    try:
        gm = ep.to_torch().module()
    except st.ConversionError as e:
        text = str(e)
        assert "This torch.cond is not in your code: it is safetrace's size split" in text
        assert "size split on `x_shape_0 >= 2` (from `if 1 in x.shape:` at " \
            "test_to_torch_split_sides.py" in text
        assert "`print(ep)` shows it" in text and "Dim('batch', min=2)" in e.fix
        assert "ep.module()" in e.fix and "cannot take this program's use" not in text
    else:  # (converted, once torch's cond merges such outputs: then as eager)
        for n in (0, 1, 2, 5):
            x = torch.randn(n, 3)
            torch.testing.assert_close(gm(x), model(x))
