"""Statement kinds of the long fuzz run (benchmarks/fuzz.py) for what real models write and
the other grammars did not (session 30):

  sizegaps    size arithmetic broadcast against a size (``torch.ones(min(n, 2 * m + 1)) + x``:
              eager accepts it only where the two agree), ``len(str(n))`` of a size, a
              Python branch on sizes inside a ``torch.cond`` branch, ``chunk`` /
              ``tensor_split`` / ``split`` with a count computed from sizes, piece ``0`` /
              ``-1`` / ``1`` of them or all of them
  windows     ``unfold`` / ``as_strided`` windowing from sizes, ``scatter`` / ``gather`` /
              ``index_add`` / ``scatter_add`` with indices from sizes (``arange(n) % k``,
              ``arange(n).flip(0)``), ``masked_fill`` / ``where`` with masks from sizes
  modelops    reductions with ``keepdim`` over dynamic dims broadcast back, integer
              division chains of sizes, dtype promotion across int / float / bool (sizes
              as 0-d tensors, ``sum`` of bools, comparisons of ints), views after
              ``permute(...).contiguous()``, attention-like ``softmax(q @ k.mT / sqrt(d))``
  sizeargs    sizes as ops' arguments: ``topk`` / ``kthvalue`` k, ``roll`` shifts,
              ``tril`` / ``triu`` / ``diagonal`` offsets, fill values and clamp bounds,
              arange / slice steps, ``one_hot`` classes, ``unfold`` windows, ``narrow``,
              ``repeat_interleave`` by a tensor, ``F.pad`` by a size difference
"""

from __future__ import annotations

from tests.fuzz.grammar import _t
from tests.fuzz.grammar_cross import _bsize, _two


def sizegaps(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    t = env[a]
    n = f"{a}.shape[-1]"
    m, _ = _bsize(rng, env, b)
    d = rng.randrange(t.ndim)
    ad = f"{a}.shape[{d}]"
    count = rng.choice([f"{ad} // 2 + 1", f"max({m}, 1)", f"{m} % 3 + 1", f"min({ad}, 3) + 1",
                        f"max({ad} // 3, 1)", f"({ad} + {m}) // 2 + 1"])
    piece = rng.choice(["[0]", "[-1]", "[1]" if rng.random() < 0.5 else "[0]"])
    forms = [
        f"{v} = torch.ones(min({n}, 2 * {m} + 1)) + {a}",
        f"{v} = {a} * torch.arange(min({n}, {m} + 1)).float()",
        f"{v} = {a} + torch.zeros(max({n} // 2, {m} - 1) * 2 - {n} + 1)",
        f"{v} = torch.ones(len(str({n}))) * {a}.sum()",
        f"{v} = {a}.flatten()[:len(str({ad} * 7))]",
        f"{v} = {a}.chunk({count}, {d}){piece}",
        f"{v} = {a}.tensor_split({count}, {d}){piece}",
        f"{v} = torch.tensor_split({a}, {count}, dim={d}){piece}",
        f"{v} = {a}.split(max({m}, 1), {d}){piece}",
        f"{v} = torch.stack([p.sum() for p in {a}.chunk({count}, {d})])",
        f"{v} = torch.ones(len({a}.tensor_split({count}, {d})))",
        f"{v} = torch.cat({a}.tensor_split({count}, {d})[::-1], {d})",
    ]
    if t.is_floating_point():
        inner = rng.choice([
            "    if u.shape[0] > 2:\n        return u * 2\n    return u + 1",
            "    k = u.shape[-1] // 2\n    return u.sum() * k + u.mean()" if t.ndim else
            "    return u * 1",
            "    if u.numel() % 2 == 0:\n        return u.flip(0)\n    return u.abs()",
            "    return u[:max(u.shape[0] - 1, 0)].sum() + u.sum()",
        ])
        same = "u.sum() + 1" if "sum() * k" in inner or ".sum() + u" in inner else "u * 0.5"
        pred = rng.choice([f"{ad} > 1", f"{ad} % 2 == 0", f"{ad} >= {m}"])
        forms.append(f"def _br{v}(u):\n{inner}\n"
                     f"{v} = torch.cond({pred}, _br{v}, lambda u: {same}, ({a},))")
    return rng.choice(forms)


def windows(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    n = f"{a}.shape[0]"
    L = f"{a}.shape[-1]"
    k = rng.choice(["1", "2", "3"])
    idx = rng.choice([f"torch.arange({n}) % max({L}, 1)", f"torch.arange({n}).flip(0)",
                      f"torch.arange({n}) // 2", f"(torch.arange({n}) * 3) % max({n}, 1)"])
    forms = [
        f"{v} = {a}.unfold(-1, {k}, 1).sum(-1)", f"{v} = {a}.unfold(0, {k}, {k})",
        f"{v} = {a}.unfold(-1, min({L}, 2), 2)",
        f"{v} = {a}.contiguous().flatten().as_strided((max({a}.numel() - 1, 0), 2), (1, 1))"
        f" if {a}.numel() else {a}.flatten()",
        f"{v} = {a}.flatten().as_strided(({a}.numel() // 2, 2), (2, 1))",
        f"{v} = {a}.flatten()[{idx} % max({a}.numel(), 1)]" if t.numel() else f"{v} = {a} * 1",
        f"{v} = {a}.index_select(0, {idx} % max({n}, 1))" if t.shape[0] else f"{v} = {a}[:0]",
        f"{v} = {a}.new_zeros({n} + 1).index_add(0, {idx} % ({n} + 1), {a}.flatten(1).sum(1))",
        f"{v} = torch.zeros({n} + 2).scatter_add(0, {idx} % ({n} + 2), {a}.flatten(1).sum(1))",
        f"{v} = torch.zeros({n} + 2).scatter(0, torch.arange({n}) + 1, {a}.flatten(1)"
        f".amax(1) if {a}.flatten(1).shape[1] else {a}.flatten(1).sum(1))",
        f"{v} = {a}.gather(0, (torch.arange({n}) % max({n}, 1)).reshape(-1, *[1] * "
        f"({a}.ndim - 1)).expand_as({a}))",
        f"{v} = {a}.gather(-1, torch.zeros_like({a}, dtype=torch.long))" if t.shape[-1]
        else f"{v} = {a} * 2",
        f"{v} = {a}.masked_fill((torch.arange({L}) % 2 == 1) & (torch.arange({L}) < {L} // 2),"
        f" -2.0)",
        f"{v} = torch.where(torch.arange({n}).reshape(-1, *[1] * ({a}.ndim - 1)) >= {n} // 2, "
        f"{a}, {a} * -1)",
        f"{v} = {a}.masked_fill(torch.arange({L}) >= {L} - 1, float('-inf')).softmax(-1)",
        f"{v} = {a}.new_zeros({n}, {n}).masked_fill(torch.ones({n}, {n}, dtype=torch.bool)"
        f".tril(), 1.0).cumsum(-1)",
    ]
    return rng.choice(forms)


def modelops(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    d = rng.randrange(t.ndim)
    n = f"{a}.shape[{d}]"
    perm = list(range(t.ndim))
    rng.shuffle(perm)
    p = ", ".join(map(str, perm))
    forms = [
        f"{v} = {a} - {a}.mean({d}, keepdim=True)",
        f"{v} = {a} / ({a}.abs().sum({d}, keepdim=True) + 1)",
        f"{v} = ({a} - {a}.amax({d}, keepdim=True)).exp()" if t.shape[d] else f"{v} = {a} * 3",
        f"{v} = {a}.var({d}, keepdim=True, correction=0) + {a}",
        f"{v} = {a}.norm(dim={d}, keepdim=True) * {a}",
        f"{v} = {a}.sum(({d}, -1), keepdim=True).expand_as({a})",
        f"{v} = torch.ones(({n} // 2 + 1) // 2 * 3 // 2 + 1)",
        f"{v} = torch.arange({n} * 3 // 4 % 5 + {n} // 3 // 2).float()",
        f"{v} = {a}.flatten()[{a}.numel() // 3 // 2:{a}.numel() // 2 * 2 // 3 + 1]",
        f"{v} = {a} * torch.tensor({n}) + ({a} > 0)",
        f"{v} = ({a} > 0).sum({d}) * 0.5 + ({a} > 0).sum({d}) // 2",
        f"{v} = ({a} > 0).long() + torch.tensor({n} // 2, dtype=torch.int32)",
        f"{v} = {a} * ({n} > 2) + ({a}.long() // 2 == {n})",
        f"{v} = torch.tensor([{n}, {n} // 2]).float().mean() + {a}",
        f"{v} = ({a}.int() + True) * {a} / max({n}, 1)",
        f"{v} = {a}.permute({p}).contiguous().view(-1)",
        f"{v} = {a}.permute({p}).contiguous().view({a}.shape[{perm[0]}], -1)",
        f"{v} = {a}.permute({p}).reshape(-1, {a}.shape[{perm[-1]}])",
        f"{v} = {a}.transpose(0, -1).contiguous().view(*{a}.transpose(0, -1).shape)",
    ]
    if t.ndim >= 2:
        q = f"{a}.flatten(0, -3) if {a}.ndim > 2 else {a}"
        forms.append(f"_q = {q}\n{v} = (_q @ _q.mT / math.sqrt(max(_q.shape[-1], 1)))"
                     f".softmax(-1) @ _q")
        forms.append(f"_q = {q}\n{v} = (_q @ _q.mT).masked_fill(torch.ones(_q.shape[-2], "
                     f"_q.shape[-2], dtype=torch.bool).triu(1), float('-inf')).softmax(-1)")
    return rng.choice(forms)


def sizeargs(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    t = env[a]
    n = f"{a}.shape[0]"
    L = f"{a}.shape[-1]"
    m, _ = _bsize(rng, env, b)
    forms = [
        f"{v} = {a}.topk(min({L}, {m} + 1), -1).values",
        f"{v} = {a}.topk(min({L}, 2), -1, largest=False).indices.float()",
        f"{v} = {a}.sort(-1).values[..., :max({L} - {m}, 0)]",
        f"{v} = {a}.kthvalue(max(min({L}, {m}), 1), -1).values" if t.shape[-1] else
        f"{v} = {a} * 1",
        f"{v} = torch.roll({a}, {L} // 2 + {m}, -1)",
        f"{v} = torch.tril({a}, {m} - {L})" if t.ndim >= 2 else f"{v} = {a}.flip(0)",
        f"{v} = torch.triu({a}, {L} // 2)" if t.ndim >= 2 else f"{v} = {a}.cumsum(0)",
        f"{v} = {a}.new_full(({m}, {L}), {n}) + 0.5",
        f"{v} = torch.full(({n},), {m} / 2)",
        f"{v} = {a}.clamp(min={m} // 2 - 1, max={L})",
        f"{v} = {a} + {m} - {n} // 2",
        f"{v} = ({a} * 3).long() // max({m}, 1) + {n}",
        f"{v} = torch.arange(0, {L} + {m}, max({m}, 1)).float()",
        f"{v} = {a}[..., ::max({m}, 1)]",
        f"{v} = {a}[::max({m} // 2, 1)]",
        f"{v} = F.one_hot(torch.arange({n}) % max({m}, 1), max({m}, 1)).float()",
        f"{v} = {a}.unfold(-1, min({L}, {m} + 1), max({m}, 1))" if t.shape[-1] else
        f"{v} = {a} * 2",
        f"{v} = {a}.narrow(0, {n} // 3, {n} // 3)",
        f"{v} = {a}.diff(dim=-1)",
        f"{v} = torch.diagonal({a}, {m} % 3 - 1, 0, -1)" if t.ndim >= 2 else f"{v} = {a}",
        f"{v} = {a}.cumsum(-1, dtype=torch.float64)[..., {m} % max({L}, 1):]",
        f"{v} = {a}.repeat_interleave(torch.arange({n}) % 3, 0)",
        f"{v} = F.pad({a}, ({m} - {L}, 0)) if {m} >= 0 else {a}",
        f"{v} = {a}.flatten()[torch.arange({a}.numel() // 2) * 2]",
    ]
    return rng.choice(forms)


MODEL_KINDS = {f.__name__: f for f in (sizegaps, windows, modelops, sizeargs)}
