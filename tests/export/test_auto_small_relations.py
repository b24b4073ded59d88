"""Dim.AUTO dims split at 0 and 1 (exporter/auto_small.py) that the program relates only by
an equation: transformers' mra squeezes its mask, repeats it per head and reshapes it to the
ids' `batch * heads, length` (`s0*s1 == s2*s3` between the ids' and the mask's sizes), and
adds a position table of 70 rows (`t <= 70`).  Traced alone, the mask's batch at 1 kept the
ids' batch at 2 and broke the equation (eager raises there), so batch 1 stayed refused;
now the sizes the equation puts face to face with equal examples (batch with batch, length
with length) are one Dim, the length's Dim stops where the table does, and the splits of
both (batch 1, length 0 and 1: six sides) are not counted against `max_splits`.  The
program then takes the ids' and the mask's sizes equal: narrower than the equation, so an
input eager would compute with other sizes (ids 1 x 12, mask 2 x 6) is refused."""

import pytest
import torch

import safetrace as st

AUTO = st.Dim.AUTO


class ReshapedMask(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pos = torch.nn.Parameter(torch.randn(70, 8))

    def forward(self, x, mask):
        b, t, _ = x.shape
        h = x + self.pos[:t]
        m = mask.squeeze().repeat(1, 4, 1).reshape(b * 4, t)
        return h.repeat(4, 1, 1) * m[..., None]


SPEC = ({0: AUTO, 1: AUTO}, {0: AUTO, 1: AUTO})


def _inputs(b, t):
    return torch.randn(b, t, 8), torch.randn(b, t)


MODEL = ReshapedMask()


@pytest.fixture(scope="module")
def program():
    return st.export(MODEL, _inputs(2, 12), dynamic_shapes=SPEC)


@pytest.mark.parametrize("b,t", [(1, 9), (1, 1), (1, 0), (0, 5), (0, 0), (2, 1), (2, 0),
                                 (3, 20), (5, 3), (1, 70), (2, 12)])
def test_batch_and_length_one_match_eager(program, b, t):
    model = program.module()
    args = _inputs(b, t)
    torch.testing.assert_close(model(*args), MODEL(*args))


def test_the_checks_of_batch_and_length_one_are_gone(program):
    assert not program.contract.conditions
    report = program.dims_report
    assert report["mask.shape[0]"] == report["x.shape[0]"]  # (one Dim: equal sizes)
    assert program.dim_names == {}


@pytest.mark.parametrize("args", [
    (torch.randn(2, 71, 8), torch.randn(2, 71)),  # (past the table: eager raises)
    (torch.randn(2, 12, 9), torch.randn(2, 12)),  # (a static size changed)
    (torch.randn(1, 12, 8), torch.randn(2, 6)),  # (eager computes it: refused, not wrong)
    (torch.randn(2, 12, 8), torch.randn(2, 12, 1)),  # (another rank)
])
def test_outside_the_space_is_refused_before_running(program, args):
    with pytest.raises(st.InputMismatchError):
        program.module()(*args)


def test_untied_sizes_of_other_examples_stay_apart():
    class Flattened(torch.nn.Module):  # (`s0*s1 == s2`: no size of the same example faces)
        def forward(self, x, flat):
            if x.shape[0] != 1:
                return x.reshape(-1) + flat
            return x.reshape(-1) - flat

    ep = st.export(Flattened(), (torch.randn(2, 3), torch.randn(6)),
                   dynamic_shapes=({0: AUTO, 1: AUTO}, {0: AUTO}))
    for b, n in [(0, 3), (1, 3), (2, 3), (3, 5), (1, 1)]:
        args = (torch.randn(b, n), torch.randn(b * n))
        torch.testing.assert_close(ep.module()(*args), Flattened()(*args))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 3), torch.randn(5))
