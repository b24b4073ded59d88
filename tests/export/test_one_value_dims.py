"""A named Dim whose declared range is one size: a program that specializes the dim to that
size honours the whole declared space, so it exports (before, it was refused as
'specialized', the fuzzer's largest refusal class); other sizes are rejected before running."""

import pytest
import torch

import safetrace as st


class Branchy(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 2:          # a guard that pins a general Dim
            return x * 2
        return x.sum(0, keepdim=True)


@pytest.mark.parametrize("n", [0, 1, 3, 5])
def test_one_value_dim_exports_and_rejects_other_sizes(n):
    d = st.Dim("d", min=n, max=n)
    ep = st.export(Branchy(), (torch.randn(n, 3),), dynamic_shapes=({0: d},))
    x = torch.randn(n, 3)
    torch.testing.assert_close(ep.module()(x), Branchy()(x))
    for other in (n + 1, max(n - 1, 0) if n else 2):
        with pytest.raises(st.InputMismatchError, match="as declared"):
            ep.module()(torch.randn(other, 3))


def test_one_value_derived_dim_exports():
    d = st.Dim("d", min=2, max=2)
    ep = st.export(Branchy(), (torch.randn(4, 3),), dynamic_shapes=({0: 2 * d},))
    x = torch.randn(4, 3)
    torch.testing.assert_close(ep.module()(x), Branchy()(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(6, 3))


def test_a_wider_range_is_still_refused_with_the_fix():
    d = st.Dim("d", min=3, max=4)
    with pytest.raises(st.ConstraintViolationError):
        st.export(_Pin(), (torch.randn(3, 2),), dynamic_shapes=({0: d},))


class _Pin(torch.nn.Module):
    def forward(self, x):
        return x.view(3, 2)         # pins the dim to 3 inside [3, 4]
