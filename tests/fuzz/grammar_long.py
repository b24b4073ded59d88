"""Statement kinds of the long fuzz run only (benchmarks/fuzz.py; the suite's short run keeps
grammar.KINDS, so its programs and time stay as they were).

They aim at the features where wrong results hide:
  raising     named-Dim sizes 0 / 1 where eager raises: ``assert``, ``torch._check``,
              ``if ...: raise`` in forward or in a helper, ops failing on empty dims, the raise
              caught by ``try`` / ``except`` in the same frame or a calling one
  vmapping    ``torch.vmap`` over a (static) batch: in_dims / out_dims, captured tensors,
              outputs that are views of inputs, writes after, writes / random ops / data
              reads inside (refused)
  picking     builtin ``max(a, b)`` / ``min(a, b)`` of one-element tensors, writes after them
  aliasing    in-place writes through views, slices and aliases followed by reads; ``.item()``
              after writes; overlapping writes eager refuses
  hops        ``torch.cond`` / ``while_loop`` with size predicates (shape-changing branches,
              nested, captured tensors)
  guards      size guards that would narrow a declared Dim (broadcasts of a size that may be
              1, reshapes needing divisibility, equality of two Dims, ``== 1`` branches)
  size_values a size used as a Python value: text made from it (``"%d" % n``, f-strings,
              ``",".join(map(str, shape))``, ``repr``) read or only a message, ``type(n)``,
              ``n.__class__``, int methods (``n | 1``, ``~n``, ``pow(n, 2, 5)``)
"""

from __future__ import annotations

import torch

from tests.fuzz.grammar import _size, _t

WL = "torch._higher_order_ops.while_loop"


def raising(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    s, n = _size(rng, env, a)
    d = rng.randrange(env[a].ndim)
    sd = f"{a}.shape[{d}]"
    h = f"_h{v}"
    return rng.choice([
        f"assert {s} > 0\n{v} = {a} * 2",
        f"assert {sd} >= 2, 'need two'\n{v} = {a}.narrow({d}, 1, 1)",
        f"torch._check({sd} > 1)\n{v} = {a}.amax({d})",
        f"if {sd} == 0:\n    raise ValueError('empty')\n{v} = {a}.amax({d})",
        f"if {s} < 2:\n    raise RuntimeError('short')\n{v} = {a}.flatten()[1:]",
        f"{v} = {a}.max({d}).values",
        f"{v} = {a}.select({d}, 0) + 1",
        f"{v} = {a}.select({d}, -1) * 2",
        f"{v} = {a}.flatten()[1] * {a}",
        f"{v} = {a}.min()",
        f"{v} = {a}.std({d})",
        # caught in the same frame: eager computes the except side at those sizes
        f"try:\n    {v} = {a}.amax({d})\nexcept (RuntimeError, IndexError):\n"
        f"    {v} = {a}.sum({d})",
        f"try:\n    {v} = {a}.select({d}, 1)\nexcept IndexError:\n    {v} = {a}.sum({d}) * 0",
        f"try:\n    assert {sd} > 1\n    {v} = {a} * 2\nexcept AssertionError:\n    {v} = {a} - 1",
        f"try:\n    torch._check({sd} != 1)\n    {v} = {a} + 1\nexcept RuntimeError:\n"
        f"    {v} = {a} * 3",
        # raised in a helper, caught (or not) by the caller
        f"def {h}(t):\n    if t.shape[{d}] < 2:\n        raise ValueError('short')\n"
        f"    return t.narrow({d}, 0, 2)\ntry:\n    {v} = {h}({a})\nexcept ValueError:\n"
        f"    {v} = {a} * 0",
        f"def {h}(t):\n    if t.shape[{d}] == 1:\n        raise ValueError('one')\n"
        f"    return t * 2\n{v} = {h}({a})",
        f"def {h}(t):\n    return t.amax({d})\ntry:\n    {v} = {h}({a})\nexcept RuntimeError:\n"
        f"    {v} = {a}.sum({d}) - 1",
        f"def {h}(t):\n    assert t.numel() > 1\n    return t.flatten()[:2]\n"
        f"with torch.no_grad():\n"
        f"    {v} = {h}({a})",
        # branches on those sizes, both sides computed
        f"if {sd} <= 1:\n    {v} = {a}.sum({d})\nelse:\n    {v} = {a}.amax({d})",
        f"{v} = {a}.amax({d}) if {sd} > 0 else {a}.sum({d})",
        f"if {s} == 0:\n    {v} = torch.zeros(1)\nelse:\n    {v} = {a}.flatten()[:1]",
    ])


def vmapping(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    b = _t(env, rng, 0, True)
    t = env[a]
    w = v + "a"
    d = rng.randrange(t.ndim)
    sub = t.ndim >= 2
    return rng.choice([
        f"{v} = torch.vmap(lambda r: r * 2 + r.sum())({a})",
        f"{v} = torch.vmap(lambda r: r.flip(0), in_dims={d})({a})" if sub
        else f"{v} = torch.vmap(lambda r: r * r)({a})",
        f"{v} = torch.vmap(lambda r: r.sum(), in_dims={d})({a})",
        f"{v} = torch.vmap(lambda r: r.cumsum(0), in_dims={d}, out_dims={d})({a})" if sub
        else f"{v} = torch.vmap(torch.exp)({a})",
        f"{v} = torch.vmap(lambda r, q: r * q.sum(), in_dims=(0, None))({a}, {b})",
        f"{v} = torch.vmap(lambda r: (r.amax(), r.amin()))({a})[1]" if sub
        else f"{v} = torch.vmap(lambda r: r.abs())({a})",
        f"{v} = torch.vmap(torch.vmap(lambda e: e + 1))({a})" if sub
        else f"{v} = torch.vmap(lambda r: r + {b}.sum())({a})",
        f"{v} = torch.vmap(lambda r: torch.cat([r, r]))({a})",
        f"{v} = torch.vmap(lambda r: r[:1])({a})" if sub
        else f"{v} = torch.vmap(lambda r: r.unsqueeze(0))({a})",
        f"{v} = torch.vmap(lambda r: r.shape[0] * r)({a})" if sub
        else f"{v} = torch.vmap(lambda r: r + 1)({a})",
        # outputs that are views of the batched input, then writes
        f"{v} = {a}.clone()\n{w} = torch.vmap(lambda r: r)({v})\n{v}.add_(1)",
        f"{v} = {a}.clone()\n{w} = torch.vmap(lambda r: r)({v})\n{w}.mul_(2)",
        f"{v} = {a}.clone()\n{w} = torch.vmap(lambda r: r[:1])({v})\n{v}.zero_()" if sub
        else f"{v} = {a}.clone()\n{w} = torch.vmap(lambda r: r * 1)({v})\n{v}.zero_()",
        f"{w} = torch.vmap(lambda r: r)({a})\n{v} = {w} + 1",
        # refused: a write, a random op, a data read inside
        f"{v} = {a}.clone()\n{w} = torch.vmap(lambda r: r.add_(1))({v})",
        f"{v} = torch.vmap(lambda r: r + torch.randn(()))({a})",   # eager raises
        f"{v} = torch.vmap(lambda r: r * r.sum().item())({a})",
    ])


def picking(rng, env, v):
    a, b = _t(env, rng, 0, True), _t(env, rng, 0, True)
    if a is None:
        return None
    one = [f"{a}.sum()", f"{a}.mean()", f"{a}.flatten()[:1]" if env[a].numel() else f"{a}.sum()",
           f"{a}.amax().reshape(1)" if env[a].numel() else f"{a}.sum().reshape(1)"]
    two = [f"{b}.sum()", f"{b}.abs().sum()", f"{b}.sum() * 0.5"]
    p, q = rng.choice(one), rng.choice(two)
    if (p.endswith("(1)") or p.endswith("[:1]")) and rng.random() < 0.7:
        q = f"({q}).reshape(1)"   # the same shape: eager's result is one of them either way
    f = rng.choice(["max", "min"])
    w = v + "a"
    return rng.choice([
        f"{v} = {f}({p}, {q})",
        f"{v} = {f}({p}, {q}) * 2",
        f"{v} = {f}({p}, 0.5) + {a}",
        f"{v} = {f}({p}, {q})\n{v}.add_(10)",
        f"{v} = {p}.clone()\n{w} = {f}({v}, {q})\n{v}.mul_(3)",
        f"{v} = {p}.clone()\n{w} = {f}({v}, {q}) + 0\n{v}.mul_(3)",
        f"{v} = {f}({p}, {q}, {p} * 2)",
        f"{v} = {f}([{p}, {q}])",
        f"{v} = torch.ones(int({f}({p}, {q}).abs().clamp(max=4).item()) + 1)",
    ])


def aliasing(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None or env[a].shape[0] == 0:
        return None
    w = v + "a"
    nd = env[a].ndim
    last = "0" if nd == 1 else "-1"
    return rng.choice([
        f"{v} = {a}.clone()\n{w} = {v}[1:]\n{v}.add_(1)\n{w} = {w} * 2",
        f"{v} = {a}.clone()\n{w} = {v}[::2]\n{w}.mul_(-1)\n{w} = {v}.sum(0) + {w}.sum(0)",
        f"{v} = {a}.clone()\n{v}.flatten()[:1] = 3.0\n"
        f"{w} = torch.ones(int({v}.flatten()[0].item()))",
        f"{v} = {a}.clone()\n{v}.zero_()\n{w} = {v} + {v}.sum().item()",
        f"{v} = {a}.clone()\n{w} = {v}.view(-1)\n{w}.add_(1)\n{w} = {w}.sum() + {v}.sum()",
        f"{v} = {a}.clone()\n{w} = {v}.transpose(0, -1)\n{w}[0] = {v}.sum()",
        f"{v} = {a}.clone()\n{w} = {v}\n{w} += 1\n{v} = {v} * 2",
        f"{v} = {a}.clone()\n{w} = {v}[:1]\n{v}.add_({w})",      # eager: partial overlap
        f"{v} = {a}.clone()\n{v}.add_({v}[0])",
        f"{v} = {a}.clone()\n{v}[1:] = {v}[:-1]",
        f"{v} = {a}.clone()\n{v}.copy_({v}.flip(0))",
        f"{v} = {a}.clone()\n{w} = {v}.narrow(0, {v}.shape[0] - 1, 1)\n{w}.fill_(2.0)\n"
        f"{w} = {v}[-1].sum()",
        f"{v} = {a}.clone()\n{w} = {v}.unbind(0)\n{w}[-1].mul_(0)\n{w} = torch.stack({w})",
        f"{v} = {a}.clone()\n{w} = {v}.chunk(2)[-1]\n{w}.sub_(1)\n{w} = {w}.clone()",
        f"{v} = {a}.clone()\n{w} = {v}.select({last}, 0)\n{w}.add_(4)\n{w} = {v}.amax()",
        f"{v} = {a}.clone()\n{w} = {v}.detach()\n{w}.mul_(2)\n{w} = {v}.sum().item() * {w}",
        f"{v} = {a}.clone()\ntorch.add({a}, 1, out={v})",
        f"{v} = {a}.clone()\n{v}.unsqueeze_(0)",
        f"{v} = {a}.clone()\n{v}.t_()" if nd <= 2 else f"{v} = {a}.clone()\n{v}.transpose_(0, 1)",
        f"{v} = {a}.clone()\n{w} = {v}.reshape(-1)\n{w}[0] = -1.0\n{w} = {v}.flatten()[:1]",
        f"{v} = {a}.clone()\n{w} = {v}.expand(2, *{v}.shape)\n{w} = {w}.sum(0)\n{v}.add_(1)",
        f"{v} = {a}.clone()\n{v}[{v}.argmax() % {v}.shape[0]] = 0.0",
        f"{v} = {a}.clone()\n{v}[{v}.shape[0] - 1:] *= 2",
    ])


def hops(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    s, n = _size(rng, env, a)
    b = _t(env, rng, 0, True)
    cond = rng.choice([f"{s} > {n}", f"{s} >= {n}", f"{s} > 1", f"{s} == 0", f"{s} % 2 == 1",
                       f"{s} == 1", f"{s} < {n + 1}"])
    i0 = f"torch.tensor(0)"
    return rng.choice([
        f"{v} = torch.cond({cond}, lambda t: t.sum(0, keepdim=True), lambda t: t[:1], ({a},))",
        f"{v} = torch.cond({cond}, lambda t: t + {b}.sum(), lambda t: t - 1, ({a},))",
        f"{v} = torch.cond({cond}, lambda t: t.amax(0), lambda t: t.sum(0), ({a},))",
        f"{v} = torch.cond({cond}, lambda t: torch.cond(t.shape[0] > 2, lambda u: u * 2, "
        f"lambda u: u * 3, (t,)), lambda t: t.flip(0), ({a},))",
        f"{v} = torch.cond({s} > 0, lambda t: t * 2, lambda t: torch.zeros_like(t), ({a},))",
        f"{v} = {WL}(lambda i, t: i < {s}, lambda i, t: (i + 1, t * 0.5), ({i0}, {a}))[1]",
        f"{v} = {WL}(lambda i, t: i < min({s}, 3), lambda i, t: (i + 1, t + i), ({i0}, {a}))[1]",
        f"_i{v}, {v} = {WL}(lambda i, t: i * 2 < {s}, lambda i, t: (i + 1, t.flip(0)), "
        f"({i0}, {a}))",
        f"{v} = {WL}(lambda i, t: i < 2, lambda i, t: (i + 1, torch.cond({cond}, lambda u: u + 1, "
        f"lambda u: u - 1, (t,))), ({i0}, {a}))[1]",
    ])


def guards(rng, env, v):
    a, b = _t(env, rng, 1), _t(env, rng, 1)
    if a is None:
        return None
    ta, tb = env[a], env[b]
    d = rng.randrange(ta.ndim)
    sd = f"{a}.shape[{d}]"
    forms = [
        f"if {sd} == 1:\n    {v} = {a}.squeeze({d})\nelse:\n    {v} = {a}.sum({d})",
        f"{v} = {a}.expand(*[max(n, 2) for n in {a}.shape]) if {sd} == 1 else {a} * 2",
        f"if {sd} != 1:\n    {v} = {a}.flip({d})\nelse:\n    {v} = {a} + 1",
        f"{v} = {a}.reshape(-1, 2) if {a}.numel() % 2 == 0 else {a}.reshape(-1, 1)",
        f"{v} = {a}.view({sd}, -1)" if d == 0 else f"{v} = {a}.flatten({d})",
        f"{v} = {a}.sum(0, keepdim=True) + {a}",
        f"{v} = {a}[:1] * {a}",
        f"{v} = torch.cat([{a}, {a}.amax(0, keepdim=True)]) if {sd} > 1 else {a}",
    ]
    if tb.ndim == ta.ndim and all(x == y or 1 in (x, y) for x, y in zip(ta.shape, tb.shape)):
        forms += [f"{v} = {a} + {b}", f"{v} = {a} * {b} - {b}", f"{v} = torch.maximum({a}, {b})",
                  f"{v} = {a} + {b}[:1]" if tb.shape[0] else f"{v} = {a} - {b}"]
    if ta.ndim == tb.ndim and ta.shape[0] == tb.shape[0]:
        forms += [f"{v} = torch.cat([{a}.flatten(1), {b}.flatten(1)], 1)" if ta.ndim >= 2
                  else f"{v} = {a} * {b}",
                  f"if {a}.shape[0] == {b}.shape[0]:\n    {v} = {a}.sum() + {b}\nelse:\n"
                  f"    {v} = {b} * 0"]
    return rng.choice(forms)


def size_values(rng, env, v):
    a = _t(env, rng, 1)
    if a is None:
        return None
    d = rng.randrange(env[a].ndim)
    n = f"{a}.shape[{d}]"
    return rng.choice([
        f"{v} = {a} * len('%d' % {n})",
        f"{v} = {a} * len('%s-%x' % ({n}, {n}))",
        f"{v} = {a} * len(f'n={{{n}}}')",
        f"{v} = {a} * len(','.join(map(str, {a}.shape)))",
        f"{v} = {a} * len(repr(tuple({a}.shape)))",
        f"{v} = {a} * len(str({n}))",
        f"{v} = {a} * {{'4': 2, '10': 5}}.get(f'{{{n}}}', 3)",
        f"{v} = {a} * (2 if ('%d' % {n}).startswith('1') else 3)",
        f"{v} = {a} * (2 if type({n}) is int else 3)",
        f"{v} = {a} * (2 if {n}.__class__ is int else 3)",
        f"{v} = {a} * (2 if isinstance({n}, torch.SymInt) else 3)",
        f"{v} = {a} * (2 if type({n} / 2) is float else 3)",
        f"{v} = {a} * ({n} | 1)",
        f"{v} = {a} * (~{n} + 2 * {n})",
        f"{v} = {a} * pow({n}, 2, 5)",
        f"{v} = {a} * float({n}).is_integer()",
        f"torch._assert({n} >= 0, f'rows {{{n}}} of {{{a}.shape}}')\n{v} = {a} * 2",
        f"torch._check({n} >= 0, lambda: 'rows %d' % {n})\n{v} = {a} + 1",
    ])


LONG_KINDS = {f.__name__: f for f in (raising, vmapping, picking, aliasing, hops, guards,
                                      size_values)}


def reference_while_loop(cond_fn, body_fn, carried_inputs):
    """Eager ``while_loop`` for the fuzzer's oracle: torch's compiles the loop with dynamo on
    every call (about 1 s each, most of a run's time); this one runs it in Python with the
    checks torch's makes of each round's outputs (same count, and each output the shape,
    dtype and strides of its carried input, see ``_strides``)."""
    carried = tuple(carried_inputs)
    while bool(cond_fn(*carried)):
        out = body_fn(*carried)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(out) != len(carried):
            raise RuntimeError("while_loop: body_fn returns another number of values")
        for a, b in zip(carried, out):
            if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor) or (
                    isinstance(a, torch.Tensor) and (a.shape != b.shape or a.dtype != b.dtype
                                                     or _strides(a) != _strides(b))):
                raise RuntimeError("while_loop: body_fn output and carried input differ "
                                   "in metadata")
        carried = out
    return carried


def _strides(t):
    """The strides torch's check tells apart (it compares them symbolically: those of dims
    of size 0 or 1, or of an empty tensor, do not matter)."""
    return () if t.numel() == 0 else tuple(s for n, s in zip(t.shape, t.stride()) if n > 1)
