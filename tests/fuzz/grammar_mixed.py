"""Statement kinds of the long fuzz run (benchmarks/fuzz.py ``--kinds mixed``) for what
outside fuzzers and real models write with sizes mixed into data, which the other grammars
drew little (session 32):

  padmultiple  pad a dim to a multiple of k with pads from sizes (``(k - n % k) % k``), then
               views with ``//`` of the padded size (window partition), ``unflatten`` and
               the crop back (``[..., :n]``); ``F.pad`` with pads from another input's size
  sizeindex    ``index_select`` / ``gather`` / ``scatter`` / ``index_add`` with indices
               computed from sizes (``(arange(n) * 3 + 1) % n``, ``arange(n - 1, -1, -1)``,
               ``arange(0, n, 2)``), ``narrow`` / ``select`` with size-derived arguments,
               ``roll`` / ``flip`` / ``cumsum`` on dynamic dims, ``topk`` / ``sort`` with k
               from sizes, ``repeat_interleave`` by counts from sizes
  bcast        ``where`` / ``masked_fill`` / ``expand`` / ``expand_as`` / ``broadcast_to``
               between inputs and their size-1 slices (``a[:, :1]``, ``a.sum(d, True)``),
               ``expand`` to a size of another input, ``-1`` in expand
  unbindstack  ``unbind`` / ``stack`` / ``cat`` of the pieces back, pieces as outputs (two
               names), outputs that alias an input or each other (``a[0]``, ``a.view(-1)``,
               ``a.t()``), ``einsum`` over dims of two inputs, ``split`` by a size list
  inviews      in-place ops on views of clones and of the inputs themselves, the base read
               after: ``unsqueeze_`` / ``squeeze_`` / ``t_`` of clones, ``add_`` on
               ``select`` / ``narrow`` / ``diagonal`` / ``unfold`` windows of size-derived
               bounds, ``copy_`` with broadcasting, ``clamp_`` / ``masked_fill_`` on views
  mixdtype     int / bool / half / bfloat16 / double tensors mixed with each other and with
               sizes (``x.long() * n``, ``(x > 0) + n``, ``x.half() / n``), ``//`` and
               ``%`` on int tensors by sizes, comparisons of int tensors with sizes, 0- and
               1-size dims from ``[:0]`` / ``[:1]`` slices through all of them

Each is deterministic per seed (the rng the engine hands it).
"""

from __future__ import annotations

from tests.fuzz.grammar import _t
from tests.fuzz.grammar_cross import _bsize, _two


def padmultiple(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    t = env[a]
    k = rng.choice([2, 3, 4])
    L = f"{a}.shape[-1]"
    m, _ = _bsize(rng, env, b)
    pad = f"({k} - {L} % {k}) % {k}"
    p = f"_p{v}"
    head = f"{p} = F.pad({a}, (0, {pad}))\n"
    forms = [
        head + f"{v} = {p}.view(*{p}.shape[:-1], -1, {k}).sum(-1)",
        head + f"{v} = {p}.reshape(*{a}.shape[:-1], {p}.shape[-1] // {k}, {k}).flip(-1)"
        f".flatten(-2)[..., :{L}]",
        head + f"{v} = {p}.unflatten(-1, (-1, {k})).transpose(-1, -2).reshape({p}.shape)",
        f"{v} = F.pad({a}, ({pad}, 0), value=float({L}))",
        f"{v} = F.pad({a}, (0, max({m} - {L}, 0)))[..., :{m}]",
        f"{v} = F.pad({a}, ({L} // 2, {L} - {L} // 2))",
        f"{v} = F.pad({a}, (-({L} // 2), 0))",
        f"{v} = F.pad({a}, (0, {m} % 3, 0, {k} - 1))" if t.ndim >= 2 else
        f"{v} = F.pad({a}, (0, {m} % 3))",
        head + f"{v} = {p}[..., ::{k}] + {p}[..., {k} - 1::{k}]",
        f"{v} = {a}.flatten()[:{a}.numel() // {k} * {k}].view(-1, {k}).mean(0)",
        f"{v} = {a}.flatten()[:{a}.numel() // {k} * {k}].view({a}.numel() // {k}, {k})",
        f"{v} = {a}[..., :{L} - {L} % {k}].unflatten(-1, ({L} // {k}, {k}))",
        f"{v} = {a}.reshape(-1, {L})[:, :{L} // {k} * {k}].reshape(-1, {k})",
    ]
    return rng.choice(forms)


def sizeindex(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    t = env[a]
    d = rng.randrange(t.ndim)
    n = f"{a}.shape[{d}]"
    m, _ = _bsize(rng, env, b)
    lead = ":, " * d
    idx = rng.choice([f"(torch.arange({n}) * 3 + 1) % max({n}, 1)",
                      f"torch.arange({n} - 1, -1, -1)", f"torch.arange(0, {n}, 2)",
                      f"torch.arange({n}).flip(0)", f"torch.arange({n}) // 2",
                      f"torch.arange(min({n}, {m}))", f"torch.zeros({m}, dtype=torch.long)"
                      f" if {n} else torch.zeros(0, dtype=torch.long)"])
    w = v + "a"
    shape_idx = f"[{n} if i == {d} else 1 for i in range({a}.ndim)]"
    forms = [
        f"{v} = {a}.index_select({d}, {idx})",
        f"{v} = torch.index_select({a}, {d}, {idx}) * 2",
        f"_i = (torch.arange({n}) + {m}) % max({n}, 1)\n"
        f"{v} = {a}.gather({d}, _i.reshape({shape_idx}).expand_as({a}))",
        f"_i = torch.arange({n}).flip(0)\n"
        f"{v} = torch.zeros_like({a}).scatter({d}, _i.reshape({shape_idx}).expand_as({a}), {a})",
        f"{v} = torch.zeros_like({a}).index_add({d}, torch.arange({n}) // 2, {a})",
        f"{v} = {a}.index_copy({d}, torch.arange({n}).flip(0), {a} + 1)",
        f"{v} = {a}.narrow({d}, {n} // 3, {n} - {n} // 3)",
        f"{v} = {a}.narrow({d}, min({m}, {n}), {n} - min({m}, {n}))",
        f"{v} = {a}.narrow({d}, -{n}, {n})" if t.shape[d] else f"{v} = {a}.narrow({d}, 0, 0)",
        f"{v} = {a}.select({d}, {n} // 2)" if t.shape[d] else f"{v} = {a}[{lead}:0]",
        f"{v} = {a}.select({d}, -1) + {a}.select({d}, 0)" if t.shape[d] else f"{v} = {a} * 1",
        f"{v} = {a}[{lead}{n} // 2]" if t.shape[d] else f"{v} = {a} - 1",
        f"{v} = {a}.roll(-{n} // 3, {d})", f"{v} = {a}.roll({m}, {d})",
        f"{v} = {a}.roll(({n} // 2, 1), ({d}, -1))",
        f"{v} = {a}.flip({d}, -1)", f"{v} = {a}.flip(0).cumsum({d})",
        f"{v} = {a}.cumsum({d}) / ({n} + 1)", f"{v} = {a}.cumsum(-1)[..., -1:]",
        f"{v} = {a}.cumsum({d}).narrow({d}, 0, min({n}, 2))",
        f"{v}, {w} = {a}.topk({n} // 2, {d})", f"{v} = {a}.topk(min({n}, {m}), {d}).values",
        f"{v} = {a}.topk(max({n} - 1, 0), {d}, largest=False).indices.float()",
        f"{v}, {w} = {a}.sort({d})", f"{v} = {a}.sort({d}).values[{lead}:{n} // 2]",
        f"{v} = {a}.argsort({d})[{lead}:min({m}, {n})]",
        f"{v} = {a}.repeat_interleave({m} % 3, {d})",
        f"{v} = {a}.repeat_interleave(torch.full(({n},), {m} % 2 + 1), {d})",
        f"{v} = {a}.repeat_interleave((torch.arange({n}) % 2) * 2, dim={d})",
        f"{v} = torch.repeat_interleave(torch.arange({n}), {m} % 3 + 1)",
        f"{v} = {a}.unfold({d}, min({n}, 2), max({n} // 2, 1))",
        f"{v} = {a}.unfold({d}, {n} // 2, {n} // 2 + 1)",
        f"{v} = {a}.unfold(-1, 1, 1).squeeze(-1)",
    ]
    return rng.choice(forms)


def bcast(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    t = env[a]
    d = rng.randrange(t.ndim)
    n = f"{a}.shape[{d}]"
    m, _ = _bsize(rng, env, b)
    lead = ":, " * d
    one = f"{a}[{lead}:1]"
    red = f"{a}.sum({d}, keepdim=True)"
    forms = [
        f"{v} = torch.where({one} > 0, {a}, {red})",
        f"{v} = torch.where({a} > {red}, {one}, 0.0)",
        f"{v} = torch.where({a}.amax({d}, keepdim=True) > 0, {a}, -{a})",
        f"{v} = {a}.masked_fill({one} > 0, {n})",
        f"{v} = {a}.masked_fill({red} < 0, float('-inf')).softmax({d})",
        f"{v} = {one}.expand_as({a}) * {a}",
        f"{v} = {one}.expand({a}.shape) + {red}",
        f"{v} = {red}.expand(*{a}.shape[:{d}], {n}, *{a}.shape[{d} + 1:])",
        f"{v} = {a}.unsqueeze(0).expand({m}, *{a}.shape)",
        f"{v} = {a}.unsqueeze(0).expand({m}, *([-1] * {a}.ndim)).sum(0)",
        f"{v} = {a}[None].expand(2, *{a}.shape).reshape(-1, *{a}.shape[1:])",
        f"{v} = torch.broadcast_to({one}, {a}.shape) - {a}",
        f"{v} = {a}.expand_as({a}) + {a}.sum()",
        f"{v} = torch.where({a} > 0, {a}, {b}.sum())",
        f"{v} = torch.where(torch.arange({n}).reshape([-1] + [1] * ({a}.ndim - {d} - 1)) < "
        f"{m}, {a}, 0.0)",
        f"{v} = {a} * (torch.arange({n}) < {n} // 2).reshape([-1] + [1] * ({a}.ndim - {d} - 1))",
        f"{v} = torch.maximum({a}, {one})",
        f"{v} = {a} + {b}.flatten()[:1]",
        f"{v} = {a} + {b}.flatten()[:1].reshape([1] * {a}.ndim)",
        f"{v} = {a} - {a}.mean(-1, keepdim=True).expand_as({a})",
    ]
    return rng.choice(forms)


def unbindstack(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    t = env[a]
    d = rng.randrange(t.ndim)
    n = f"{a}.shape[{d}]"
    w = v + "a"
    lead = ":, " * d
    forms = [
        f"{v} = torch.stack({a}.unbind({d}), -1)",
        f"{v} = torch.stack({a}.unbind({d}), {d}) - {a}",
        f"{v} = torch.stack([p * 2 for p in {a}.unbind(0)]) if len({a}) else {a}",
        f"{v} = torch.cat({a}.unbind({d}), 0)" if t.ndim >= 2 else f"{v} = {a}.view(-1)",
        f"{v} = torch.stack([{a}, {a} * 2], {d}).flatten({d}, {d} + 1)",
        f"{v}, {w} = {a}[{lead}:{n} // 2], {a}[{lead}{n} // 2:]",
        f"{v}, {w} = {a}.split([{n} // 2, {n} - {n} // 2], {d})",
        f"{v}, {w} = {a}.tensor_split(2, {d})",
        f"{v}, {w} = {a}.chunk(2, {d}) if {n} >= 2 else ({a}, {a})",
        f"{v} = {a}.view(-1)", f"{v} = {a}.t()" if t.ndim <= 2 else f"{v} = {a}.mT",
        f"{v} = {a}[0]" if t.shape[0] else f"{v} = {a}[:0]",
        f"{v} = {a}", f"{v}, {w} = {a}, {a}", f"{v}, {w} = {a}.view_as({a}), {a}.detach()",
        f"{v} = {a}.unsqueeze(-1)", f"{v} = {a}.expand(2, *{a}.shape)",
        f"{v} = torch.einsum('...i,...j->...ij', {a}, {a}[..., :2])",
        f"{v} = torch.einsum('i...,i...->...', {a}, {a})",
        f"{v} = torch.einsum('...i->i', {a})",
        f"{v} = torch.einsum('i,j->ij', {a}.flatten()[:4], {b}.flatten()[:3])",
        f"{v} = torch.einsum('ij,j->i', {a}.reshape(-1, {a}.shape[-1]), {a}.flatten()"
        f"[:{a}.shape[-1]])" if t.numel() >= t.shape[-1] else f"{v} = {a}.sum(-1)",
        f"{v} = torch.stack([{a}.sum(), {b}.sum().float(), torch.tensor(float({n}))])",
        f"{v} = torch.stack([torch.tensor({n}), torch.tensor({b}.shape[0])])",
    ]
    return rng.choice(forms)


def inviews(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    t = env[a]
    d = rng.randrange(t.ndim)
    n = f"{a}.shape[{d}]"
    m, _ = _bsize(rng, env, b)
    lead = ":, " * d
    c = f"{v} = {a}.clone()\n"
    forms = [
        c + f"{v}.unsqueeze_(0)", c + f"{v}.squeeze_()", c + f"{v}.unsqueeze_(-1).squeeze_(-1)",
        c + f"{v}.t_()" if t.ndim <= 2 else c + f"{v}.transpose_(0, -1)",
        c + f"{v}.select({d}, {n} // 2).add_(1)" if t.shape[d] else c + f"{v}.add_(1)",
        c + f"{v}.narrow({d}, {n} // 2, {n} - {n} // 2).mul_(-1)",
        c + f"{v}[{lead}{n} // 3:].sub_({v}[{lead}:{n} - {n} // 3])",
        c + f"{v}[{lead}::2].copy_({v}[{lead}::2].flip({d}))",
        c + f"{v}[{lead}:min({m}, {n})].clamp_(-0.5, 0.5)",
        c + f"{v}[{lead}:1] = {v}.sum({d}, keepdim=True)",
        c + f"{v}[..., -1:].masked_fill_({v}[..., -1:] > 0, {m})",
        c + f"{v}.flatten()[:{m}].mul_(2)" if t.is_contiguous() else c + f"{v}.mul_(2)",
        c + f"{v}.view(-1)[::max({m}, 1)].fill_(3.0)",
        c + f"{v}.unfold({d}, 1, 2).mul_(0)",
        c + f"{v}.diagonal(0, 0, -1).add_(5)" if t.ndim >= 2 else c + f"{v}[::2].add_(5)",
        c + f"{v}.copy_({v}[{lead}:1])" if t.shape[d] else c + f"{v}.zero_()",
        c + f"{v} += {v}.mean({d}, keepdim=True)",
        c + f"{v}.mul_({v}.shape[{d}])", c + f"{v}.div_(max({n}, 1))",
        c + f"{v}.add_({n} - {m})",
        # the input itself (the engine compares it after each call)
        f"{a}.narrow({d}, 0, {n} // 2).mul_(2)\n{v} = {a} + 0",
        f"{a}[{lead}{n} // 2:].zero_()\n{v} = {a}.sum({d})",
        f"{a}.add_({n})\n{v} = {a}.clone()",
        f"{a}.clamp_(max=float({m}))\n{v} = {a} * 1",
        f"{v} = {a}.view_as({a})\n{v}.mul_(0.5)",
        f"{v} = {a}[{lead}::2]\n{v}.add_(1)",
    ]
    return rng.choice(forms)


def mixdtype(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    d = rng.randrange(t.ndim)
    n = f"{a}.shape[{d}]"
    lead = ":, " * d
    x = rng.choice([a, f"{a}[{lead}:1]", f"{a}[{lead}:0]"])
    i = f"({x} * 10).long()"
    forms = [
        f"{i} * {n}", f"{i} // max({n}, 1)", f"{i} % max({n}, 1)", f"{i} // -max({n}, 1)",
        f"{i} % -max({n}, 1)", f"({x} > 0) + {n}", f"({x} > 0) * {n} - {x}",
        f"{x}.half() / max({n}, 1)", f"{x}.half() + {i}", f"{x}.bfloat16() * {x}.half()",
        f"{x}.double() + {i}.int()", f"({x} > 0).int() + ({x} < 0).to(torch.int8)",
        f"{i} == {n}", f"{i} < {n} // 2", f"{i}.int() >= torch.tensor({n})",
        f"{i}.to(torch.uint8) + {n}", f"{i}.to(torch.int16) * {n} * 1000",
        f"torch.div({i}, {n} + 1, rounding_mode='floor')", f"{i}.float() / ({n} + 1)",
        f"torch.true_divide({i}, {n} + 2)", f"{i} / torch.tensor({n} + 1)",
        f"torch.where({x} > 0, {i}, {n})", f"torch.where({x} > 0, {x}.half(), {n})",
        f"{x}.sum({d}) + {i}.sum({d})", f"({x} > 0).sum({d}) * {x}.mean({d})",
        f"({x} > 0).cumsum({d}) % 2", f"{i}.bitwise_and({n})", f"{i} << ({n} % 4)",
        f"{x}.to(torch.float64).sum() + {n}", f"torch.full_like({x}, {n}, dtype=torch.long)",
        f"{x}.new_full((2,), {n}) + {i}.sum()", f"{i}.clamp(min=-{n}, max={n})",
        f"{i}.abs().pow(2) % ({n} + 3)",
    ]
    return f"{v} = " + rng.choice(forms)


MIXED_KINDS = {f.__name__: f for f in (padmultiple, sizeindex, bcast, unbindstack, inviews,
                                       mixdtype)}
