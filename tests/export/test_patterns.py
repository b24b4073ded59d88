"""Every pattern exports static and with Dim.AUTO dims, matches eager on the example and
on inputs of other sizes (or rejects them before computing)."""

from __future__ import annotations

import copy

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.export.pattern_cases import C


def _close(a, b):
    torch.testing.assert_close(a, b, equal_nan=True, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(C))
def test_pattern(name):
    fn, shapes, _ = C[name]
    torch.manual_seed(0)
    args = tuple(torch.randn(*s) for s in shapes)
    ep = st.export(fn, args)
    _close(ep.module()(*args), fn(*copy.deepcopy(args)))
    spec = tuple((Dim.AUTO,) * len(s) for s in shapes)
    ep = st.export(fn, args, dynamic_shapes=spec)
    _close(ep.module()(*args), fn(*copy.deepcopy(args)))
    for grow in (1, 2):
        other = tuple(torch.randn(*[d + grow if d > 1 else d for d in s]) for s in shapes)
        try:
            got = ep.module()(*other)
        except st.InputMismatchError:
            continue
        _close(got, fn(*copy.deepcopy(other)))


def test_python_types_as_dtypes():
    """torch accepts bool/int/float/complex for dtype (float is float64); x.to(float) once
    kept float32 silently."""
    from safetrace import Dim

    def f(x):
        t = x.shape[1]
        mask = torch.ones(t, t, dtype=bool).tril()
        return (x.to(float), x.to(dtype=int), x.to("cpu", float), mask.sum(),
                torch.zeros(t, dtype=int), x.new_ones(3, dtype=float), x.sum(dtype=float))

    ep = st.export(f, (torch.randn(2, 5),), dynamic_shapes=({1: Dim("t")},))
    x = torch.randn(2, 7)
    for got, want in zip(ep.module()(x), f(x)):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)



class _Anchors(torch.nn.Module):
    """ultralytics' make_anchors: torch.full over the elements of a stride buffer."""

    def __init__(self):
        super().__init__()
        self.register_buffer("stride", torch.tensor([8.0, 16.0]))
        self.scale = torch.tensor(0.5)  # a plain tensor attribute

    def forward(self, x):
        h, w = x.shape[2], x.shape[3]
        out = [torch.full((h * w, 1), s, dtype=x.dtype) for s in self.stride]
        return out + [torch.full((h, 2), self.stride[1]), torch.full((w,), self.scale),
                      torch.full((2,), 3)]


def test_full_with_a_zero_dim_tensor_fill():
    m = _Anchors()
    ep = st.export(m, (torch.randn(1, 3, 4, 5),), dynamic_shapes=({2: Dim.AUTO, 3: Dim.AUTO},))
    x = torch.randn(1, 3, 6, 7)
    for got, want in zip(ep.module()(x), m(x)):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)
    prog = ep.module()
    prog.load_state_dict({"stride": torch.tensor([4.0, 32.0])})  # a traced fill follows it
    assert prog(x)[1][0, 0].item() == 32.0


class _SizeFirst(torch.nn.Module):
    """An input's size is read (a sym_size node) before any op, and a plain tensor
    attribute is lifted later: the constant's placeholder must still come first."""

    def __init__(self):
        super().__init__()
        self.offset = torch.arange(4.0)

    def forward(self, x):
        return x.new_zeros(x.shape[0], 4) + self.offset


def test_constant_lifted_after_a_size_read_saves_and_loads(tmp_path):
    m = _SizeFirst()
    ep = st.export(m, (torch.randn(3, 2),), dynamic_shapes=({0: Dim.AUTO},))
    ops = [n.op for n in ep.graph.nodes]
    assert ops[:ops.count("placeholder")] == ["placeholder"] * ops.count("placeholder")
    st.save(ep, tmp_path / "p.st")
    loaded = st.load(tmp_path / "p.st")
    x = torch.randn(5, 2)
    torch.testing.assert_close(loaded.module()(x), m(x))


def test_in_place_shape_changes_update_the_traced_tensor():
    """x.t_(), x.unsqueeze_(0): the same tensor gets a new shape (and layout); its shape,
    later ops and layout questions see it (they saw the old shape before)."""
    def f(x):
        y = x * 1
        y.t_()
        z = x * 2
        z.unsqueeze_(0)
        z.squeeze_(0)
        return y.shape[0], y + 0, z.shape, z.is_contiguous()

    ep = st.export(f, (torch.randn(2, 3),), dynamic_shapes=({0: Dim.AUTO},))
    assert "dynamic" in ep.dims_report["x.shape[0]"]
    x = torch.randn(5, 3)
    got, want = ep.module()(x), f(x)
    assert got[0] == want[0] and got[2] == want[2] and got[3] == want[3]
    torch.testing.assert_close(got[1], want[1])
    with pytest.raises(st.UnsupportedOpError):  # a transposed tensor's layout is unknown
        st.export(lambda x: (x * 1).t_().is_contiguous(), (torch.randn(2, 3),))
