"""Statement kinds of the long fuzz run (benchmarks/fuzz.py) aimed at layout, promotion,
joins and empty reductions, where eager's answer depends on strides, dtypes or sizes 0 / 1:

  layout      chains of non-contiguous views (transpose, permute, expand, narrow, stepped
              slices) followed by ``view`` / ``reshape`` / ``flatten`` / ``unflatten`` /
              ``contiguous``, elementwise ops and ``clone`` / ``*_like`` on such operands
              (eager keeps their layout: ``(x.t() * 2).view(-1)`` raises), ``channels_last``
  viewwrite   in-place writes through views and slices of views, then reads of the base
  promote     integer / bool / half tensors with Python numbers made from sizes
              (``x.long() // n``, ``torch.full((2,), n)``, ``n / 2``), ``torch.tensor(n)``
  derived     ``cat`` / ``stack`` / ``split`` / ``chunk`` / ``tensor_split`` with sizes
              derived from other dims (0 included: ``split(0)`` and ``chunk(0)`` raise)
  empty_reduce  reductions with and without keepdim over dims of size 0 and 1 (``max`` /
              ``argmax`` / ``median`` ... raise on an empty dim in eager); ``median(dim)``
              and ``nanmedian(dim)`` only of contiguous tensors: torch 2.13's CPU kernels
              read unset memory for an expanded (stride-0) input, eager's answer is garbage
"""

from __future__ import annotations

from tests.fuzz.grammar import _size, _t


def _perm(rng, nd):
    p = list(range(nd))
    rng.shuffle(p)
    return ", ".join(map(str, p))


def _strided(rng, env, a):
    """A non-contiguous view (or not) of `a`, as source."""
    t = env[a]
    nd = t.ndim
    d = rng.randrange(nd)
    forms = [f"{a}.transpose(0, -1)", f"{a}.permute({_perm(rng, nd)})", f"{a}[::2]",
             f"{a}[{':, ' * d}1::2]", f"{a}.narrow({d}, 0, {a}.shape[{d}] // 2)",
             f"{a}.expand(2, *{a}.shape)", f"{a}.unsqueeze(-1).expand(*{a}.shape, 2)",
             f"{a}[..., 1:]", f"{a}.flip(0)", f"{a}.mT" if nd >= 2 else f"{a}[1:]",
             f"{a}.movedim(0, -1)", f"{a}.swapaxes(0, -1)", f"{a}.T" if nd == 2 else f"{a}[:-1]",
             # not views, yet strided results (eager's own strides)
             f"({a} > 0).nonzero().float()", f"torch.einsum('i...->...i', {a})",
             f"{a}.rot90(1, (0, -1))" if nd >= 2 else f"{a}.flip(0)",
             f"torch.fft.rfft({a}, dim=0).abs()", f"torch.argwhere({a} > 0) * 1.0",
             f"{a}.unsafe_split(2, {d})[0]", f"{a}.unsafe_chunk(2, {d})[-1]"]
    return rng.choice(forms)


def layout(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    s = _strided(rng, env, a)
    u = f"_u{v}"
    then = rng.choice([
        f"{u}.view(-1)", f"{u}.reshape(-1)", f"{u}.flatten()", f"{u}.contiguous().view(-1)",
        f"({u} * 2).view(-1)", f"torch.relu({u}).view(-1)", f"({u} + {u}).view({u}.shape[0], -1)",
        f"{u}.exp().flatten(0)", f"({u} * 2).reshape(-1)", f"{u}.clone().view(-1)",
        f"{u}.clone(memory_format=torch.contiguous_format).view(-1)",
        f"torch.zeros_like({u}).view(-1)", f"torch.ones_like({u}).view(-1) + 1",
        f"torch.empty_like({u}).fill_(2.0).view(-1)", f"torch.full_like({u}, 3.0).view(-1)",
        f"{u}.unflatten(0, (1, -1))", f"{u}.view({u}.shape)", f"{u}.view_as({u}) * 2",
        f"{u}.view(-1, {u}.shape[-1])", f"{u}.float().view(-1)", f"{u}.to(torch.float64).view(-1)",
        f"({u} > 0).view(-1)", f"{u}.abs().view({u}.shape[0], -1).sum(0)",
        f"{u}.contiguous() * {u}.is_contiguous()", f"{u} * {u}.is_contiguous()",
        f"{u}.contiguous().view(-1) * {u}.contiguous().is_contiguous()",
        f"({u}.T if {u}.ndim == 2 else {u}).reshape(-1)",
        f"{u}.sum(0).view(-1)", f"{u}.cumsum(0).view(-1)", f"{u}.softmax(-1).view(-1)",
        f"{u}.new_zeros({u}.shape).view(-1)", f"torch.where({u} > 0, {u}, 0.0).view(-1)",
        f"{u}.masked_fill({u} > 0, 1.0).view(-1)", f"({u} * torch.ones_like({u})).view(-1)",
        f"torch.stack([{u}, {u}]).view(-1)", f"{u}.add({u}.sum()).view(-1)",
    ])
    if rng.random() < 0.2 and env[a].ndim >= 2:   # channels_last
        r = f"{a}.reshape(1, {a}.shape[0], -1, 1)"
        fmt = rng.choice(["torch.channels_last", "torch.contiguous_format"])
        u2 = f"{r}.contiguous(memory_format={fmt})"
        return f"{u} = {u2}\n{v} = " + rng.choice([
            f"{u}.view(-1)", f"{u}.flatten()", f"({u} * 2).view(-1)", f"{u}.reshape(-1)",
            f"torch.empty_like({u}).fill_(1.0).view(-1)", f"{u}.clone().view(-1)",
            f"{u} * {u}.is_contiguous()",
            f"{u} * {u}.is_contiguous(memory_format=torch.channels_last)",
            f"{r}.to(memory_format={fmt}).view(-1)",
            f"torch.zeros_like({u}, memory_format=torch.contiguous_format).view(-1)",
            f"{u}.permute(0, 2, 3, 1).view(-1)", f"{u}.sum(1).view(-1)"])
    return f"{u} = {s}\n{v} = {then}"


def viewwrite(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None or env[a].shape[0] == 0:
        return None
    w = v + "a"
    nd = env[a].ndim
    d = rng.randrange(nd)
    c = f"{v} = {a}.clone()\n"
    return c + rng.choice([
        f"{v}[{':, ' * d}::2].add_(1)",
        f"{w} = {v}.view(-1)\n{w}.mul_(2)\n{w} = {v} + 1",
        f"{w} = {v}.view({v}.shape[0], -1)\n{w}[:, :1] = 5.0\n{w} = {v}.sum()",
        f"{w} = {v}.transpose(0, -1)\n{w}[::2].zero_()",
        f"{w} = {v}[::2]\n{w}[1:].mul_(-1)",
        f"{v}.transpose(0, -1)[0].fill_(3.0)",
        f"{w} = {v}.permute({_perm(rng, nd)})\n{w}.add_({w}.sum())\n{w} = {w} * 1",
        f"{v}.unflatten(0, (1, -1)).sub_(2)",
        f"{v}.narrow({d}, {v}.shape[{d}] // 2, {v}.shape[{d}] - {v}.shape[{d}] // 2).neg_()",
        f"{v}.diagonal().fill_(7.0)" if nd >= 2 else f"{v}[::3].fill_(7.0)",
        f"{v}.expand(2, *{v}.shape).add_(1)",                         # eager: overlap
        f"{v}.unsqueeze(0).expand(2, *{v}.shape)[0].add_(1)",
        f"{w} = {v}.flatten()\n{w}[::2] = {w}[1::2].sum()\n{w} = {v}.clone()",
        f"{w} = {v}.reshape(-1)\n{w}.add_(1)\n{w} = {w}.sum() - {v}.sum()",
        f"{w} = {v}.mT\n{w}.mul_(2)\n{w} = {w}.contiguous()" if nd >= 2
        else f"{w} = {v}[1:]\n{w}.mul_(2)",
        f"{w} = {v}[..., ::2]\n{w}.copy_({w}.flip(0))",
        f"{w} = {v}[{':, ' * d}{v}.shape[{d}] // 2:]\n{w}.clamp_(min=0)\n{w} = {v}.amax()",
        f"torch.mul({v}[::2], 2, out={v}[::2])",
        f"{w} = {v}.movedim(0, -1)\n{w}.view(-1)",                       # eager may raise
        f"{w} = {v}.t() if {v}.ndim <= 2 else {v}.mT\n{w}.contiguous().view(-1).add_(1)",
        f"{v}[::2] += {v}[1::2][:{v}[::2].shape[0]]",
        # reshape / flatten / contiguous of a strided view: a view or a copy by the sizes
        # (a write shows through the base only where it is a view)
        f"{v}.transpose(0, -1).reshape(-1).add_(1)", f"{v}[..., ::2].reshape(-1).mul_(0)",
        f"{v}.transpose(0, -1).flatten().sub_(1)", f"{v}.transpose(0, -1).contiguous().add_(1)",
        f"{w} = {v}.unsqueeze(0).expand(2, *{v}.shape).reshape(-1)\n{w}[:1].add_(1)",
        f"{w} = {v}.permute({_perm(rng, nd)}).reshape({v}.shape[-1], -1)\n{w}.mul_(2)",
        f"{w} = {v}.movedim(0, -1).reshape(-1)\n{w}[::2] = 0.0\n{w} = {w} + {v}.sum()",
    ])


def promote(rng, env, v):
    a = _t(env, rng, 0, True)
    if a is None:
        return None
    s, _ = _size(rng, env)
    if s is None:
        return None
    n = f"({s})"
    return f"{v} = " + rng.choice([
        f"{a}.long() * {n}", f"{a}.long() // {n}", f"({a} * 4).long() // max({n}, 1)",
        f"{a}.int() + {n}", f"({a} > 0) * {n}", f"({a} > 0) + {n}", f"{a}.long() / {n}",
        f"{a} * {n}", f"{a}.half() * {n}", f"{a}.to(torch.int8) * {n}",
        f"torch.full((2,), {n})", f"torch.full((2,), {n} / 2)", f"torch.full((2,), {n} > 1)",
        f"torch.full((2,), {n}, dtype=torch.uint8)", f"torch.full((2,), {n} * 1.0) + {a}.sum()",
        f"torch.tensor({n})", f"torch.tensor([{n}, 2])", f"torch.tensor({n} / 2)",
        f"torch.tensor({n}) * {a}", f"torch.arange({n}) / 2", f"torch.arange({n}) // 2",
        f"{a}.new_full((2,), {n})", f"torch.where({a} > 0, {n}, 0)",
        f"torch.where({a} > 0, {n} / 2, {a})", f"{a}.int() & {n}", f"({a} > 0) | ({n} > 2)",
        f"{a}.long().clamp(max={n})", f"torch.clamp({a}.long(), min={n})",
        f"{a}.long() % max({n}, 1)", f"{a}.long() ** 2 + {n}", f"{n} - {a}.int()",
        f"{a}.bool() * ({n} / 2)", f"torch.ones(2, dtype=torch.int16) * {n} * {n}",
        f"{a}.long().float() / max({n}, 1)", f"torch.tensor(float({n})) + {a}.int()",
        f"torch.scalar_tensor({n})", f"torch.zeros(1, dtype=torch.int32) + {n} // 2",
        f"{a}.long().div({n}, rounding_mode='floor')", f"{a}.long().fmod(max({n}, 1))",
        f"torch.full((1,), {n}).float() / 3", f"(({a} > 0) * {n}).sum(-1)",
    ])


def derived(rng, env, v):
    a = _t(env, rng, 1)
    if a is None:
        return None
    b = _t(env, rng, 1)
    d = rng.randrange(env[a].ndim)
    sd = f"{a}.shape[{d}]"
    k = rng.choice([f"{b}.shape[0]", f"{sd} // 2", f"{b}.shape[-1] + 1", f"max({sd} - 1, 1)",
                    f"{b}.shape[0] % 3", f"len({b})"])
    rest = ", ".join(f"{a}.shape[{i}]" if i != d else f"{b}.shape[0]"
                     for i in range(env[a].ndim))
    return f"{v} = " + rng.choice([
        f"torch.cat([{a}, torch.zeros({rest})], {d})",
        f"torch.cat([{a}, {a}.new_ones({rest})], {d}).sum({d})",
        f"{a}.split([{sd} // 2, {sd} - {sd} // 2], {d})[-1]",
        f"torch.split({a}, {k}, {d})[0]", f"{a}.split({k}, {d})[-1]",
        f"{a}.chunk({k}, {d})[0]", f"torch.cat({a}.chunk({k}, {d}), {d})",
        f"torch.ones(len({a}.split({k}, {d})))", f"torch.ones(len({a}.chunk({k}, {d})))",
        f"{a}.tensor_split({k}, {d})[-1]", f"{a}.tensor_split([1, {k}], {d})[1]",
        f"torch.stack({a}.unbind({d}), -1)" if env[a].shape[d] else f"{a} * 1",
        f"torch.stack([{a}[:{k}], {a}[:{k}] * 2], 0)",
        f"torch.cat([{a}.narrow({d}, 0, min({k}, {sd})), {a}], {d})",
        f"torch.stack([{a}.flatten()[:{k}], {a}.flatten()[-{k}:] if {k} else {a}.flatten()[:0]])",
        f"torch.cat([p * i for i, p in enumerate({a}.split({k} or 1, {d}))], {d})",
        f"torch.hstack([{a}, {a}])", f"torch.vstack([{a}, {a}[:{k}]])",
        f"torch.cat([{a}.flatten(), torch.arange({k}).float()])",
        f"{a}.unsafe_split({k} or 1, {d})[0]", f"torch.dsplit({a}, 1)[0]" if env[a].ndim >= 3
        else f"torch.vsplit({a}, [{k}])[0]" if env[a].ndim >= 2 else f"{a}.hsplit([{k}])[0]",
    ])


def empty_reduce(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    d = rng.randrange(env[a].ndim)
    kd = rng.choice(["True", "False"])
    return f"{v} = " + rng.choice([
        f"{a}.max({d}, keepdim={kd}).values", f"{a}.min({d}, {kd}).indices",
        f"{a}.argmax({d}, keepdim={kd})", f"{a}.argmin()", f"{a}.amax({d}, keepdim={kd})",
        f"{a}.amin(({d}, 0), keepdim={kd})", f"{a}.sum({d}, keepdim={kd})",
        f"{a}.mean({d}, keepdim={kd})", f"{a}.prod({d}, keepdim={kd})",
        f"{a}.std({d}, keepdim={kd})", f"{a}.var({d}, keepdim={kd})",
        f"{a}.logsumexp({d}, keepdim={kd})", f"{a}.norm(dim={d}, keepdim={kd})",
        f"{a}.any({d}, keepdim={kd})", f"({a} > 0).all({d})", f"{a}.contiguous().median({d}, {kd}).values",
        f"{a}.median()", f"{a}.mode({d}, {kd}).values", f"{a}.kthvalue(1, {d}, {kd}).values",
        f"{a}.topk(1, {d}).values", f"{a}.sort({d}).values", f"{a}.cummax({d}).values",
        f"{a}.aminmax(dim={d}, keepdim={kd}).max", f"{a}.max()", f"{a}.nansum({d}, {kd})",
        f"torch.max({a}, {d}, {kd})[1]", f"{a}.count_nonzero({d})", f"{a}.max({d})[0] * 2",
        f"{a}.amax(-1, keepdim=True) - {a}", f"{a}.softmax({d})", f"{a}.log_softmax({d})",
        f"{a}.sum(dim=(), keepdim={kd})", f"{a}.mean(dim=[], keepdim={kd})",
        f"{a}.argmax()", f"{a}.max(dim={d}, keepdim=True).values.expand_as({a})",
        f"{a}.std(correction=0)", f"{a}.var({d}, correction=2)", f"{a}.nanmean({d})",
        f"{a}.contiguous().nanmedian({d}).values",
        f"{a}.min() if {a}.numel() else {a}.sum()", f"torch.cummin({a}, {d}).indices",
    ])


LAYOUT_KINDS = {f.__name__: f for f in (layout, viewwrite, promote, derived, empty_reduce)}
