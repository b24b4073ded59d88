"""``to_torch()`` compares sizes by meaning, not text: torch numbers its data-dependent
symbols its own way (matched where they are born: ``.item()``, ``.tolist()``, ``nonzero``)
and writes some expressions in functions of its own (``TruncToInt(IntTrueDiv(s0, 1))``).
Each program here was refused with "converting would change the program" although both
sides computed the same size; each converted program now accepts and rejects what ours
does, with eager's numbers, and matches torch.export's own program where torch exports it.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st
from tests.helpers import assert_close
from tests.interop.harness import check_parity

warnings.filterwarnings("ignore", category=st.ConversionWarning)


def _sum(x):
    a, b = x.tolist()
    torch._check_is_size(a)
    torch._check_is_size(b)
    return torch.ones(a + b), torch.ones(b + a) * 2


def _half(x):
    a = x[0].item()
    torch._check_is_size(a)
    return torch.ones(a // 2), torch.ones((a + 1) // 2)


def _ten(x):
    a = x[0].item()
    torch._check_is_size(a)
    return torch.ones(10 * a), torch.ones(a * 10)


def _max_min(x):
    a, b = x.tolist()
    torch._check_is_size(a)
    torch._check_is_size(b)
    return torch.ones(max(a, b)), torch.ones(max(b, a)), torch.ones(min(a, 2 * b))


def _slice(x, y):
    a = x[0].item()
    torch._check(a >= 0)
    return y[:a] * 2


def _int_div(x, y):
    return torch.ones(int(y.shape[0] / 1)) + y


def _two_nonzero(x, y):
    m = y.nonzero()  # numbered before x's in torch's trace, after in a reordered one
    k = x.nonzero()
    return torch.cat([k, k]).sum(), m.repeat(3, 1).shape[0] + 0 * m.sum()


DATA = [torch.tensor([3, 4]), torch.tensor([0, 0]), torch.tensor([1, 6]),
        torch.tensor([7, 2])]
N = st.Dim("n", min=0, max=16)
CASES = {
    "u0 + u1": (_sum, (DATA[0],), None),
    "u0 // 2": (_half, (DATA[0],), None),
    "10*u0": (_ten, (DATA[0],), None),
    "Max argument order": (_max_min, (DATA[0],), None),
    "Min(s0, u0)": (_slice, (DATA[0], torch.randn(6)), (None, {0: N})),
    "int(s0/1)": (_int_div, (DATA[0], torch.randn(6)), (None, {0: N})),
    "unbacked numbering": (_two_nonzero, (DATA[0], torch.tensor([0.0, 1.0, 2.0])),
                           (None, {0: N})),
}


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _inputs(args):
    """Other data (0 included) and, for a dynamic second input, other sizes (0 and 1)."""
    out = []
    for d in DATA:
        if len(args) == 1:
            out.append(((d,), {}))
        else:
            for n in (0, 1, 9):
                out.append(((d, torch.randn(n) if args[1].is_floating_point()
                             else torch.arange(n)), {}))
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_equal_sizes_convert_and_behave_as_ours(case):
    fn, args, spec = CASES[case]
    model = _Fn(fn)
    ep = st.export(model, args, dynamic_shapes=spec)
    tep = ep.to_torch()
    cases = _inputs(args)
    counts = check_parity(ep, tep, cases)
    assert counts["ok"] >= len(cases)
    for a, k in cases:
        assert_close(tep.module()(*a, **k), model(*a, **k))
    if spec is not None:  # out of the declared space: both refuse
        bad = (args[0], torch.randn(17))
        with pytest.raises(st.InputMismatchError):
            ep.module()(*bad)
        with pytest.raises(Exception):
            tep.module()(*bad)


@pytest.mark.parametrize("case", ["u0 + u1", "u0 // 2", "10*u0", "Max argument order"])
def test_converted_sizes_match_torch_exports(case):
    """torch.export's program of the same code: the same outputs on the same data."""
    fn, args, spec = CASES[case]
    model = _Fn(fn)
    ref = torch.export.export(model, args)
    tep = st.export(model, args).to_torch()
    for a, k in _inputs(args):
        assert_close(tep.module()(*a), ref.module()(*a))
