"""torch.cond branches returning ints (issue 21).  torch.export takes constant ints: one
both branches give is a constant, differing ones an unbacked int read from the cond's
output.  safetrace does the same.  A dynamic size returned is refused with the fix (eager
torch.cond and torch.export refuse it too: "unsupported branch return type"); a static
size is a constant.  A branch returning a float, or a tensor where the other returns an
int, is an export error naming the output and the fix."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import safetrace as st

from tests.export.dropin_check import check_program


class DifferentConstants(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: (x + 1, 3), lambda x: (x - 1, 4), (x,))


class SameConstantUsed(nn.Module):
    def forward(self, x):
        y, n = torch.cond(x.sum() > 0, lambda x: (x + 1, 3), lambda x: (x - 1, 3), (x,))
        return y * n


class SameSize(nn.Module):
    def forward(self, x):
        y, n = torch.cond(x.sum() > 0, lambda x: (x + 1, x.shape[0]),
                          lambda x: (x - 1, x.shape[0]), (x,))
        return y * n, n


class DifferentSizes(nn.Module):
    def forward(self, x):
        y, n = torch.cond(x.sum() > 0, lambda x: (x.cos(), x.shape[0] * 2),
                          lambda x: (x.sin(), x.shape[0] + 1), (x,))
        return y[:n], n


def _x(n: int, sign: float = 1.0) -> tuple:
    return (sign * (torch.rand(n) + 0.1),)


# name -> (model, torch.export exports it): torch 2.13 refuses a size returned from a
# branch even where it is static ("unsupported branch return type"); eager takes it (on
# a fresh compile cache), and so does safetrace, as the constant it is
CASES = {
    "different-constants": (DifferentConstants, True),
    "same-constant-used": (SameConstantUsed, True),
    "same-static-size": (SameSize, False),
    "different-static-sizes": (DifferentSizes, False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cond_int_outputs(name: str) -> None:
    make, torch_exports = CASES[name]
    model = make()
    # eager torch.cond compiles its branches; once an earlier call made its sizes dynamic
    # it refuses a size output, so each case starts from a fresh compile cache
    torch._dynamo.reset()
    ep = st.export(model, _x(4))
    if torch_exports:
        ref = torch.export.export(model, _x(4))
    else:
        ref = None
        with pytest.raises(Exception, match="branch return type"):
            torch.export.export(model, _x(4))
        torch._dynamo.reset()
    inputs = [_x(4, s) for s in (1.0, -1.0)]
    check_program(ep, model, inputs, [(torch.rand(4, 1),), (torch.rand(5),)], ref=ref)
    check_program(ep, ep.to_torch().module(), inputs)  # converted: the same


@pytest.mark.parametrize("model", [SameSize, DifferentSizes])
def test_a_dynamic_size_returned_is_refused_as_torch_refuses_it(model) -> None:
    spec = ({0: torch.export.Dim("n", max=32)},)
    with pytest.raises(Exception, match="branch return type"):
        torch.export.export(model(), _x(4), dynamic_shapes=spec)
    with pytest.raises(st.UnsupportedOpError, match=r"output 1 is a dynamic size(.|\n)*"
                                                    r"Fix: return the size as a tensor"):
        st.export(model(), _x(4), dynamic_shapes=spec)


def test_an_int_both_branches_give_is_a_constant() -> None:
    ep = st.export(SameConstantUsed(), _x(4))
    muls = [n for n in ep.graph.nodes if n.target is torch.ops.aten.mul.Tensor]
    assert len(muls) == 1 and muls[0].args[1] == 3


def test_differing_ints_are_read_at_run_time_within_their_range() -> None:
    ep = st.export(DifferentConstants(), _x(4))
    [(lo, hi)] = [(r.lower, r.upper) for r in ep.range_constraints.values()]
    assert (lo, hi) == (3, 4)


class FloatOut(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: (x + 1, 3), lambda x: (x - 1, 2.5), (x,))


class TensorOrInt(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: (x + 1, 3), lambda x: (x - 1, x), (x,))


def test_a_float_or_a_tensor_against_an_int_is_refused_with_the_fix() -> None:
    with pytest.raises(st.UnsupportedOpError, match="float 2.5 at output 1"):
        st.export(FloatOut(), _x(4))
    with pytest.raises(st.OpShapeError, match=r"output 1 must be a tensor in every branch"
                                              r"(.|\n)*int 3(.|\n)*f32\[4\](.|\n)*Fix:"):
        st.export(TensorOrInt(), _x(4))
