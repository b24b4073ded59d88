"""Custom ops with a CompositeImplicitAutograd kernel and no fake (issue 21).  torch's
fake mode runs such a kernel to learn the outputs; safetrace traces through it (the
kernel's own calls become the graph) instead of failing with MissingFake.  Each case is
compared with torch.export and eager at other sizes; out-of-space inputs are refused."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import safetrace as st

from tests.export.dropin_check import check_program

_LIB = torch.library.Library("st_dropin_cia", "DEF")
_LIB.define("scaled(Tensor x, int k=2) -> Tensor")
_LIB.define("split_sum(Tensor x, Tensor y) -> (Tensor, Tensor)")
_LIB.define("nested(Tensor x) -> Tensor")
_LIB.define("no_kernel(Tensor x) -> Tensor")


def _scaled(x: torch.Tensor, k: int = 2) -> torch.Tensor:
    return x.sin() * k + x.shape[0]


def _split_sum(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x + y, (x * y).sum(-1)


def _nested(x: torch.Tensor) -> torch.Tensor:
    return torch.ops.st_dropin_cia.scaled(x, 3).cumsum(0)


_LIB.impl("scaled", _scaled, "CompositeImplicitAutograd")
_LIB.impl("split_sum", _split_sum, "CompositeImplicitAutograd")
_LIB.impl("nested", _nested, "CompositeImplicitAutograd")
ops = torch.ops.st_dropin_cia


class Scaled(nn.Module):
    def forward(self, x):
        return ops.scaled(x) + ops.scaled.default(x, k=5)


class SplitSum(nn.Module):
    def forward(self, x, y):
        a, b = ops.split_sum(x, y)
        return a.relu(), b


class Nested(nn.Module):
    def forward(self, x):
        return ops.nested(x)


N = torch.export.Dim("n", max=32)
# name -> (model, example, spec, other inputs, inputs outside the space)
CASES = {
    "scaled": (Scaled, (torch.randn(4),), ({0: N},),
               [(torch.randn(0),), (torch.randn(1),), (torch.randn(32),)],
               [(torch.randn(33),), (torch.randn(4, 1),)]),
    "split-sum": (SplitSum, (torch.randn(4, 3), torch.randn(4, 3)), ({0: N}, {0: N}),
                  [(torch.randn(1, 3), torch.randn(1, 3)), (torch.randn(0, 3),
                                                            torch.randn(0, 3))],
                  [(torch.randn(4, 3), torch.randn(5, 3))]),
    "nested": (Nested, (torch.randn(4, 2),), ({0: N},),
               [(torch.randn(1, 2),), (torch.randn(9, 2),)], [(torch.randn(4, 3),)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_composite_custom_op_traces_through_its_kernel(name: str) -> None:
    make, example, spec, others, bad = CASES[name]
    model = make()
    ep = st.export(model, example, dynamic_shapes=spec)
    ref = torch.export.export(model, example, dynamic_shapes=spec)
    check_program(ep, model, [example, *others], bad, ref=ref)


def test_an_op_with_no_kernel_and_no_fake_is_still_missing_fake() -> None:
    with pytest.raises(st.UnsupportedOpError, match="st_dropin_cia::no_kernel has no fake"):
        st.export(lambda x: ops.no_kernel(x), (torch.randn(3),))
