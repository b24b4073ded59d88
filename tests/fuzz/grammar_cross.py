"""Statement kinds of the long fuzz run (benchmarks/fuzz.py) for sizes that cross inputs and
for integer arithmetic on sizes, which the other grammars write little (session 29):

  crossview   ops on one input taking sizes from another: ``x.view(y.shape[0], -1)``,
              ``reshape`` / ``unflatten`` with a size of another input, ``expand_as`` /
              ``expand`` / ``repeat`` / ``tile`` / ``repeat_interleave`` by sizes,
              ``narrow`` with a computed start and length, slices bounded by another
              input's size, factories of another input's shape, ``F.pad`` to a size
  sizearith   integer arithmetic on sizes of several inputs (``//``, ``%``, ``divmod``,
              ``min`` / ``max``, ``abs``, ``math.ceil`` / ``floor`` / ``prod`` / ``gcd``,
              ``sum(x.shape)``, shifts), used as slice bounds, factory sizes and values
  masks       masks from sizes and from other inputs, broadcast: length masks
              (``arange(n)[None] < lengths[:, None]``), causal masks from ``triu``,
              ``masked_fill`` / ``where`` with broadcasting masks and 0-d / Python values,
              ``-inf`` fills before ``softmax``
  sizeloops   Python loops over sizes: ``range`` of a size (capped or stepped), list
              comprehensions stacked or summed, ``while`` on a halving size, ``enumerate``
              of the first rows
  empties     empty tensors on purpose: ``x[:0]``, ``new_zeros(0, n)``, ``cat`` with an
              empty piece, reductions over empty dims (in ``try`` where eager raises),
              ``narrow`` to length 0, matmul over an empty inner dim
  condsize    ``torch.cond`` on predicates over two inputs' sizes, with both inputs as
              operands; branches returning sizes-dependent shapes refused as eager's do not
  crosspieces pieces and slices of one input sized by another's size, counted or broadcast
              against it (``len(x.split(y.shape[0], 1))``, ``a[:n] + b[:m]``, strided
              slices whose length a branch compares to another input's)
  inputwrites writes of the inputs themselves (the engine compares them after each call):
              in-place ops, slice and view assignments, ``t_()``, ``x.data = v`` on an
              input (refused: the caller's tensor would share new memory) and on a clone
"""

from __future__ import annotations

import torch

from tests.fuzz.grammar import _t


def _two(rng, env, floating=True):
    """Two tensor names (maybe the same) of at least one dim: (a, b)."""
    a = _t(env, rng, 1, floating)
    b = _t(env, rng, 1)
    return (a, b) if a is not None and b is not None else (None, None)


def _bsize(rng, env, b):
    """A size of `b` as source and its example value."""
    t = env[b]
    d = rng.randrange(t.ndim)
    form = rng.choice([f"{b}.shape[{d}]", f"{b}.size({d})", f"len({b})", f"{b}.shape[-1]"])
    return form, (t.shape[0] if form.startswith("len") else
                  t.shape[-1] if form.endswith("[-1]") else t.shape[d])


def crossview(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    t = env[a]
    d = rng.randrange(t.ndim)
    s, n = _bsize(rng, env, b)
    ad = f"{a}.shape[{d}]"
    ones = ", ".join(["1"] * (t.ndim - 1))
    forms = [
        f"{v} = {a}.reshape({s}, -1)", f"{v} = {a}.contiguous().view({s}, -1)",
        f"{v} = {a}.reshape(-1, {s})", f"{v} = {a}.flatten().view(-1, max({s}, 1))",
        f"{v} = {a}.unflatten({d}, ({s}, -1))", f"{v} = {a}.unflatten({d}, (-1, {s}))",
        f"{v} = {a}.expand_as({b})", f"{v} = {a}.expand({s}, *{a}.shape)",
        f"{v} = {a}[None].expand({b}.shape[0], *[-1] * {a}.ndim)",
        f"{v} = {a}.repeat({s} // 2 + 1{', ' + ones if ones else ''})",
        f"{v} = {a}.repeat({s} % 3{', ' + ones if ones else ''})",
        f"{v} = {a}.tile(({s} % 2 + 1,))",
        f"{v} = {a}.repeat_interleave({s} % 3 + 1, {d})",
        f"{v} = {a}.narrow({d}, min({s} // 3, {ad}), min({ad} - min({s} // 3, {ad}), 2))",
        f"{v} = {a}.narrow({d}, {ad} // 2, {ad} - {ad} // 2)",
        f"{v} = {a}.narrow({d}, 0, min({s}, {ad}))",
        f"{v} = {a}[:{s}]", f"{v} = {a}[{s} // 2:{ad} - 1]", f"{v} = {a}[-{s}:]",
        f"{v} = {a}[..., :max({ad} - {s}, 0)]", f"{v} = {a}[::{s} % 3 + 1]",
        f"{v} = {a}.new_zeros({b}.shape) + {a}.sum()", f"{v} = torch.zeros({s}, {a}.shape[-1])",
        f"{v} = torch.empty_like({b}, dtype=torch.float32).fill_(1.0) * {a}.mean()",
        f"{v} = {a}.new_ones({s}, {ad}).cumsum(0)",
        f"{v} = torch.nn.functional.pad({a}, (0, max({s} - {a}.shape[-1], 0)))",
        f"{v} = torch.cat([{a}.flatten(), {b}.flatten().float()])[:{s} + {ad}]",
        f"{v} = {a}.view_as({b}) if {a}.numel() == {b}.numel() else {a}.flatten()",
        f"{v} = {a}.reshape({b}.shape) if {a}.shape == {b}.shape else {a} * 2",
        f"{v} = {a}.flatten()[:{b}.numel()].reshape(-1, 1)",
        f"{v} = torch.arange({s} * {ad}).reshape({s}, {ad}).float()",
        # a view whose fit to the strides depends on the sizes, eager's error caught
        f"try:\n    {v} = {a}.mT.view(-1)\nexcept RuntimeError:\n    {v} = {a}.mT.reshape(-1) * 2"
        if t.ndim >= 2 else f"{v} = {a}.view(-1)",
        f"{v} = {a}.clone()\n{v}.t_()\ntry:\n    {v} = {v}.view({s}, -1)\nexcept RuntimeError:"
        f"\n    {v} = {v} * 3" if t.ndim == 2 else f"{v} = {a}.view(-1, 1)",
    ]
    return rng.choice(forms)


def sizearith(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    n, _ = _bsize(rng, env, a)
    m, _ = _bsize(rng, env, b)
    e = rng.choice([
        f"({n} + {m}) // 2", f"{n} % max({m}, 1)", f"divmod({n}, 3)[0] + divmod({m}, 2)[1]",
        f"min({n}, {m})", f"max({n}, {m}) - min({n}, {m})", f"abs({n} - {m})",
        f"math.ceil({n} / 3)", f"math.floor({n} / 2)", f"math.ceil({n} / max({m}, 1))",
        f"math.prod({a}.shape)", f"sum({a}.shape)", f"{n} << 1", f"{n} >> 1",
        f"math.gcd({n}, 4)", f"({n} * {m}) // max({n}, 1)", f"-(-{n} // 4) * 4 - {n}",
        f"{n} // 2 * 2", f"min({n}, 2 * {m} + 1)", f"max(0, {n} - {m}) % 4",
        f"int(math.sqrt({n}))", f"{n} if {n} > {m} else {m}", f"({n} > {m}) + ({n} >= {m})",
        f"len(range(0, {n}, 2))", f"{n} // 3 + {n} % 3", f"math.floor({n} * 0.5 + 0.5)",
    ])
    use = rng.choice([
        f"{v} = torch.ones({e})", f"{v} = torch.arange({e}).float()",
        f"{v} = {a}.flatten()[:{e}]", f"{v} = {a}[{e} % max({a}.shape[0], 1):]",
        f"{v} = {a} * ({e})", f"{v} = torch.full((2,), {e}, dtype=torch.long)",
        f"{v} = {a}.sum() + torch.tensor({e})",
    ])
    return use


def masks(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    t = env[a]
    L = f"{a}.shape[-1]"
    s, _ = _bsize(rng, env, b)
    bb = b
    try:
        torch.broadcast_shapes(t.shape, env[b].shape)
    except RuntimeError:
        bb = f"{b}.sum()"
    lengths = f"(torch.arange({a}.shape[0]) % max({L}, 1))"
    forms = [
        f"{v} = {a}.masked_fill(torch.arange({L}) >= {s}, 0.0)",
        f"{v} = {a}.masked_fill(torch.arange({L}) < {s} // 2, -1.5)",
        f"{v} = {a}.masked_fill({bb} > 0, 2.0)", f"{v} = {a}.masked_fill({bb} > 0, {a}.mean())",
        f"{v} = torch.where({bb} > 0, {a}, {bb})", f"{v} = torch.where({bb} > 0, {a}, 0.5)",
        f"{v} = torch.where(torch.arange({L}) < {s}, {a}, -{a})",
        f"{v} = {a}.masked_fill(torch.arange({L}) >= {s}, float('-inf')).softmax(-1)",
        f"{v} = {a}.masked_fill(torch.ones({L}, {L}, dtype=torch.bool).triu(1), 0.0)"
        if t.ndim >= 2 and t.shape[-2] == t.shape[-1] else f"{v} = {a} * 1",
        f"{v} = {a}.masked_fill(torch.ones({a}.shape[-2], {L}, dtype=torch.bool).tril(-1), "
        f"3.0)" if t.ndim >= 2 else f"{v} = {a}.masked_fill({a} != {a}, 0.0)",
        f"{v} = {a} * (torch.arange({L})[None, :] < {lengths}[:, None])" if t.ndim == 2
        else f"{v} = {a} * (torch.arange({L}) < {s})",
        f"{v} = {a}.masked_fill({a} > {a}.mean(), torch.tensor(0.25))",
        f"{v} = torch.where({a} > 0, {a}.sum(), {a}.new_zeros(()))",
        f"{v} = {a}.clone()\n{v}.masked_fill_(torch.arange({L}) % 2 == 0, 7.0)",
        f"{v} = torch.where(({bb} > 0) & ({a} < 0), 1, 0)",
        f"{v} = {a}.masked_select(torch.arange({L}) < {s})",
    ]
    return rng.choice(forms)


def sizeloops(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    n = f"{a}.shape[0]"
    s, _ = _bsize(rng, env, b)
    forms = [
        f"{v} = {a}.new_zeros(())\nfor _i in range(min({n}, 3)):\n    {v} = {v} + {a}[_i].sum()",
        f"{v} = torch.stack([{a}[_i].sum() for _i in range(0, {n}, max({s}, 1))]) if {n} "
        f"else {a}.sum()[None]",
        f"{v} = sum([{a}[_i] for _i in range(min({n}, 2))], {a}[0] * 0) if {n} else {a}.sum()",
        f"_k = {n}\n{v} = {a}.sum()\nwhile _k > 1:\n    _k = _k // 2\n    {v} = {v} * 0.5",
        f"{v} = {a}.clone()\nfor _j, _r in enumerate({a}[:2]):\n    {v} = {v} + _r * _j",
        f"{v} = torch.cat([{a}[_i:_i + 1] * _i for _i in range(min({n}, {s}, 3))] + "
        f"[{a}[:0]])",
        f"{v} = {a}.flatten()\nfor _ in range({s} % 3):\n    {v} = torch.cat([{v}, {v}[:1]])",
        f"{v} = [{a}.sum(_d) for _d in range({a}.ndim)][-1]",
    ]
    return rng.choice(forms)


def empties(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    L = f"{a}.shape[-1]"
    forms = [
        f"{v} = {a}[:0]", f"{v} = torch.cat([{a}[:0], {a}])", f"{v} = {a}.new_zeros(0, {L})",
        f"{v} = {a}[:0].sum(0)", f"{v} = {a}.new_zeros(0, {L}).sum(0) + {a}.sum()",
        f"{v} = {a}.narrow(0, {a}.shape[0], 0)", f"{v} = {a}[:0].mean()",
        f"try:\n    {v} = {a}[:0].amax(0)\nexcept (RuntimeError, IndexError):\n    {v} = {a}.sum()",
        f"try:\n    {v} = {a}.amax(0)\nexcept (RuntimeError, IndexError):\n    {v} = {a}.new_ones(1)",
        f"{v} = torch.zeros(2, 0) @ torch.zeros(0, {L})",
        f"{v} = {a}.flatten()[:0]",
        f"{v} = torch.stack([{a}[:0], {a}[:0]])", f"{v} = {a}[:0].cumsum(0)",
        f"{v} = {a}[{a}.shape[0]:].softmax(0)", f"{v} = {a}[:0].argsort(0)",
        f"{v} = {a}.new_empty(0).sum() + {a}.new_zeros(()).prod()",
        f"{v} = torch.cat([{a}, {a}.new_zeros((0,) + tuple({a}.shape[1:]))])",
    ]
    if t.ndim >= 2:
        forms.append(f"{v} = {a}[:, :0] @ {a}[:, :0].mT")
    return rng.choice(forms)


def condsize(rng, env, v):
    a, b = _two(rng, env, True)
    if a is None or not env[b].is_floating_point():
        return None
    n, m = f"{a}.shape[0]", f"{b}.shape[0]"
    pred = rng.choice([f"{n} > {m}", f"{n} == {m}", f"({n} + {m}) % 2 == 0",
                       f"{a}.numel() >= {b}.numel()", f"{n} * 2 > {m} + 1"])
    sides = rng.choice([
        ("lambda t, u: t.sum() + u.sum()", "lambda t, u: t.mean() - u.sum()"),
        ("lambda t, u: t * u.sum()", "lambda t, u: t - u.mean()"),
        ("lambda t, u: (t.sum(0), u.sum())", "lambda t, u: (t.amax(0) if t.shape[0] else "
         "t.sum(0), u.sum() * 2)"),
    ])
    return f"{v} = torch.cond({pred}, {sides[0]}, {sides[1]}, ({a}, {b}))" + \
        ("[0]" if sides[0].endswith(")") and "(t.sum(0)" in sides[0] else "")


def inputwrites(rng, env, v):
    names = [n for n, t in env.items() if n in "xyz" and isinstance(t, torch.Tensor) and
             t.is_floating_point() and t.ndim >= 1]
    if not names:
        return None
    a = rng.choice(names)
    s = f"{a}.shape[0]"
    return rng.choice([
        f"{a}.add_(1)\n{v} = {a} * 2", f"{a}[:1] = 0.5\n{v} = {a}.sum(0)",
        f"{a}.view(-1)[:{s} // 2] = -1.0\n{v} = {a}.clone()",
        f"{a}.mul_({s})\n{v} = {a}[:1]", f"{a}.clamp_(max=0.1)\n{v} = {a}.sum()",
        f"{a}.data = {a} * 2\n{v} = {a} + 1", f"{v} = {a}.clone()\n{v}.data = {a} * 3",
        f"{a}.t_()\n{v} = {a} + 1" if env[a].ndim <= 2 else f"{a}.neg_()\n{v} = {a}",
        f"{a}.copy_({a}.flip(0))\n{v} = {a}.cumsum(0)",
        f"{v} = {a}[0] if {s} else {a}\n{a}.mul_(2)",
    ])


def crosspieces(rng, env, v):
    """Pieces and slices of one input sized by another's size, then broadcast or counted
    (session 36: a split's point side where eager raises at the other Dims' examples,
    ``x.split(x.shape[0], 1)`` at 0; a slice bounded by a size against that size; strided
    slices whose length a branch compares)."""
    a, b = _two(rng, env)
    if a is None:
        return None
    t = env[a]
    d = rng.randrange(t.ndim)
    s, _ = _bsize(rng, env, b)
    ad = f"{a}.shape[{d}]"
    return rng.choice([
        f"{v} = torch.full((len({a}.split({s}, {d})),), 1.0) + {a}.sum()",
        f"{v} = torch.full((len({a}.split(max({s}, 1), {d})),), 2.0)",
        f"{v} = torch.ones(len({a}.tensor_split(max({s}, 1), {d})))",
        f"{v} = {a}.flatten()[:{s}] + {b}.flatten()[:{a}.shape[0]].float()",
        f"{v} = ({a}.flatten()[:{s}] > 0) == ({b}.flatten()[:{ad}] > 0)",
        f"{v} = {a}.flatten()[:{s}] * {b}.flatten()[:1].float()",
        f"{v} = {a}.narrow({d}, 0, min({s}, {ad})) + "
        f"{a}.narrow({d}, {ad} - min({s}, {ad}), min({s}, {ad}))",
        f"{v} = {a}[:max({a}.shape[0] - {s}, 0)] + {a}[{s}:]",
        f"{v} = {a}[::max({s} // 2, 1)]\n{v} = {v} * 2 if len({v}) == len({b}) else {v} - 1",
        f"{v} = {a}[:{s}] + {a}[:{s}].flip(0)",
        f"{v} = {a}.movedim({d}, 0)[:{s}] + {a}.movedim({d}, 0)[:{s}].cumsum(0)",
        f"{v} = {a}.expand(*[max(n, 2) for n in {a}.shape]) if {s} == 1 else {a} * 2",
    ])


CROSS_KINDS = {f.__name__: f for f in (crossview, sizearith, masks, sizeloops, empties,
                                       condsize, inputwrites, crosspieces)}
