"""torch.export Dims read by id: a freed Dim's id taken by a new one (same name, another
range) gives the new Dim's range, never the freed one's (seen once in the suite under
load: a test's Dim('dy', min=6) read as an earlier test's Dim('dy', min=4, max=7))."""

import torch
from torch.export import Dim as TorchDim

import safetrace as st
from safetrace.exporter import shapes


def test_a_reused_id_gives_the_new_dims_range():
    old = TorchDim("dy", min=4, max=7)
    assert (shapes.from_torch_export(old, "x").min, shapes.from_torch_export(old, "x").max) == (4, 7)
    new = TorchDim("dy", min=6)
    # (what the allocator does once `old` is freed: its entry now under the new one's id)
    shapes._TORCH_DIMS[id(new)] = shapes._TORCH_DIMS.pop(id(old))
    got = shapes.from_torch_export(new, "x")
    assert (got.name, got.min) == ("dy", 6)
    assert shapes.from_torch_export(new, "x") is got  # (one safetrace Dim per object)


def test_one_torch_dim_is_one_dim_across_inputs():
    d = TorchDim("n", min=2, max=64)

    class Add(torch.nn.Module):
        def forward(self, x, y):
            return x + y

    ep = st.export(Add(), (torch.randn(5), torch.randn(5)), dynamic_shapes=((d,), (d,)))
    for n in (2, 3, 64):
        x, y = torch.randn(n), torch.randn(n)
        torch.testing.assert_close(ep.module()(x, y), x + y)
    for bad in ((torch.randn(3), torch.randn(4)), (torch.randn(1), torch.randn(1)),
                (torch.randn(65), torch.randn(65))):
        try:
            ep.module()(*bad)
        except Exception:
            continue
        raise AssertionError(f"accepted sizes {[t.shape for t in bad]}")
