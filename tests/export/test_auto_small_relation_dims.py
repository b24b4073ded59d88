"""A relation between a Dim.DYNAMIC / AUTO size and other sizes that some size below 2 breaks
where eager computes (exporter/auto_small.py ``auto_relations``): ``if v.shape[0] > 2:`` of
``y.flatten(0, -3)`` is ``s0*s1 >= 3``.  Kept as a run-time check it refused (2, 1), (1, 2),
(0, 3), which eager computes (the other branch); with both sizes named Dims the relation
split traces both answers.  Now the Dim.DYNAMIC / AUTO sizes of such a relation are
exported again as named Dims (each its own: no equality is assumed), the program adopted
where it refuses fewer sizes below 2 and no size from 2 to 64 the first admitted.

Also (``_refuses_more``): a Dim whose range stopped where conditions around the example stop
holding (bamba's `s % 8 != 0` from 9 to 15) gave a program refusing length 20 while admitting
length 1: such a program is not taken (the first one stands)."""

import pytest
import torch

import safetrace as st

SPECS = {
    "dynamic and a Dim": {0: st.Dim.DYNAMIC, 1: st.Dim("y1")},
    "auto and a Dim": {0: st.Dim.AUTO, 1: st.Dim("y1")},
    "both dynamic": {0: st.Dim.DYNAMIC, 1: st.Dim.DYNAMIC},
    "both auto": {0: st.Dim.AUTO, 1: st.Dim.AUTO},
}


class Flattened(torch.nn.Module):
    def forward(self, y):
        v = y.flatten(0, -3)
        if v.shape[0] > 2:
            return v * 2
        return v - 1


MODEL = Flattened()


@pytest.fixture(scope="module", params=list(SPECS))
def program(request):
    return st.export(MODEL, (torch.randn(2, 3, 4, 5),), dynamic_shapes=(SPECS[request.param],))


@pytest.mark.parametrize("a,b", [(2, 1), (1, 2), (1, 1), (0, 3), (3, 0), (0, 0), (1, 3),
                                 (3, 1), (2, 2), (5, 7), (1, 0)])
def test_every_size_matches_eager(program, a, b):
    y = torch.randn(a, b, 4, 5)
    torch.testing.assert_close(program.module()(y), MODEL(y))


def test_no_check_is_left_and_the_sizes_stay_dynamic(program):
    assert not program.contract.conditions
    assert [(x.lo, x.hi) for x in program.contract.symbols if x.backed] == [(0, None)] * 2


@pytest.mark.parametrize("y", [torch.randn(2, 3, 4, 6), torch.randn(2, 3, 20)])
def test_outside_the_space_is_refused_before_running(program, y):
    with pytest.raises(st.InputMismatchError):
        program.module()(y)


class ModularLength(torch.nn.Module):
    """bamba's pattern: a branch below 2, and `pad = (8 - t % 8) % 8; if pad > 0:`."""

    def forward(self, x, mask):
        t = x.shape[1]
        if t <= 1:
            return x * 3
        pad = (8 - t % 8) % 8
        if pad > 0:
            return torch.nn.functional.pad(x, (0, pad))[:, :t] * mask
        return x + mask


@pytest.mark.parametrize("t", [2, 9, 12, 15, 20, 23, 31])
def test_a_program_refusing_larger_sizes_the_first_admits_is_not_taken(t):
    model = ModularLength()
    auto = {0: st.Dim.AUTO, 1: st.Dim.AUTO}
    ep = st.export(model, (torch.randn(2, 12), torch.randn(2, 12)), dynamic_shapes=(auto, auto))
    args = torch.randn(2, t), torch.randn(2, t)
    torch.testing.assert_close(ep.module()(*args), model(*args))


class BlockPadded(torch.nn.Module):
    """longt5 / pegasus_x's pattern: pad the length to a multiple of the block."""

    def forward(self, x):
        t = x.shape[1]
        if t % 5 != 0:
            x = torch.nn.functional.pad(x, (0, 5 - t % 5))
        return x.reshape(x.shape[0], -1, 5).sum(-1)


@pytest.mark.parametrize("hint", [st.Dim.AUTO, st.Dim.DYNAMIC])
def test_a_condition_on_one_size_failing_at_larger_sizes_is_split(hint):
    # (`t % 5 != 0` was kept as a check: t = 5, 10, 20 refused, which eager pads or not)
    model = BlockPadded()
    ep = st.export(model, (torch.randn(2, 12),), dynamic_shapes=({1: hint},))
    assert not ep.contract.conditions
    for t in [0, 1, 2, 5, 10, 12, 20, 23]:
        x = torch.randn(2, t)
        torch.testing.assert_close(ep.module()(x), model(x))
    for x in (torch.randn(3, 12), torch.randn(2, 12, 1)):  # (a static batch; another rank)
        with pytest.raises(st.InputMismatchError):
            ep.module()(x)
