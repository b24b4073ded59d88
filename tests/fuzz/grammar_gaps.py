"""Statement kinds of the long fuzz run (benchmarks/fuzz.py ``--kinds gaps``) for what the
other grammars drew little or not at all (session 33):

  ddviews     sizes read from data (``.item()``, ``int(t)``, ``nonzero``, ``unique`` with
              counts / inverse, ``bincount``, ``repeat_interleave`` by data counts) used in
              views, ``split`` sections, ``narrow``, ``topk`` k and factories
  sizedims    reductions whose dims come from sizes: a dim chosen by a branch on a size,
              dim lists built from the shape (``[d for d, s in enumerate(x.shape) if s > 1]``,
              empty at some sizes: a reduction over ``dim=[]`` reduces all), ``keepdim``,
              ``sum(d) / x.shape[d]`` (nan at 0), ``std`` / ``var`` / ``logsumexp`` / ``norm``
  pyscalars   Python ints and floats made from sizes: ``n / 2``, ``math.ceil`` / ``floor`` /
              ``sqrt`` / ``log``, ``round`` (half to even), ``divmod`` and ``//`` / ``%``
              with negative operands, ``torch.div`` rounding modes, ``remainder`` / ``fmod`` /
              shifts of int tensors by sizes (``% n`` at n = 0 raises in eager), scalars into
              ``full`` / ``tensor`` / ``new_full`` / ``clamp`` / ``pow``
  shapeflow   Python control flow on shape tuples: ``a.shape == b.shape``, ``in``, ``max`` /
              ``min`` / ``sorted`` / ``sum`` of a shape, ``for s in a.shape``, shapes edited as
              lists (``sh[0] = -1``), ``a.shape[:-1] + (k,)``, ``a.shape[::-1]``
  hopscan     ``torch._higher_order_ops.scan`` (dim, reverse) and ``map`` over inputs and
              dynamic dims (eager refuses an empty scanned / mapped dim), ``torch.cond`` whose
              branches read sizes, ``while_loop`` counted by a size read in the body
  bmm1        matmul broadcasting with batch dims of size 1 (``a[:1] @ a.mT``,
              ``a.unsqueeze(1) @ a.unsqueeze(0).mT``), ``bmm`` / ``baddbmm`` / ``F.linear`` /
              ``einsum`` of such operands
  constvals   tensors the trace holds as values (``torch.tensor([n, m])``, ``torch.tensor(x.shape)``)
              through calls whose Python signature is not their ATen op's: ``nonzero`` /
              ``where`` of one argument, ``unique`` / ``sort`` / ``max`` with flags and several
              results, ``split`` / ``tensor_split`` / ``meshgrid`` / ``bucketize`` /
              ``searchsorted`` / ``histc``, values read back as sizes (``int``, ``.item()``,
              ``tolist``)

Each is deterministic per seed (the rng the engine hands it). The oracle runs
``reference_scan`` for torch's scan (torch's compiles each call: about 1 s).
"""

from __future__ import annotations

import torch

from tests.fuzz.grammar import _t
from tests.fuzz.grammar_cross import _bsize, _two

HOP = "torch._higher_order_ops"


def ddviews(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    w = v + "a"
    k = f"_k{v}"
    f = f"{a}.flatten()"
    c = rng.choice([f"({a} > 0).sum()", f"({a} < 0.5).sum()", f"({a}.abs() > 1).sum()"])
    forms = [
        f"{k} = {c}.item()\n{v} = {f}[:{k}].view({k}, 1)",
        f"{k} = int({c})\n{v} = {f}[:{k}].reshape(-1, 1).expand(-1, 2)",
        f"{k} = {c}.item()\n{v} = {f}.split([{k}, {a}.numel() - {k}])[1]",
        f"{k} = {c}.item()\n{v}, {w} = {f}.split([{k}, {a}.numel() - {k}])",
        f"{k} = {c}.item()\n{v} = {f}.narrow(0, 0, {k}) * 2",
        f"{k} = {c}.item()\n{v} = {f}.topk({k}).values",
        f"{k} = {c}.item()\n{v} = {a}.new_zeros({k}, {a}.shape[-1])",
        f"{k} = {c}.item()\n{v} = torch.arange({k} * 2).view(-1, 2).float()",
        f"{v} = {f}[{f} > 0].view(-1, 1)",
        f"{v} = {a}[{a} > 0].unsqueeze(0).expand(2, -1)",
        f"{v} = {f}.index_select(0, {f}.nonzero().flatten())",
        f"{v} = torch.nonzero({a} > 0, as_tuple=True)[0]",
        f"{v} = torch.where({a} > 0)[-1]",
        f"_u{v}, {v} = torch.unique(({a} * 2).round().long(), return_counts=True)",
        f"{v}, {w} = torch.unique(({a} * 2).round(), return_inverse=True)",
        f"{v} = torch.unique(({a} * 2).round().long(), sorted=True).float().cumsum(0)",
        f"{v} = torch.unique_consecutive(({f} > 0).long())",
        f"{v} = torch.bincount(({f}.abs() * 2).long())",
        f"{v} = torch.bincount(({f}.abs() * 2).long(), minlength={a}.shape[0])",
        f"{v} = {f}.repeat_interleave(({f} > 0).long())",
        f"{v} = torch.repeat_interleave(({f}.abs() * 2).long())",
        f"{k} = {f}[{f} > 0]\n{v} = {k}.view(-1, 1) @ {k}.view(1, -1)",
        f"{k} = ({a} > 0).sum().item()\n{v} = torch.ones({k}).split(2)[0]",
        f"{k} = {c}.item()\n{v} = {f}[{a}.numel() - {k}:].unflatten(0, ({k}, 1))",
    ]
    if t.ndim >= 2:
        forms += [f"{k} = {c}.item()\n{v} = {a}.new_ones({k}).reshape({k}, 1) * {a}[..., :1]"
                  f".flatten()[:1]" if t.numel() else f"{v} = {a}.sum(0)",
                  f"{v} = {a}[({a} > 0).any(-1)]", f"{v} = {a}[:, ({a} > 0).all(0)]"
                  if t.ndim == 2 else f"{v} = {a}[({a} > 0).all(-1)]"]
    return rng.choice(forms)


def sizedims(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    t = env[a]
    nd = t.ndim
    d = rng.randrange(nd)
    s = f"{a}.shape[{d}]"
    m, _ = _bsize(rng, env, b)
    kd = rng.choice(["True", "False"])
    dim = rng.choice([f"0 if {s} > 1 else -1", f"-1 if {m} > 2 else 0",
                      f"[i for i, n in enumerate({a}.shape) if n > 1]",
                      f"[i for i, n in enumerate({a}.shape) if n != {m}]",
                      f"tuple(range(1, {a}.ndim))", f"{nd - 1} if {a}.numel() else 0",
                      f"{a}.shape.index(max({a}.shape))",
                      f"[i for i in range({a}.ndim) if {a}.shape[i] % 2 == 0]"])
    red = rng.choice([f"sum(dim={{}}, keepdim={kd})", f"mean(dim={{}}, keepdim={kd})",
                      f"amax(dim={{}}, keepdim={kd})", f"std(dim={{}}, keepdim={kd})",
                      f"var(dim={{}}, correction=0, keepdim={kd})",
                      f"logsumexp(dim={{}}, keepdim={kd})", f"norm(dim={{}}, keepdim={kd})",
                      f"prod(dim={{}}, keepdim={kd})", f"nansum(dim={{}}, keepdim={kd})",
                      f"any(dim={{}}, keepdim={kd})", f"count_nonzero(dim={{}})"])
    one = rng.choice(["max", "min", "argmax", "median", "cumsum", "softmax", "logcumsumexp"])
    one_form = {"max": f"max({{}}, keepdim={kd}).values", "min": f"min({{}}, keepdim={kd})[1]",
                "argmax": f"argmax({{}}, keepdim={kd})", "median": f"median({{}}, {kd})[0]",
                "cumsum": "cumsum({})", "softmax": "softmax({})",
                "logcumsumexp": "logcumsumexp({})"}[one]
    single = rng.choice([f"0 if {s} > 1 else -1", f"-1 if {m} > 2 else 0",
                         f"{a}.shape.index(max({a}.shape))", f"{m} % {nd}"])
    forms = [
        f"{v} = {a}.{red.format(dim)}",
        f"{v} = {a}.{one_form.format(single)}",
        f"{v} = {a}.sum({d}) / {s}",
        f"{v} = {a}.sum({d}, keepdim=True) / max({s}, 1)",
        f"{v} = {a} - {a}.mean({d}, keepdim=True)",
        f"{v} = {a} / {a}.norm(dim={d}, keepdim=True).clamp_min(1e-6)",
        f"{v} = {a}.std({d}, keepdim=True)",
        f"{v} = {a}.amax(dim=({d}, -1), keepdim={kd})" if d != nd - 1 else
        f"{v} = {a}.amin(dim={d}, keepdim={kd})",
        f"{v} = ({a}.sum(dim=[], keepdim={kd}) if {s} > 2 else {a}.sum(dim={d}, keepdim={kd}))"
        if nd == 1 else f"{v} = {a}.sum(dim=[{d}] * ({s} > 2), keepdim={kd})",
        f"{v} = {a}.flatten({min(d, nd - 1)}).sum(-1, keepdim={kd})",
    ]
    return rng.choice(forms)


def pyscalars(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    n, _ = _bsize(rng, env, a)
    m, _ = _bsize(rng, env, b)
    e = rng.choice([f"{n} / 2", f"math.ceil({n} / 3)", f"math.floor({n} / 3)",
                    f"math.sqrt({n} + 1)", f"math.log({n} + 1)", f"float({n})", f"{n} ** 0.5",
                    f"round({n} / 2)", f"round({n} * 0.5 + {m})", f"({n} - {m}) // 3",
                    f"({m} - {n}) % 3", f"{n} % -3", f"-{n} // 2", f"divmod({n} + {m}, 3)[1]",
                    f"math.trunc(-{n} / 3)", f"{n} / max({m}, 1)", f"({n} * 7) % 5 - 2",
                    f"math.ceil(-{n} / 2)", f"int({n} / 3 * 3)", f"{n} // 2 * 0.5",
                    f"math.prod({a}.shape)", f"abs({m} - {n}) / 4", f"min({n}, {m}) / 3"])
    ia = f"({a} * 4).long()"
    forms = [
        f"{v} = {a} * ({e})", f"{v} = {a} + ({e})", f"{v} = {a} / (({e}) + 1)",
        f"{v} = {a}.clamp(max={e})", f"{v} = {a}.clamp(min=-({e}))",
        f"{v} = torch.full((2,), {e})", f"{v} = torch.tensor({e}) + {a}",
        f"{v} = {a}.new_full((2,), {e})", f"{v} = {ia}.new_full((2,), {e})",
        f"{v} = {ia} * ({e})", f"{v} = {ia} + ({e})", f"{v} = {ia} // (({e}) + 1)",
        f"{v} = {a}.abs().pow({e})", f"{v} = torch.pow({e}, {a})",
        f"{v} = {ia} // {n}", f"{v} = {ia} % {n}", f"{v} = torch.remainder({ia}, {n} + 1)",
        f"{v} = torch.fmod({ia}, {n} + 1)", f"{v} = torch.fmod({a}, {n} + 1)",
        f"{v} = torch.div({ia}, {n} + 1, rounding_mode='floor')",
        f"{v} = torch.div({ia}, -({n} + 1), rounding_mode='trunc')",
        f"{v} = torch.div({a}, {n} - {m}, rounding_mode='floor')",
        f"{v} = {ia} << ({n} % 3)", f"{v} = {ia} >> ({m} % 2)", f"{v} = {ia} & {n}",
        f"{v} = {ia} ^ ({n} + {m})", f"{v} = ({a} > 0) * ({e})", f"{v} = ({a} > 0) + {n}",
        f"{v} = {ia}.float() / {n}", f"{v} = {ia} / {n}", f"{v} = {a} * ({n} % 2 == 0)",
        f"{v} = {a} * ({n} and {m})", f"{v} = {a}.half() * ({e})",
        f"{v} = {ia}.to(torch.int32) * ({e})", f"{v} = {ia}.to(torch.uint8) - ({n} % 7)",
        f"{v} = torch.arange(0, 1, 1 / ({n} + 1))", f"{v} = torch.linspace(0, {e}, 3)",
        f"{v} = torch.arange({e}, {e} + 2.5)",
        f"{v} = torch.tensor([{n}, {m}]) / 2", f"{v} = torch.tensor({n}) // torch.tensor(2)",
        f"{v} = torch.round({a} * {n}) / max({n}, 1)",
    ]
    return rng.choice(forms)


def shapeflow(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    t, u = env[a], env[b]
    nd = t.ndim
    w = v + "a"
    forms = [
        f"if {a}.shape == {b}.shape:\n    {v} = {a} + {b}\nelse:\n    {v} = {a}.sum() + "
        f"{b}.sum()",
        f"if {a}.shape[-1] == {b}.shape[-1]:\n    {v} = {a} * {b}.flatten(0, -2)[:1]\n"
        f"else:\n    {v} = {a} * 2" if u.numel() or u.ndim == 1 else f"{v} = {a} * 3",
        f"if {a}.shape[0] in (0, 1):\n    {v} = {a}.sum(0)\nelse:\n    {v} = {a}[1:].sum(0)",
        f"if 1 in {a}.shape:\n    {v} = {a}.flatten()\nelse:\n    {v} = {a}.reshape(-1) * 2",
        f"if tuple({a}.shape) < tuple({b}.shape):\n    {v} = {a} - 1\nelse:\n    {v} = {a} + 1",
        f"{v} = torch.ones(max({a}.shape))", f"{v} = torch.zeros(min({a}.shape), 2)",
        f"{v} = torch.arange(sum({a}.shape))", f"{v} = torch.ones(sorted({a}.shape)[-1])",
        f"{v} = torch.ones(len([s for s in {a}.shape if s > 1]))",
        f"{v} = {a}.reshape({a}.shape[::-1])",
        f"{v} = {a}.new_zeros({a}.shape[:-1] + (2,))",
        f"{v} = {a}.new_zeros((*{a}.shape[:-1], {b}.shape[0]))",
        f"_s{v} = list({a}.shape)\n_s{v}[0] = -1\n{v} = {a}.reshape(_s{v})",
        f"_s{v} = list({a}.shape)\n_s{v}[-1] = 1\n{v} = {a}.sum(-1).reshape(_s{v})",
        f"{v} = {a}.clone()\nfor _s in {a}.shape:\n    {v} = {v} + _s",
        f"{v} = {a}.clone()\nfor _d, _s in enumerate({a}.shape):\n    if _s > 2:\n"
        f"        {v} = {v}.narrow(_d, 1, {v}.shape[_d] - 1)",
        f"_n{v} = {a}.shape[0]\nwhile _n{v} > 3:\n    _n{v} -= 2\n{v} = torch.ones(_n{v})",
        f"{v} = {a}.flatten() if {a}.numel() else {a}.new_ones(1)",
        f"{v} = {a}.new_empty({a}.shape).fill_({a}.shape[0])",
        f"{v} = {a}.expand(*{a}.shape) * {a}.dim()",
        f"{v} = torch.ones({a}.shape.numel() % 5)",
        f"if any(s == 0 for s in {a}.shape):\n    {v} = {a}.new_zeros(1)\nelse:\n"
        f"    {v} = {a}.flatten()[:1]",
        f"if all(s > 1 for s in {a}.shape):\n    {v} = {a}[(0,) * {nd}].reshape(1)\nelse:\n"
        f"    {v} = {a}.new_ones(1)",
        f"{v}, {w} = ({a}, {b}) if {a}.numel() >= {b}.numel() else ({b}, {a})",
        f"{v} = {a}.view(*{a}.shape, 1).squeeze(-1)",
        f"{v} = {a}.permute(*sorted(range({nd}), key=lambda i: {a}.shape[i]))",
    ]
    return rng.choice(forms)


def hopscan(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    t = env[a]
    d = rng.randrange(t.ndim)
    n, _ = _bsize(rng, env, a)
    w = v + "a"
    init = f"{a}.select({d}, 0).clone() * 0" if t.shape[d] else f"{a}.sum({d}) * 0"
    forms = [
        f"{v}, {w} = {HOP}.scan(lambda c, r: (c + r, c * 2), {init}, {a}, dim={d})",
        f"{v}, {w} = {HOP}.scan(lambda c, r: (c * 0.5 + r, (c - r).abs()), {init}, {a}, "
        f"dim={d}, reverse=True)",
        f"{v} = {HOP}.scan(lambda c, r: (torch.maximum(c, r), r + c), {init}, {a}, "
        f"dim={d})[1]",
        f"{v} = {HOP}.scan(lambda c, r: (c + r.sum(), r * c), {a}.sum() * 0, {a})[1]",
        f"{v} = {HOP}.map(lambda r: r * 2 + r.sum(), {a})",
        f"{v} = {HOP}.map(lambda r, q: r - q, {a}, {b}.sum())",
        f"{v} = {HOP}.map(lambda r: r.flip(0) if r.ndim else r, {a})",
        f"{v} = torch.cond({n} > 2, lambda t: t * t.shape[0], lambda t: t / max(t.shape[0], 1),"
        f" ({a},))",
        f"{v} = torch.cond({n} % 2 == 0, lambda t: t.cumsum(0), lambda t: t.flip(0), ({a},))",
        f"{v} = torch.cond({a}.numel() > {b}.numel(), lambda t, q: t + q.sum(), "
        f"lambda t, q: t - q.mean(), ({a}, {b}))",
        f"{v} = {HOP}.while_loop(lambda i, t: i < t.shape[0], lambda i, t: (i + 1, t * 1.5), "
        f"(torch.tensor(0), {a}))[1]",
        f"{v} = {HOP}.while_loop(lambda i, t: i < min(t.shape[-1], 3), lambda i, t: "
        f"(i + 1, t.roll(1, -1)), (torch.tensor(0), {a}))[1]",
    ]
    return rng.choice(forms)


def bmm1(rng, env, v):
    a = _t(env, rng, 2, True)
    if a is None:
        return None
    t = env[a]
    b = _t(env, rng, 2, True)
    forms = [
        f"{v} = {a}[:1] @ {a}.mT", f"{v} = {a}.mT @ {a}[:1]",
        f"{v} = {a}.unsqueeze(1) @ {a}.unsqueeze(0).mT",
        f"{v} = torch.matmul({a}, {a}.mT[:1])",
        f"{v} = {a} @ {a}.mean(-2, keepdim=True).mT",
        f"{v} = {a}.sum(0, keepdim=True) @ {a}.mT",
        f"{v} = {a}[..., :1, :] @ {a}.mT",
        f"{v} = {a}.mT @ {a}[..., :1]",
        f"{v} = torch.matmul({a}[..., 0, :], {a}.mT)",
        f"{v} = torch.matmul({a}, {a}[..., 0, :])",
        f"{v} = torch.einsum('...ij,...kj->...ik', {a}, {a}[:1])",
        f"{v} = F.linear({a}, {a}.flatten(0, -2)[:2]) if {a}.numel() else {a} * 1",
        f"{v} = F.linear({a}, {a}.reshape(-1, {a}.shape[-1])[:1], {a}.new_ones(1))",
    ]
    if t.ndim >= 3:
        forms += [f"{v} = torch.bmm({a}.flatten(0, -3), {a}.flatten(0, -3)[:1].expand("
                  f"{a}.flatten(0, -3).shape[0], -1, -1).mT)",
                  f"{v} = torch.baddbmm({a}.flatten(0, -3)[:, :, :1], {a}.flatten(0, -3), "
                  f"{a}.flatten(0, -3).mT)",
                  f"{v} = {a} @ {a}.sum(0).mT"]
    if b is not None and env[b].shape[-1] == t.shape[-1]:
        forms += [f"{v} = {a} @ {b}.mT", f"{v} = {a}[:1] @ {b}.flatten(0, -2).mT",
                  f"{v} = {a}.unsqueeze(0) @ {b}.reshape(-1, 1, {b}.shape[-1], 1)"
                  if env[b].numel() else f"{v} = {a}.sum(-1)"]
    return rng.choice(forms)


def constvals(rng, env, v):
    """Tensors the trace holds as values (made from sizes) through ops whose Python
    signature is not their ATen op's (keyword flags, tuples, several results)."""
    a, b = _two(rng, env)
    if a is None:
        return None
    n, _ = _bsize(rng, env, a)
    m, _ = _bsize(rng, env, b)
    k = f"_c{v}"
    src = rng.choice([f"torch.tensor([{n}, {m}, 3, {n}])", f"torch.tensor({a}.shape)",
                      f"torch.as_tensor({a}.shape)", f"torch.tensor([{n}, 0, {m}]).float()",
                      f"torch.tensor([[{n}, 1], [{m}, 0]])", f"torch.tensor({n} - {m})",
                      f"torch.arange(4) * {n} % 3", f"{a}.new_tensor([{n}, {m}])"])
    head = f"{k} = {src}\n"
    w = v + "a"
    forms = [
        f"{v} = torch.where({k} > 0)[0]", f"{v} = torch.where({k} > 1, {k}, -{k})",
        f"{v} = {k}.nonzero(as_tuple=True)[-1]", f"{v} = torch.nonzero({k}, as_tuple=False)",
        f"{v}, {w} = torch.unique({k}, return_inverse=True)",
        f"{v}, {w} = torch.unique({k}.flatten(), return_counts=True, sorted=True)",
        f"{v} = torch.unique_consecutive({k}.flatten(), return_counts=True)[1]",
        f"{v}, {w} = {k}.flatten().sort(descending=True, stable=True)",
        f"{v} = {k}.flatten().topk(2, largest=False).values",
        f"{v}, {w} = {k}.flatten().max(0, keepdim=True)",
        f"{v} = {k}.flatten().argsort(descending=True)",
        f"{v} = {k}.flatten().split([1, {k}.numel() - 1])[1]",
        f"{v} = torch.tensor_split({k}.flatten(), 2)[0]",
        f"{v} = {k}.flatten().cumsum(0, dtype=torch.float32)",
        f"{v} = torch.atleast_2d({k}) * 1", f"{v}, {w} = torch.meshgrid({k}.flatten(), "
        f"{k}.flatten()[:2], indexing='ij')",
        f"{v} = torch.cartesian_prod({k}.flatten()[:2], {k}.flatten())",
        f"{v} = torch.bucketize({k}.flatten(), torch.tensor([0, 2, 4]), right=True)",
        f"{v} = torch.searchsorted(torch.tensor([0, 1, 3, 7]), {k}.flatten(), side='right')",
        f"{v} = torch.histc({k}.float(), bins=4, min=0, max=8)",
        f"{v} = torch.diff({k}.flatten(), prepend={k}.flatten()[:1])",
        f"{v} = {k}.float().std(unbiased=False).reshape(1)",
        f"{v} = torch.round({k}.float() / 3, decimals=1)",
        f"{v} = {k}.float().nan_to_num(nan=1.0).norm(p=1).reshape(1)",
        f"{v} = torch.count_nonzero({k}, dim=0)",
        f"{v} = {a}.flatten()[:1] * {k}.flatten().sum()" if env[a].numel() else
        f"{v} = {a} * {k}.sum()",
        f"{v} = torch.ones(int({k}.abs().sum()) % 7)",
        f"{v} = torch.ones(sum({k}.flatten().tolist()) % 5)",
        f"{v} = torch.zeros({k}.flatten().abs().max().item() % 4 + 1)",
        f"{v} = {a} * {k}.flatten()[-1]",
        f"{v} = torch.full_like({k}, {n}).float()",
        f"{v} = torch.broadcast_tensors({k}.flatten()[:1], {a})[0].float()",
        f"{v} = {k}.flatten().float().kthvalue(1).values.reshape(1)",
        f"{v} = {k}.flatten().float().median().reshape(1)",
        f"{v} = {k}.flatten().float().mode().values.reshape(1)",
        f"{v} = {k}.flatten().bincount()",
        f"{v} = {k}.flatten().abs().repeat_interleave(2)",
        f"{v} = {k}.flatten().float().quantile(0.5).reshape(1)",
    ]
    return head + rng.choice(forms)


GAP_KINDS = {f.__name__: f for f in (ddviews, sizedims, pyscalars, shapeflow, hopscan, bmm1,
                                     constvals)}


def reference_scan(combine_fn, init, xs, *, dim=0, reverse=False, additional_inputs=()):
    """Eager ``scan`` for the fuzzer's oracle (torch's compiles each call with dynamo: about
    1 s): one tensor ``init`` and ``xs``, with torch's checks (``xs`` has ``dim`` and it is
    not empty; each round's carry has ``init``'s shape and dtype)."""
    if not isinstance(xs, torch.Tensor) or not isinstance(init, torch.Tensor):
        raise RuntimeError("reference_scan: one tensor init and xs only")
    if xs.ndim <= dim or xs.shape[dim] == 0:
        raise RuntimeError("All xs leaves must at least have 'dim' number of dimensions and "
                           "scan dimension > 0")
    d = dim % xs.ndim
    rows = torch.movedim(xs, d, 0)
    if reverse:
        rows = rows.flip(0)
    carry, outs = init, []
    for r in rows:
        carry, y = combine_fn(carry, r, *additional_inputs)
        if carry.shape != init.shape or carry.dtype != init.dtype:
            raise RuntimeError("scan: the carry changes shape or dtype")
        outs.append(y)
    out = torch.stack(outs)
    if reverse:
        out = out.flip(0)
    return carry, (torch.movedim(out, 0, d) if d < out.ndim else out)
