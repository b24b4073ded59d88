"""Things an exported graph cannot capture are refused at export, naming the line and the
fix, instead of silently changing the results: autocast regions, seeding, generators."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import safetrace as st
from safetrace import Dim


class Autocast(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.lin(x)


def test_autocast_region_is_refused():
    with pytest.raises(st.UnsupportedOpError) as info:
        st.export(Autocast(), (torch.zeros(3, 8),))
    msg = str(info.value)
    assert "autocast" in msg and "test_refusals.py" in msg and ".to(torch.bfloat16)" in msg
    assert not torch.is_autocast_enabled("cpu")


def test_seeding_inside_forward_is_refused_and_restored():
    def f(x):
        torch.manual_seed(123)
        return x + torch.randn(3)

    with pytest.raises(st.UnsupportedOpError) as info:
        st.export(f, (torch.zeros(3),))
    assert "manual_seed" in str(info.value)
    torch.manual_seed(0)  # the real function is back
    a = torch.rand(2)
    torch.manual_seed(0)
    assert torch.equal(a, torch.rand(2))


def test_generator_argument_is_refused():
    def f(x):
        g = torch.Generator().manual_seed(7)
        return x + torch.randn(x.shape, generator=g)

    with pytest.raises(st.UnsupportedOpError) as info:
        st.export(f, (torch.zeros(3),))
    assert "Generator" in str(info.value)


def test_check_with_on_sizes_is_a_symbolic_check():
    def f(x, m):
        torch._check_with(AssertionError, m.shape[0] == x.shape[0], lambda: "bad")
        return x + m

    ep = st.export(f, (torch.randn(3), torch.randn(3)),
                   dynamic_shapes=({0: Dim.AUTO}, {0: Dim.AUTO}))
    torch.testing.assert_close(ep.module()(torch.ones(5), torch.ones(5)), torch.full((5,), 2.0))
    with pytest.raises((st.InputMismatchError, st.RuntimeAssertionError)):
        ep.module()(torch.ones(5), torch.ones(4))


def test_mha_key_padding_mask_with_auto_dims():
    mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()

    def f(x, mask):
        return mha(x, x, x, key_padding_mask=mask, need_weights=False)[0]

    x, mask = torch.randn(2, 5, 8), torch.zeros(2, 5, dtype=torch.bool)
    ep = st.export(f, (x, mask), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},
                                                 {0: Dim.AUTO, 1: Dim.AUTO}))
    x2, m2 = torch.randn(3, 7, 8), torch.zeros(3, 7, dtype=torch.bool)
    m2[:, -2:] = True
    torch.testing.assert_close(ep.module()(x2, m2), f(x2, m2))


class Logger(nn.Module):
    def __init__(self):
        super().__init__()
        self.log, self.seen, self.tags = [], {}, set()

    def forward(self, x):
        self.log.append(x.shape[0])
        self.seen["x"] = x
        self.tags.add("called")
        return x + 1


def test_container_attributes_are_restored():
    m = Logger()
    m.log.append("before")
    st.export(m, (torch.randn(4),), dynamic_shapes={"x": {0: Dim.AUTO}})
    assert m.log == ["before"] and m.seen == {} and m.tags == set()


def test_export_leaves_the_default_generator_alone():
    torch.manual_seed(5)
    st.export(lambda x: x + torch.randn(3), (torch.zeros(3),))
    a = torch.rand(2)
    torch.manual_seed(5)
    assert torch.equal(a, torch.rand(2))


def test_torch_export_still_works_after_a_refused_seed():
    def f(x):
        torch.manual_seed(1)
        return x + 1

    with pytest.raises(st.UnsupportedOpError):
        st.export(f, (torch.zeros(3),))
    assert torch.manual_seed.__module__ == "torch.random"


@pytest.mark.filterwarnings("ignore")
def test_torch_compiled_models_and_submodules_export_what_they_wrap():
    inner = nn.Sequential(nn.Linear(4, 4), nn.ReLU())

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = torch.compile(inner)
            self.head = nn.Linear(4, 2)

        def forward(self, x):
            return self.head(self.block(x))

    outer = Outer()
    for model in (torch.compile(inner), outer):
        ep = st.export(model, (torch.randn(2, 4),), dynamic_shapes=({0: Dim.AUTO},))
        x = torch.randn(5, 4)
        with torch.no_grad():
            want = inner(x) if model is not outer else outer.head(inner(x))
        torch.testing.assert_close(ep.module()(x), want)
    assert type(outer.block).__name__ == "OptimizedModule"  # the wrapper is put back
