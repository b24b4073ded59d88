"""Statement kinds of the long fuzz run (benchmarks/fuzz.py ``--kinds typed``) over inputs of
any dtype (session 35: ``--dtypes``, the programs' inputs int64 / int32 / int8 / uint8 / bool /
float16 / bfloat16 / float64 as well as float32, ``grammar.typed``), in the directions an
outside fuzzer goes:

  intarith    integer tensors of each width with ``//``, ``%``, ``torch.div`` rounding modes,
              ``remainder`` / ``fmod`` / ``floor_divide`` by negative numbers, 0-d tensors
              and sizes, shifts, bitwise ops, wrap-around of int8 / uint8, sums and
              cumulative sums (int64 results), ``mean(dtype=)``, ``true_divide``
  boolops     bool tensors: ``+`` / ``*`` (bool results), ``^`` / ``~``, sums, ``any`` /
              ``all`` with keepdim, masks from and into other dtypes, ``where`` on them
  lowp        float16 / bfloat16 with 0-d tensors and Python numbers of other kinds (the
              dim tensor's dtype wins within a category), with each other (float32),
              overflow to inf, reductions and softmax
  scalar0d    type promotion of dim tensors, 0-d tensors and Python scalars across the
              categories bool < int < float, ``result_type``, ``new_tensor``, ``add`` with
              ``alpha``, comparisons of mixed types
  aliaswrite  in-place writes through views of typed tensors (slices with negative bounds
              and steps, ``unsqueeze`` / ``expand`` / ``transpose`` / ``diagonal``),
              ``out=`` into a clone or into an operand, ``index_put_`` (accumulate with
              repeated indices), ``masked_fill_`` with a 0-d value, ``scatter_`` /
              ``scatter_add_`` / ``index_add_``, writes by bool masks and index tensors
  bounds      ``torch.where`` / ``clamp`` / ``clip`` with scalar, 0-d and tensor bounds of
              other dtypes (an int tensor clamped by a float), ``min > max``, nan bounds
  nnfunc      ``F.conv1d`` / ``conv2d`` with groups, dilation, stride and ``padding='same'``,
              pooling with ``ceil_mode`` / padding / ``count_include_pad``, ``interpolate``
              by sizes and scales in each mode, ``F.pad`` modes with negative pads
  indexin     integer and bool tensors (inputs) as indices: ``x[i % n]``, ``take``,
              ``index_select``, ``gather``, ``index_put_``, ``one_hot`` / ``bincount`` /
              ``embedding`` / ``searchsorted`` of them, bool masks (``x[b]``, ``masked_*``)
  dtypeargs   ``view(dtype)`` bitcasts to other element sizes (the last dim scaled), writes
              through them, ``dtype=`` of reductions and factories, ``type`` / ``type_as`` /
              ``to``, ``full_like`` of a float into an int, ``arange`` overflowing int8
  sizeflow    Python ``if`` on sizes and dtypes, loops over sizes that write rows in
              place, ``torch.cond`` on a size with typed operands, reductions over dims
              chosen from sizes with ``keepdim``

Each is deterministic per seed (the rng the engine hands it).
"""

from __future__ import annotations

import torch

INT = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
LOW = (torch.float16, torch.bfloat16)
DTYPES = (torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool, torch.float16,
          torch.bfloat16, torch.float64)


def _pick(env, rng, min_ndim=0, want=None):
    """A tensor name of `env` of at least `min_ndim` dims whose dtype passes `want`."""
    names = [n for n, t in env.items() if isinstance(t, torch.Tensor) and t.ndim >= min_ndim
             and (want is None or want(t.dtype))]
    return rng.choice(names) if names else None


def _int(env, rng, min_ndim=0):
    """An integer tensor: one of `env`'s, or a float one made integer."""
    a = _pick(env, rng, min_ndim, lambda d: d in INT)
    if a is not None and rng.random() < 0.7:
        return a
    f = _pick(env, rng, min_ndim, lambda d: d.is_floating_point)
    if f is None:
        return a
    return f"({f} * 4).to({rng.choice(['torch.int64', 'torch.int32', 'torch.int8'])})"


def _bool(env, rng, min_ndim=0):
    a = _pick(env, rng, min_ndim, lambda d: d == torch.bool)
    if a is not None and rng.random() < 0.7:
        return a
    x = _pick(env, rng, min_ndim)
    return None if x is None else f"({x} > 0)"


def _low(env, rng, min_ndim=0):
    a = _pick(env, rng, min_ndim, lambda d: d in LOW)
    if a is not None and rng.random() < 0.7:
        return a
    x = _pick(env, rng, min_ndim)
    return None if x is None else f"{x}.{rng.choice(['half', 'bfloat16'])}()"


def _n(env, rng, a):
    """A size of `a` (a Python int in eager) or a small constant."""
    t = env.get(a)
    if isinstance(t, torch.Tensor) and t.ndim and rng.random() < 0.6:
        return f"{a}.shape[{rng.randrange(t.ndim)}]"
    return str(rng.choice([2, 3, 7]))


def intarith(rng, env, v):
    i = _int(env, rng)
    if i is None:
        return None
    n = _n(env, rng, _pick(env, rng, 1))
    # (never -1: INT_MIN // -1, from a cast of inf, stops eager itself with SIGFPE)
    k = rng.choice(["2", "-3", n, f"({n} + 1)", f"-max({n}, 2)"])
    z = rng.choice(["torch.tensor(3)", "torch.tensor(-2)", "torch.tensor(5, dtype=torch.int8)"])
    return f"{v} = " + rng.choice([
        f"{i} // {k}", f"{i} % {k}", f"torch.div({i}, {k}, rounding_mode='floor')",
        f"torch.div({i}, {k}, rounding_mode='trunc')", f"torch.div({i}, {k})",
        f"torch.remainder({i}, {z})", f"torch.fmod({i}, {z})", f"torch.floor_divide({i}, {z})",
        f"{i} // {z}", f"{i} % {z}", f"{i} // 2.5", f"{i} % -1.5", f"{i} / {k}",
        f"{i} >> 1", f"({i} << 2) | 1", f"{i} & {z}", f"~{i}", f"{i} ^ -1", f"{i}.abs() % 4",
        f"{i}.sum()", f"{i}.sum(-1)", f"{i}.sum(0, keepdim=True)", f"{i}.cumsum(0)",
        f"{i}.prod()", f"{i}.mean(dtype=torch.float32)",
        f"{i}.to(torch.int8) * 100", f"{i}.to(torch.uint8) - 3", f"{i}.to(torch.int8) + 127",
        f"{i} * {i}", f"{i} - {i}.flip(0)" if "[" not in i else f"{i} - 1",
        f"torch.true_divide({i}, {z})", f"{i}.float() / {i}.float()", f"{i} ** 2",
        f"{i}.pow(0)", f"torch.bitwise_left_shift({i}, 3)", f"{i}.sign()", f"{i}.neg()",
        f"{i}.max()", f"{i}.amin(0)", f"{i}.argmax()", f"{i}.sort(0).values",
        f"torch.clamp({i}, -2, 2)", f"{i}.sum(dtype=torch.int8)",
        f"({i}.long().abs() % 64).bincount()",
    ])


def boolops(rng, env, v):
    b = _bool(env, rng)
    if b is None:
        return None
    c = _bool(env, rng)
    x = _pick(env, rng)
    return f"{v} = " + rng.choice([
        f"{b} + {b}", f"{b} * {c}", f"{b} ^ {c}", f"~{b}", f"{b} | {c}", f"{b} & True",
        f"{b}.sum()", f"{b}.sum(0)", f"{b}.any(0, keepdim=True)", f"{b}.all(-1)", f"{b}.any()",
        f"{b}.float().mean()", f"{b}.int() - 1", f"{b} + 1", f"{b} + 1.5", f"{b} * 2.5",
        f"{b} == {c}", f"{b} < {c}", f"{b}.cumsum(0)", f"{b}.max()", f"{b}.argmax()",
        f"{b}.to(torch.float16) + 1", f"torch.where({b}, {x}, 0)", f"torch.where({b}, 1, 0)",
        f"torch.where({b}, {x}, {x}.sum())", f"{b}.logical_not().long()", f"{b}.count_nonzero()",
        f"{b} + torch.tensor(2)", f"{b} * torch.tensor(1.5, dtype=torch.float64)",
        f"{b}.bitwise_not()", f"{b}.prod()", f"{b}.long().sum() / max({b}.numel(), 1)",
    ])


def lowp(rng, env, v):
    h = _low(env, rng)
    if h is None:
        return None
    x = _pick(env, rng)
    return f"{v} = " + rng.choice([
        f"{h} + torch.tensor(1.5)", f"{h} * torch.tensor(2.0, dtype=torch.float64)",
        f"{h} + torch.tensor(1)", f"{h} + 1e5", f"{h} * 60000", f"{h} + 0.1",
        f"{h}.half() + {h}.bfloat16()", f"{h} + {h}.float()", f"{h}.sum()", f"{h}.mean()",
        f"{h}.sum(-1, keepdim=True)", f"{h}.softmax(-1)", f"{h}.cumsum(0)",
        f"{h}.exp()", f"{h} / 3", f"{h}.to(torch.float64) + {h}", f"({h} > 0.5)",
        f"{h}.amax(0)", f"{h}.var(0, correction=0)", f"{h}.sqrt()", f"{h}.abs().log()",
        f"{h} @ {h}.mT",
        f"{h}.clamp(min=-0.5)", f"{h}.to(torch.int32)", f"{h}.round()", f"{h}.floor() // 2",
        f"{h} % 0.75", f"torch.where({h} > 0, {h}, 1e6)", f"{h}.norm()",
        f"torch.nn.functional.layer_norm({h}, {h}.shape[-1:])",
    ])


def scalar0d(rng, env, v):
    a = _pick(env, rng, 1)
    if a is None:
        return None
    z = rng.choice(["torch.tensor(2.5)", "torch.tensor(300)", "torch.tensor(-1)",
                    "torch.tensor(True)", "torch.tensor(1.5, dtype=torch.float64)",
                    "torch.tensor(2, dtype=torch.int8)", "torch.tensor(0.5, dtype=torch.float16)",
                    f"{a}.sum()", f"{a}[0].sum()", f"{a}.flatten()[0]" if env[a].numel()
                    else "torch.tensor(1)"])
    s = rng.choice(["2", "2.5", "True", "-1", "1e10", f"{a}.shape[0]", f"{a}.shape[-1] / 2",
                    "1000", "2 ** 40", "-(2 ** 62)", "1e-8", "float('inf')"])
    return f"{v} = " + rng.choice([
        f"{a} + {z}", f"{z} * {a}", f"{a} - {z}" if env[a].dtype != torch.bool
        else f"{a} + {z}", f"{a} + {s}", f"{s} * {a}", f"{a} * {z} + {s}", f"{a} / {z}",
        f"{a} > {z}", f"{a} == {s}", f"torch.add({a}, {z}, alpha=2)", f"{a}.add({s}, alpha=3)",
        f"torch.mul({a}, {s})", f"{a}.new_tensor({s}) + {a}", f"{a} + {a}.new_ones(())",
        f"torch.maximum({a}, {z})", f"torch.full_like({a}, {s}) + {z}",
        f"torch.tensor({s}) + {a}", f"torch.zeros((), dtype={a}.dtype) + {z}",
        f"torch.result_type({a}, {z}) == torch.float32", f"({a} * {z}).sum()",
        f"torch.stack([{a}, {a}]) + {z}", f"torch.cat([{a}, {a}.float()]) * {s}",
        # a Python number first (eager wraps it: an int out of the operand's range wraps)
        f"{s} // {a}", f"torch.sub({s}, {a})", f"{s} - {a}", f"{s} % {a}", f"{s} ** {a}",
        f"{a} ** True", f"{a} ** False", f"{s} / {a}",
    ])


def aliaswrite(rng, env, v):
    a = _pick(env, rng, 1, lambda d: d != torch.bool)
    if a is None or env[a].shape[0] == 0:
        return None
    t = env[a]
    w = v + "a"
    n = t.shape[0]
    one = rng.choice(["1", "2", "-1"])
    c = f"{v} = {a}.clone()"
    forms = [
        f"{c}\n{v}[-2:] = {one}", f"{c}\n{v}[::2] += {one}", f"{c}\n{v}[1::2] *= {one}",
        f"{c}\n{v}[-{n}:-1] -= 1",
        f"{c}\n{w} = {v}.unsqueeze(0)\n{w}[0, 0] = {one}",
        f"{c}\n{w} = {v}.unsqueeze(-1).expand(*{v}.shape, 2)\n{v}.add_({one})",
        f"{c}\n{w} = {v}.transpose(0, -1)\n{w}[0] = {one}",
        f"{c}\n{w} = {v}[1:]\n{w}.mul_(2)",
        f"{c}\ntorch.add({a}, 1, out={v})", f"{c}\ntorch.mul({v}, 2, out={v})",
        f"{v} = torch.empty_like({a})\ntorch.neg({a}, out={v})",
        f"{v} = torch.empty(0, dtype={a}.dtype)\ntorch.add({a}, {a}, out={v})",
        f"{c}\ntorch.cumsum({v}, 0, out={v})" if t.dtype in (torch.int64, torch.float32,
                                                                 torch.float64)
        else f"{c}\n{v}.add_({v})",
        f"{c}\n{v}.index_put_((torch.tensor([0, 0]),), torch.tensor(1, dtype={a}.dtype), "
        f"accumulate=True)",
        f"{c}\n{v}.index_put_((torch.tensor([0, -1]),), torch.tensor(2, dtype={a}.dtype))",
        f"{c}\n{v}.masked_fill_({v} > 0, torch.tensor(-1))",
        f"{c}\n{v}[{v} < 0] = {one}", f"{c}\n{v}[torch.tensor([0, {n - 1}])] = {one}",
        f"{c}\n{v}[torch.tensor([0, 0])] += 1",
        f"{c}\n{v}.index_add_(0, torch.tensor([0, 0]), {v}[:1].expand(2, *{v}.shape[1:]), "
        f"alpha=2)",
        f"{c}\n{v}.scatter_(0, torch.zeros_like({v}, dtype=torch.long), {v}.flip(0))",
        f"{c}\n{v}.scatter_add_(0, torch.zeros_like({v}, dtype=torch.long), {v})",
        f"{c}\n{v}.scatter_(0, torch.zeros_like({v}, dtype=torch.long)[:1], 2, "
        f"reduce='multiply')" if t.is_floating_point() else f"{c}\n{v}.fill_(3)",
        f"{c}\n{v}.diagonal().fill_({one})" if t.ndim >= 2 else f"{c}\n{v}[0] = {one}",
        f"{c}\n{w} = {v}.view(-1)\n{w}[::3] = {one}",
        f"{c}\n{w} = {v}[None]\n{w}.sub_({one})\n{v}.mul_(2)",
        f"{c}\n{w} = {v}.narrow(0, {n - 1}, 1)\n{w}.copy_({v}[:1])",
        f"{c}\n{v}[..., -1] = {v}[..., 0]",
        f"{c}\n{v}[{v}.shape[0] // 2:] = {v}[:({v}.shape[0] + 1) // 2].flip(0)"
        if n % 2 == 0 else f"{c}\n{v}[-1:] = {v}[:1]",
    ]
    return rng.choice(forms)


def bounds(rng, env, v):
    a = _pick(env, rng, 0, lambda d: d != torch.bool)
    if a is None:
        return None
    b = _pick(env, rng, 0, lambda d: d != torch.bool)
    lo = rng.choice(["0", "0.5", "-1", "torch.tensor(0.25)", f"{b}.min()" if env[b].numel()
                     else "0", f"{b}", "float('nan')", "torch.tensor(1)"])
    hi = rng.choice(["1", "2.5", "torch.tensor(0)", f"{b}", "-2", f"{b}.max()"
                     if env[b].numel() else "1"])
    m = f"({a} > 0)"
    return f"{v} = " + rng.choice([
        f"torch.clamp({a}, min={lo})", f"torch.clamp({a}, max={hi})",
        f"torch.clamp({a}, {lo}, {hi})", f"{a}.clip({lo}, {hi})", f"{a}.clamp(min={hi}, max={lo})",
        f"{a}.clamp_min({lo})", f"{a}.clamp_max({hi})", f"torch.where({m}, {a}, {lo})",
        f"torch.where({m}, {hi}, {a})", f"torch.where({m}, {lo}, {hi})",
        f"torch.where({m}, {a}, {b})", f"torch.where({a} != {a}, 0, {a})",
        f"{a}.clone().clamp_({lo}, {hi})", f"torch.where({m}.any(), {a}, {b})",
    ])


def nnfunc(rng, env, v):
    a = _pick(env, rng, 3, lambda d: d in (torch.float32, torch.float64))
    if a is None:
        return None
    t = env[a]
    if t.ndim == 3:
        x, nd = a, 1
    else:
        x, nd = (a if t.ndim == 4 else f"{a}.flatten(0, -4)"), 2
    c = t.shape[-nd - 1]
    g = rng.choice([g for g in (1, 2, 3, c) if g and c % g == 0] or [1])
    k = rng.choice([1, 2, 3])
    o = g * rng.choice([1, 2])
    ksz = ", ".join([str(k)] * nd)
    wt = (f"torch.linspace(-1, 1, {o * (c // g) * k ** nd}, dtype={x}.dtype)"
          f".reshape({o}, {c // g}, {ksz})") if c else None
    conv = f"F.conv{nd}d"
    pool = rng.choice(["max", "avg"])
    forms = [
        f"F.{pool}_pool{nd}d({x}, {rng.choice([2, 3])}, {rng.choice([1, 2])}, "
        f"{rng.choice([0, 1])}, ceil_mode={rng.random() < 0.5})",
        f"F.avg_pool{nd}d({x}, 2, 2, 1, ceil_mode=True, count_include_pad=False)",
        f"F.interpolate({x}, size={x}.shape[-1] * 2 - 1, mode='nearest')" if nd == 1 else
        f"F.interpolate({x}, size=({x}.shape[-2] + 1, {x}.shape[-1] // 2 + 1), "
        f"mode='{rng.choice(['bilinear', 'bicubic', 'nearest-exact'])}', "
        f"align_corners={rng.choice(['None', 'True', 'False'])})",
        f"F.interpolate({x}, scale_factor={rng.choice([0.5, 1.5, 3])}, mode='"
        f"{rng.choice(['nearest', 'linear' if nd == 1 else 'bilinear', 'area'])}')",
        f"F.pad({x}, ({', '.join(str(rng.randint(-1, 2)) for _ in range(2 * nd))}), "
        f"mode='{rng.choice(['constant', 'reflect', 'replicate'])}')",
        # (circular with a negative pad reads memory outside the cropped input where the
        # other side wraps more than it holds: eager's result is undefined, torch 2.13)
        f"F.pad({x}, ({', '.join(str(rng.randint(0, 2)) for _ in range(2 * nd))}), "
        f"mode='circular')",
        f"F.adaptive_max_pool{nd}d({x}, {rng.choice([1, 2, 3])})",
        f"F.lp_pool{nd}d({x}, 2, 2, ceil_mode=True)",
    ]
    if wt is not None:
        forms += [
            f"{conv}({x}, {wt}, groups={g}, padding='same', dilation={rng.choice([1, 2])})",
            f"{conv}({x}, {wt}, groups={g}, stride={rng.choice([1, 2])}, "
            f"padding={rng.choice([0, 1, 2])}, dilation={rng.choice([1, 2])})",
            f"{conv}({x}, {wt}, groups={g}, padding='valid')",
            f"{conv}({x}, {wt}, stride=2, groups={g})",
            f"F.conv_transpose{nd}d({x}, {wt}.reshape({c}, {o // g}, {ksz}), groups={g}, "
            f"stride=2, output_padding=1)",
        ]
    return f"{v} = " + rng.choice(forms)


def sizeflow(rng, env, v):
    a = _pick(env, rng, 1)
    if a is None:
        return None
    t = env[a]
    d = rng.randrange(t.ndim)
    s = f"{a}.shape[{d}]"
    w = v + "a"
    return rng.choice([
        f"if {a}.dtype == torch.bool:\n    {v} = {a}.int()\nelse:\n    {v} = {a} * 2",
        f"if {s} > 2:\n    {v} = {a}.narrow({d}, 1, {s} - 2)\nelse:\n    {v} = {a}",
        f"if {s} == 1:\n    {v} = {a}.squeeze({d})\nelse:\n    {v} = {a}.sum({d})",
        f"{v} = {a}.clone()\nfor _i in range(min({s}, 3)):\n    {v}.select({d}, _i).fill_(_i)"
        if t.dtype != torch.bool else f"{v} = {a}.clone()",
        f"{v} = torch.zeros({s}, dtype={a}.dtype)\nfor _i in range(min({s}, 4)):\n"
        f"    {v}[_i] = {a}.select({d}, _i).sum()" if t.dtype != torch.bool
        else f"{v} = {a}.any({d})",
        f"{v} = torch.cond({s} > 1, lambda u: u.flip(0) + 0, lambda u: u * 1, ({a},))"
        if t.dtype != torch.bool else f"{v} = ~{a}",
        f"{v} = {a}.sum(dim=[i for i, n in enumerate({a}.shape) if n > 1], keepdim=True)"
        if t.dtype != torch.bool else f"{v} = {a}.any(dim={d}, keepdim=True)",
        f"{v} = {a}.amax(dim=tuple(range({a}.ndim - 1)), keepdim=True)"
        if t.dtype != torch.bool else f"{v} = {a}",
        f"{w} = {a}.shape[{d}] // 2\n{v} = {a}.split([{w}, {s} - {w}], {d})[1]",
        f"{v} = {a}.flatten()[-({a}.numel() // 2):]",
        f"{v} = {a}.unsqueeze({d} + 1).expand(*{a}.shape[:{d} + 1], 2, "
        f"*{a}.shape[{d} + 1:]).contiguous()",
    ])


def indexin(rng, env, v):
    a = _pick(env, rng, 1)
    i = _pick(env, rng, 0, lambda d: d in INT)
    b = _pick(env, rng, 1, lambda d: d == torch.bool)
    if a is None or (i is None and b is None):
        return None
    t = env[a]
    n = f"{a}.shape[0]"
    forms = []
    if i is not None:
        j = f"({i}.long() % max({n}, 1))"
        forms += [
            f"{a}[{j}]", f"{a}[{i}.long().clamp(0, {n} - 1)]",
            f"{a}.index_select(0, {j}.flatten())",
            f"torch.take({a}, {i}.long() % max({a}.numel(), 1))", f"{a}[..., {i}.long() % max("
            f"{a}.shape[-1], 1)]", f"{a}[{j}, {j}]" if t.ndim >= 2 else f"{a}[{j}] * 2",
            f"{a}[{j}.flatten()[:1]]", f"F.one_hot({i}.long().abs() % 5, 5)",
            f"torch.bincount({i}.long().abs().flatten() % 64)",
            f"F.embedding({i}.long().abs() % 4, "
            f"torch.linspace(-1, 1, 12).reshape(4, 3))",
            f"{a}.clone().index_put_(({j},), {a}[:1].sum(), accumulate=True)" if t.dtype
            != torch.bool else f"{a}[{j}]",
            f"{a}.gather(0, {j}.reshape(-1, *[1] * ({a}.ndim - 1)).expand(-1, *{a}.shape[1:]))",
            f"torch.searchsorted(torch.arange(8), {i}.long())",
        ]
    if b is not None:
        forms += [
            f"{a}[{b}]", f"{a}.masked_fill({b}, 0)", f"torch.masked_select({a}, {b})",
            f"{a}[{b}.flatten()[:{n}]]" if env[b].ndim else f"{a}[{b}]",
            f"{a}.clone().masked_fill_({b}, 1)", f"torch.where({b}, {a}, {a}.flip(0))",
            f"{b}.nonzero()", f"{a}[{b}.any(-1)]" if env[b].ndim > 1 else f"{a}[{b}, ...]",
        ]
    return f"{v} = " + rng.choice(forms)


SIZES = {torch.int64: 8, torch.float64: 8, torch.int32: 4, torch.float32: 4, torch.int16: 2,
         torch.float16: 2, torch.bfloat16: 2, torch.int8: 1, torch.uint8: 1, torch.bool: 1}


def dtypeargs(rng, env, v):
    a = _pick(env, rng, 1)
    if a is None:
        return None
    t = env[a]
    w = v + "a"
    n = f"{a}.shape[-1]"
    c = f"{a}.contiguous()"
    same = [d for d, k in SIZES.items() if k == SIZES[t.dtype] and d != t.dtype]
    other = rng.choice(list(SIZES))
    ok = SIZES[other] <= SIZES[t.dtype] or t.shape[-1] * SIZES[t.dtype] % SIZES[other] == 0
    dt = str(other)
    forms = [
        f"{v} = {c}.view({dt})" if ok else f"{v} = {c}.view(torch.uint8)",
        f"{v} = {c}.view({str(rng.choice(same))}) * 1" if same else f"{v} = {a}.view(torch.uint8)",
        f"{v} = {a}.clone()\n{w} = {v}.view(torch.uint8)\n{w}[..., :1] = 0",
        f"{v} = {a}.clone()\n{w} = {v}.view({dt})\n{w}.zero_()" if ok else f"{v} = {a}.clone()",
        f"{v} = {c}.view(torch.uint8).sum(-1)",
        f"{v} = {a}.sum(dtype=torch.int8)" if t.dtype != torch.bool else f"{v} = {a}.sum()",
        f"{v} = {a}.cumsum(0, dtype=torch.float64)", f"{v} = {a}.to({dt})",
        f"{v} = {a}.type_as(torch.zeros(1, dtype={dt}))", f"{v} = {a}.type(torch.int32)",
        f"{v} = torch.full_like({a}, 2.7)", f"{v} = torch.full_like({a}, -1, dtype={dt})"
        if other != torch.uint8 else f"{v} = torch.full_like({a}, 255, dtype={dt})",
        f"{v} = torch.zeros_like({a}, dtype=torch.bool) | ({a} != 0)",
        f"{v} = {a}.new_zeros({n}) + 1", f"{v} = {a}.new_full(({n},), 3.5)",
        f"{v} = torch.arange({a}.numel() * 20, dtype=torch.int8)",
        f"{v} = torch.arange(0.5, {n} + 0.5)", f"{v} = torch.arange({n}, 0, -1, dtype={dt})"
        if other != torch.bool else f"{v} = torch.arange({n})",
        f"{v} = torch.linspace(0, {n}, {n} + 1, dtype=torch.int64)",
        f"{v} = torch.empty_like({a}, dtype={dt}).fill_(1)",
        f"{v} = {a}.abs().to(torch.uint8).to(torch.int8) - 1" if t.dtype != torch.bool
        else f"{v} = {a}.to(torch.uint8) - 1",
        f"{v} = {a}.double().half().bfloat16().float()",
        f"{v} = {a}.mean(dtype=torch.float64)" if t.dtype != torch.bool
        else f"{v} = {a}.float().mean()",
        f"{v} = torch.prod({a}, 0, dtype=torch.int64)",
    ]
    return rng.choice(forms)


TYPED_KINDS = {f.__name__: f for f in (intarith, boolops, lowp, scalar0d, aliaswrite, bounds,
                                       nnfunc, sizeflow, indexin, dtypeargs)}
