"""Where torch clamps, the rules clamp symbolically (Min/Max) instead of guarding: slice
bounds (negative, past the end, of unknown sign), narrow's start, ceil-mode pooling.
Each case: the rule on symbolic sizes records no guard (beyond eager's own errors), and
its shape equals eager's at every size in a range, 0 and 1 included."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

from safetrace.meta import TensorMeta
from safetrace.meta.symtypes import torch_env
from safetrace.rules import get_rule
from safetrace.rules.common import ACTIVE
from safetrace.symbolic import make_int

aten = torch.ops.aten
SIZES = range(0, 8)


def _symbols(n, hints=None):
    env = torch_env()
    hints = hints or [5] * n
    return env, [make_int(env.new_backed(h, lo=0), env) for h in hints]


def _run(env, op, *args):
    saved, ACTIVE.env = ACTIVE.env, env
    try:
        return get_rule(op)(*args)
    finally:
        ACTIVE.env = saved


def _value(size, binding):
    return size if isinstance(size, int) else int(size.expr.evaluate(binding))


# bounds as functions of the dim size `s` and another size `t`; True: no guard at all
SLICES = [
    ("x[:-1]", lambda s, t: (None, -1, 1), True),
    ("x[-3:]", lambda s, t: (-3, None, 1), True),
    ("x[:-1:3]", lambda s, t: (None, -1, 3), True),
    ("x[s - t:]", lambda s, t: (s - t, None, 1), True),
    ("x[:s - t]", lambda s, t: (None, s - t, 1), True),
    ("x[-t:]", lambda s, t: (-t, None, 1), True),
    ("x[:-t]", lambda s, t: (None, -t, 1), True),
    ("x[-(t + 2):]", lambda s, t: (-(t + 2), None, 1), True),
    ("x[t - 2:s - 1]", lambda s, t: (t - 2, s - 1, 1), True),
    # a bound of known sign past the end is Python's min on the example's side (the
    # programming model's `x[:3]` needs x.shape[0] >= 3): a guard, sound
    ("x[2:-3]", lambda s, t: (2, -3, 1), False),
    ("x[1::2]", lambda s, t: (1, None, 2), False),
    ("x[t:]", lambda s, t: (t, None, 1), False),
    ("x[:t + 1]", lambda s, t: (None, t + 1, 1), False),
]


@pytest.mark.parametrize("name,bounds,free", SLICES, ids=[n for n, _, _ in SLICES])
def test_slices_clamp_as_eager_does(name, bounds, free):
    env, (s, t) = _symbols(2, [5, 3])
    start, end, step = bounds(s, t)
    x = TensorMeta((s, 4), torch.float32, torch.device("cpu"))
    out = _run(env, aten.slice.Tensor, x, 0, start, end, step)
    if free:
        assert not env.guards, [str(g.cond) for g in env.guards]
    checked = 0
    for n, m in itertools.product(SIZES, SIZES):
        binding = {s.expr.name: n, t.expr.name: m}
        if env.check_binding(binding):
            continue
        checked += 1
        eager = torch.empty(n, 4)[slice(*bounds(n, m))].shape[0]
        assert _value(out.shape[0], binding) == eager, (name, n, m)
    assert checked >= (64 if free else 20)


def test_narrow_with_a_start_of_unknown_sign_needs_only_eagers_own_checks():
    env, (s, t) = _symbols(2, [6, 4])
    x = TensorMeta((s,), torch.float32, torch.device("cpu"))
    out = _run(env, aten.narrow.default, x, 0, t - 5, 1)  # hint: start -1
    assert out.shape == (1,)
    for n, m in itertools.product(SIZES, SIZES):
        binding = {s.expr.name: n, t.expr.name: m}
        try:
            torch.empty(n).narrow(0, m - 5, 1)
            ok = True
        except (RuntimeError, IndexError):
            ok = False
        # the recorded guards admit exactly the sizes eager accepts
        assert (not env.check_binding(binding)) == ok, (n, m)


@pytest.mark.parametrize("k,stride,pad", [(3, 2, 1), (2, 2, 0), (3, 3, 1), (2, 1, 0), (4, 3, 2)])
def test_ceil_mode_pooling_needs_no_guard_on_the_last_window(k, stride, pad):
    env, (h,) = _symbols(1, [9])
    x = TensorMeta((1, 2, h, 5), torch.float32, torch.device("cpu"))
    out = _run(env, aten.max_pool2d.default, x, [k, k], [stride, stride], [pad, pad], [1, 1],
               True)
    for n in range(0, 24):
        binding = {h.expr.name: n}
        try:
            eager = F.max_pool2d(torch.randn(1, 2, n, 5), k, stride, pad, ceil_mode=True)
        except RuntimeError:
            assert env.check_binding(binding), n  # eager's own error is a guard
            continue
        assert not env.check_binding(binding), (n, [str(g.cond) for g in env.guards])
        assert _value(out.shape[2], binding) == eager.shape[2], n
