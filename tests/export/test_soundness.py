"""Soundness: any input either is rejected before computing, or matches eager.

For each program, random sizes (including 0 and 1, and sizes that break the program's
relations) are drawn for every input dim.  The exported program must reject exactly the
inputs eager cannot run (and may reject more only when the contract says so), and must
match eager on everything it accepts.
"""

from __future__ import annotations

import random

import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from safetrace import Dim
from tests.helpers import assert_close
from tests.models import MLP, Attention, ConvNet


def _add_mm(x, y, z):
    return x + y @ z


def _slice_cat(x, y, zs):
    return x[:3] + y @ torch.cat(zs)


def _broadcast(x, y):
    return (x * y).sum(-1)


def _reshape(x):
    b, t, c = x.shape
    return x.reshape(b * t, c).softmax(-1).view(b, t, c) + x.flip(1)


def _pool(x):
    return F.max_pool2d(x, 2) + F.avg_pool2d(x, 2)


def _mask(x, m):
    return x[m].sum(0) + m.sum()


DYN2 = (Dim.DYNAMIC, Dim.DYNAMIC)
CASES = [
    ("addmm", _add_mm, [(3, 5), (3, 4), (4, 5)], (DYN2, DYN2, DYN2)),
    ("slice_cat", _slice_cat, [(7, 5), (3, 6), [(2, 5), (4, 5)]],
     ((Dim.AUTO, Dim.AUTO), (3, Dim.AUTO), [(Dim.AUTO, Dim.AUTO), (Dim.AUTO, Dim.AUTO)])),
    ("broadcast", _broadcast, [(4, 1, 3), (5, 3)], ((Dim.AUTO,) * 3, (Dim.AUTO,) * 2)),
    ("reshape", _reshape, [(2, 3, 4)], ((Dim("b"), Dim("t"), None),)),
    ("pool", _pool, [(1, 2, 8, 6)], ((Dim.AUTO, None, Dim("h", min=2), Dim("w", min=2)),)),
]


def _make(shapes, sizes):
    if isinstance(shapes, list) and shapes and isinstance(shapes[0], (list, tuple)):
        return [_make(s, sizes) for s in shapes]
    return torch.randn(*[sizes.get(id(shapes), {}).get(i, n) for i, n in enumerate(shapes)])


def _random_inputs(shapes, rng, mode):
    def one(shape):
        if isinstance(shape, list):
            return [one(s) for s in shape]
        out = []
        for n in shape:
            if mode == "same":
                out.append(n)
            elif mode == "scaled":
                out.append(n if rng.random() < 0.3 else rng.choice([0, 1, n + 1, 2 * n]))
            else:
                out.append(rng.randint(0, 9))
        return torch.randn(*out)

    return [one(s) for s in shapes]


def _from_contract(ep, shapes, rng):
    """Inputs drawn from the declared space: symbols in range, relations respected."""
    for _ in range(20):
        binding = {}
        for s in ep.contract.symbols:
            if s.where is None:
                continue
            name, lo, hi = s.name, s.lo or 0, s.hi
            binding[name] = rng.randint(lo, lo + 6 if hi is None else min(hi, lo + 6))
        tensors = []
        ok = True
        for inp in ep.contract.inputs:
            dims = [d.size if isinstance(d.size, int) else d.size.evaluate(binding)
                    for d in inp.dims]
            ok = ok and all(d >= 0 for d in dims)
            tensors.append(torch.randn(*[max(d, 0) for d in dims]))
        if ok:
            break
    it = iter(tensors)

    def rebuild(shape):
        return [rebuild(s) for s in shape] if isinstance(shape, list) else next(it)

    return [rebuild(s) for s in shapes]


def _check(ep, fn, args):
    try:
        expected = fn(*[[t.clone() for t in a] if isinstance(a, list) else a.clone()
                        for a in args])
    except (RuntimeError, IndexError, ValueError):
        expected = None
    try:
        got = ep.module()(*args)
    except st.InputMismatchError:
        return "rejected"
    assert expected is not None, "the exported program ran an input eager rejects"
    assert_close(expected, got)
    return "ran"


@pytest.mark.parametrize("name,fn,shapes,spec", CASES, ids=[c[0] for c in CASES])
def test_random_inputs_run_or_are_rejected(name, fn, shapes, spec):
    rng = random.Random(0)
    example = _random_inputs(shapes, rng, "same")
    ep = st.export(fn, tuple(example), dynamic_shapes=spec)
    outcomes = {"ran": 0, "rejected": 0}
    for i in range(60):
        if i % 3 == 0:
            args = _from_contract(ep, shapes, rng)
        else:
            args = _random_inputs(shapes, rng, ("scaled", "wild")[i % 3 - 1])
        outcomes[_check(ep, fn, args)] += 1
    assert outcomes["ran"] >= 10 and outcomes["rejected"] > 0, outcomes


def _mask_case():
    n = Dim("n")
    x, m = torch.randn(5, 3), torch.rand(5) > 0.5
    ep = st.export(_mask, (x, m), dynamic_shapes={"x": (n, None), "m": (n,)})
    rng = random.Random(1)
    for _ in range(30):
        k = rng.randint(0, 7)
        j = k if rng.random() < 0.7 else rng.randint(0, 7)
        _check(ep, _mask, [torch.randn(k, 3), torch.rand(j) > rng.random()])


def test_data_dependent_program_is_sound():
    _mask_case()


@pytest.mark.parametrize("make,shape,spec,others", [
    (MLP, (4, 16), {"x": (Dim("batch"), None)}, [(1, 16), (9, 16), (0, 16)]),
    (ConvNet, (2, 3, 16, 16), {"x": (Dim("batch"), None, None, None)},
     [(1, 3, 16, 16), (5, 3, 16, 16)]),
    (Attention, (2, 5, 32), {"x": (Dim("batch"), Dim("seq"), None)},
     [(1, 1, 32), (3, 7, 32), (4, 2, 32)]),
])
def test_models_with_dynamic_batch_and_sequence(make, shape, spec, others):
    torch.manual_seed(0)
    model = make().eval()
    ep = st.export(model, (torch.randn(*shape),), dynamic_shapes=spec)
    for s in others:
        x = torch.randn(*s)
        with torch.no_grad():
            assert_close(model(x), ep.module()(x))
    bad = list(shape)
    bad[-1] += 1
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(*bad))
