"""Statement kinds of the long fuzz run (benchmarks/fuzz.py) for operator families the other
grammars reach little or not at all, as a fuzzer written from torch's op list would:

  structured  multi-output ops and their ``.values`` / ``.indices`` (``topk``, ``sort``,
              ``max`` / ``min`` / ``kthvalue`` / ``mode`` / ``median`` with a dim, ``cummax``,
              ``aminmax``, ``var_mean``), unpacked into two names, with ``k`` from sizes and
              on tensors built in forward from constants or sizes (ties included)
  scatter     ``gather`` / ``take_along_dim`` / ``take``, ``scatter`` (src, value, reduce),
              ``scatter_add``, ``scatter_reduce``, ``index_add`` / ``index_copy`` /
              ``index_put`` / ``index_fill``, ``masked_scatter``, ``select_scatter`` /
              ``slice_scatter`` / ``diagonal_scatter``, in place on clones and on views
  cumulative  ``cumsum`` / ``cumprod`` (dtype=, of int and bool tensors), ``cummin``,
              ``logcumsumexp``, ``diff`` (n, prepend, append)
  masked      ``where`` (0-d and Python operands, one-argument form), ``masked_fill`` with
              a 0-d tensor value and masks from sizes, ``clamp`` with tensor bounds,
              ``nan_to_num``, ``isin``
  padmodes    ``F.pad`` in reflect / replicate / circular / constant modes, 1-3 padded dims,
              amounts from sizes and negative ones
  resample    ``F.interpolate`` with ``size`` from shapes or scale factors, every mode
              (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area,
              antialias), ``align_corners``, ``recompute_scale_factor``; 2-d pooling
  folds       ``Tensor.unfold`` with sizes from shapes, ``F.unfold`` / ``F.fold``,
              ``pixel_shuffle``, ``channel_shuffle``
  contract    ``einsum`` (ellipsis, traces, outer products, batch), ``tensordot``,
              ``matmul`` of 1-d / n-d, ``bmm``, ``kron``, ``outer``, ``block_diag``
  promote0d   integer / bool / half tensors with 0-d tensors (``torch.tensor(n)`` of a size,
              ``x.sum()``) and each other: category and dimension rules of promotion,
              integer overflow, true and floor division of integers, shifts
  sizeops     ops whose Python int arguments come from sizes: ``tril`` / ``triu`` diagonals,
              ``histc`` bins, ``bincount`` minlength, ``searchsorted`` / ``bucketize``,
              ``repeat_interleave``, ``roll``, ``diag_embed``, ``one_hot``, ``embedding``,
              ``layer_norm`` / ``group_norm`` shapes, ``cross_entropy`` targets
  layers      convolutions (same / valid / strided / grouped / transposed) with weights made
              from sizes, ``scaled_dot_product_attention`` (causal, masks, GQA-like),
              ``embedding_bag``, linalg (det, inv, solve, norms, qr, svdvals, eigvalsh,
              cdist), ``lstm_cell`` / ``gru_cell``, batch / instance / rms / local norms, losses
"""

from __future__ import annotations

from tests.fuzz.grammar import _t


def _nd(a, nd, have):
    """`a` (with `have` dims) as source of a tensor with `nd` dims: leading dims added
    (``[None]``) or folded into the first (``flatten``)."""
    if have < nd:
        return f"{a}[{'None, ' * (nd - have)}...]"
    if have > nd:
        return f"{a}.flatten(0, {have - nd})"
    return a


def _small(t, limit=48):
    """Whether `t` is small enough at the example for a form whose result grows as the
    square of it (chained, such forms made a run's memory explode at later sizes)."""
    return t.numel() <= limit


def _k(rng, s):
    """A count between 0 and the size `s` (as source)."""
    return rng.choice(["1", f"min(2, {s})", f"{s} // 2", s, f"max({s} - 1, 0)"])


def structured(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    d = rng.randrange(t.ndim)
    s = f"{a}.shape[{d}]"
    k = _k(rng, s)
    w = v + "a"
    c = f"{a}.contiguous()"   # (median / mode of an expanded view read unset memory)
    built = rng.choice([f"torch.arange({s}).float()", f"(torch.arange({s}) % 3).float()",
                        f"(torch.arange({s}).flip(0) * 1.0)", f"torch.ones({s})",
                        f"torch.linspace(-1, 1, {s})"])
    return rng.choice([
        f"{v} = {a}.topk({k}, {d}).values", f"{v} = {a}.topk({k}, {d}, largest=False).indices",
        f"{v}, {w} = torch.topk({a}, {k}, dim={d})",
        f"{v} = {a}.topk({k}, {d}, sorted=False).values.sort({d}).values",
        f"{v} = {a}.sort({d}).values", f"{v}, {w} = {a}.sort({d}, descending=True)",
        f"{v} = {a}.sort(dim={d}, stable=True).indices", f"{v} = {a}.argsort({d}, descending=True)",
        f"{v}, {w} = {a}.max({d})", f"{v} = {a}.min({d}, keepdim=True).indices",
        f"{v} = torch.max({a}, {d}, True)[0] - {a}",
        f"{v}, {w} = {a}.kthvalue(max({k}, 1), {d})", f"{v} = {c}.mode({d}).values",
        f"{v} = {c}.median({d}).indices", f"{v} = {c}.nanmedian({d}, keepdim=True).values",
        f"{v}, {w} = {a}.cummax({d})", f"{v} = {a}.cummin({d})[1]",
        f"{v}, {w} = torch.aminmax({a}, dim={d})", f"{v} = torch.aminmax({a}).min",
        f"{v}, {w} = torch.var_mean({a}, {d}, correction=0)",
        f"{v} = torch.std_mean({a}, dim={d}, keepdim=True)[1]",
        f"{v} = {a}.msort()", f"{v} = {a}.flatten().topk(min({a}.numel(), 3)).values",
        # tensors built in forward from sizes (ties: both sides run the same kernel)
        f"{v} = {built}.topk(min(3, {s})).indices",
        f"{v} = {built}.sort(stable=True).indices",
        f"{v}, {w} = {built}.sort(descending=True, stable=True)",
        f"{v} = {built}.max(0).indices.reshape(1)",
        f"{v} = {built}.median(0).values * {a}",
        f"{v} = {built}.mode(0).values + {a}",
        f"{v} = {built}.kthvalue(max(1, {s} // 2)).values.expand({s})",
        f"{v}, {w} = {built}.cummax(0)",
        f"{v} = torch.tensor([3.0, 1.0, 2.0]).topk(2).indices * {s}",
        f"{v} = torch.tensor([[1.0, 5.0], [4.0, 2.0]]).max(1).indices + {s}",
        f"{v} = torch.arange({s} * 2).reshape({s}, 2).float().median(1).values",
        f"{v} = torch.arange({s} * 2).reshape(2, {s}).float().min(1, keepdim=True).indices",
    ])


def scatter(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    d = rng.randrange(t.ndim)
    s = f"{a}.shape[{d}]"
    n0 = f"{a}.shape[0]"
    w = v + "a"
    c = f"{v} = {a}.clone()\n"
    lead = ":, " * d
    return rng.choice([
        f"{v} = {a}.gather({d}, {a}.argsort({d}))",
        f"{v} = {a}.gather({d}, torch.zeros_like({a}, dtype=torch.long))",
        f"{v} = torch.take_along_dim({a}, {a}.argmax({d}, keepdim=True), {d})",
        f"{v} = torch.take_along_dim({a}, {a}.argsort({d}), dim={d})",
        f"{v} = {a}.take(torch.arange({a}.numel()) // 2)",
        f"{v} = {a}.flatten().take(torch.tensor([0, -1])) if {a}.numel() else {a}.new_ones(2)",
        f"{v} = torch.zeros_like({a}).scatter({d}, {a}.argsort({d}), {a})",
        f"{v} = {a}.scatter({d}, {a}.argmin({d}, keepdim=True), 1.5)",
        f"{v} = torch.zeros_like({a}).scatter_add({d}, torch.zeros_like({a}, "
        f"dtype=torch.long), {a})",
        f"{v} = {a}.scatter_reduce({d}, {a}.argsort({d}), {a} * 2, reduce="
        f"'{rng.choice(['sum', 'prod', 'mean', 'amax', 'amin'])}', "
        f"include_self={rng.random() < 0.5})",
        f"{v} = torch.zeros({s} + 1).scatter_reduce(0, torch.arange({s}) % 2, torch.ones({s}), "
        f"'sum')",
        f"{v} = {a}.index_add({d}, torch.arange({s}).flip(0), {a}, alpha=2)",
        f"{v} = {a}.index_copy({d}, torch.arange({s}).roll(1), {a} * 2)",
        f"{v} = {a}.index_fill({d}, torch.arange(0, {s}, 2), -1.0)",
        f"{v} = {a}.index_put((torch.arange({n0}).flip(0),), {a})",
        f"{v} = {a}.index_put((torch.arange({n0}) % 2,), {a}, accumulate=True)",
        f"{v} = torch.zeros({s} + 1).index_put_((torch.arange({s}),), torch.ones({s}))",
        f"{v} = {a}.masked_scatter({a} > 0, {a} * 10)",
        f"{v} = {a}.select_scatter({a}.select({d}, 0) * 0, {d}, 0)",
        f"{v} = {a}.select_scatter({a}.select({d}, -1) + 1, {d}, -1)",
        f"{v} = {a}.slice_scatter({a}[{lead}::2] * 0, {d}, 0, None, 2)",
        f"{v} = {a}.slice_scatter({a}[{lead}1:] + 1, {d}, 1)",
        f"{v} = {a}.diagonal_scatter({a}.diagonal() * 0)" if t.ndim >= 2
        else f"{v} = {a}.slice_scatter({a}[:0], 0, 0, 0)",
        # in place, on clones and on views of them
        c + f"{v}.scatter_({d}, {a}.argsort({d}), {a} * 3)",
        c + f"{v}.scatter_add_({d}, torch.zeros_like({a}, dtype=torch.long), {a})",
        c + f"{v}.index_add_({d}, torch.arange({s}), torch.ones_like({a}))",
        c + f"{v}.index_put_(({v} > 0,), torch.tensor(7.0))",
        c + f"{v}[torch.arange({n0}) % 2 == 1] = {a}.sum()",
        c + f"{v}[torch.arange({n0}).flip(0)] = {a}",
        c + f"{v}.index_put_((torch.tensor([0]),), torch.tensor(2.0), accumulate=True)",
        c + f"{w} = {v}.transpose(0, -1)\n{w}.index_fill_(0, torch.tensor([0]), 3.0)",
        c + f"{w} = {v}[{lead}::2]\n{w}.masked_scatter_({w} < 0, torch.ones_like({w}))",
        c + f"{w} = {v}.narrow({d}, 0, {s} // 2)\n{w}.scatter_({d}, {w}.argsort({d}), 0.0)",
    ])


def cumulative(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    d = rng.randrange(env[a].ndim)
    s = f"{a}.shape[{d}]"
    return f"{v} = " + rng.choice([
        f"{a}.cumsum({d}, dtype=torch.float64)", f"({a} > 0).cumsum({d})",
        f"({a} > 0).int().cumsum({d})", f"({a} * 3).long().cumprod({d})",
        f"{a}.cumprod({d})", f"torch.cumsum({a}, dim={d}).flip({d})",
        f"{a}.flip({d}).cumsum({d}).flip({d})", f"{a}.logcumsumexp({d})",
        f"torch.cummin({a}, {d}).values", f"({a} > 0).cummax({d}).values",
        f"torch.diff({a}, dim={d})", f"torch.diff({a}, n=2, dim={d})",
        f"{a}.diff(dim={d}, prepend={a}.narrow({d}, 0, 1))",
        f"{a}.diff(dim={d}, append={a} * 2)", f"({a} > 0).diff(dim={d})",
        f"{a}.long().diff(n={rng.randint(0, 3)}, dim={d})",
        f"{a}.cumsum({d}) / torch.arange(1, {s} + 1).reshape("
        f"[-1 if i == {d} else 1 for i in range({a}.ndim)])",
        f"{a}.cumsum({d}).select({d}, -1)", f"torch.cumsum({a}.flatten(), 0)[-1:]",
    ])


def masked(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    d = rng.randrange(env[a].ndim)
    s = f"{a}.shape[{d}]"
    last = f"{a}.shape[-1]"
    return f"{v} = " + rng.choice([
        f"torch.where({a} > 0, {a}, {a}.sum())", f"torch.where({a} > 0, {a}, torch.zeros(()))",
        f"torch.where({a} > {a}.mean(), 1.0, {a}.double())",
        f"torch.where({a} > 0, {a}.long(), -1)", f"torch.where({a} > 0, True, {a} < -1)",
        f"{a}.where({a} < 0, torch.tensor(1.0))", f"torch.where({a} > 0)[0].float()",
        f"torch.where(torch.arange({last}) % 2 == 0, {a}, -{a})",
        f"{a}.masked_fill(torch.arange({last}) < {last} // 2, 0.0)",
        f"{a}.masked_fill({a} > 1, {a}.sum())",
        f"{a}.masked_fill(torch.ones({last}, dtype=torch.bool), float('-inf')).exp()",
        f"{a}.masked_fill({a}.isnan() | ({a} > 1), float('-inf')).softmax({d})",
        f"torch.clamp({a}, {a} * 0, {a} * 0 + 0.5)", f"{a}.clamp(min={a}.mean())",
        f"{a}.clamp(max=torch.zeros({last}))", f"{a}.clamp_min(0.5).clamp_max({a}.sum())",
        f"({a} / 0).nan_to_num(posinf=1.0, neginf=-1.0)", f"({a}.log()).nan_to_num()",
        f"torch.isin(torch.arange({s}), torch.tensor([0, 2]))",
        f"torch.isin(({a} * 2).round(), torch.tensor([0.0, 1.0]))",
        f"torch.where({a}.abs() < 0.5, {a}, torch.full_like({a}, {s}))",
        f"({a} > 0).logical_xor({a} < 0.5)", f"torch.logical_not({a}).float() * {s}",
    ])


def padmodes(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    mode = rng.choice(["reflect", "replicate", "circular", "constant"])
    k = rng.randint(1, 3)                      # dims padded
    nd = rng.choice([k + 1, k + 2])            # (batchless or batched)
    x = _nd(a, nd, t.ndim)
    last = f"{a}.shape[-1]"
    amounts = []
    for _ in range(2 * k):
        amounts.append(rng.choice(["0", "1", "2", f"{last} // 2", f"min(1, {last})"]
                                  + (["-1"] if mode == "constant" else [])))
    extra = f", value={rng.choice([0.5, -1.0])}" if mode == "constant" and rng.random() < 0.5 \
        else ""
    return f"{v} = F.pad({x}, ({', '.join(amounts)}), mode='{mode}'{extra})"


def resample(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    k = rng.randint(1, 3)                       # spatial dims
    x = _nd(a, k + 2, t.ndim)
    last = f"{a}.shape[-1]"
    modes = {1: ["nearest", "nearest-exact", "linear", "area"],
             2: ["nearest", "nearest-exact", "bilinear", "bicubic", "area"],
             3: ["nearest", "nearest-exact", "trilinear", "area"]}[k]
    mode = rng.choice(modes)
    grow = _small(t, 256)   # (an upsampled result feeds others: only of small inputs)
    size = rng.choice([f"{last} * 2", f"{last} + 1", f"{a}.shape[0] + 1"] * grow
                      + [f"max({last} // 2, 1)", "3"])
    sizes = ", ".join([size] + [rng.choice(["2", size]) for _ in range(k - 1)])
    scales = ", ".join(str(rng.choice([0.5, 1 / 3] + [2, 1.5, 2.5] * grow)) for _ in range(k))
    opts = ""
    if mode in ("linear", "bilinear", "bicubic", "trilinear"):
        opts = f", align_corners={rng.random() < 0.5}"
        if mode in ("bilinear", "bicubic") and rng.random() < 0.3:
            opts += ", antialias=True"
    which = rng.random()
    if which < 0.45:
        call = f"F.interpolate({x}, size=({sizes},), mode='{mode}'{opts})"
    elif which < 0.9:
        rec = ", recompute_scale_factor=True" if rng.random() < 0.3 else ""
        call = f"F.interpolate({x}, scale_factor=({scales},), mode='{mode}'{opts}{rec})"
    else:
        pool = rng.choice([f"F.max_pool2d({_nd(a, 4, t.ndim)}, 2, 1, 1, ceil_mode=True)",
                           f"F.avg_pool2d({_nd(a, 4, t.ndim)}, (1, 2), ceil_mode=True, "
                           f"count_include_pad=False)",
                           f"F.adaptive_max_pool2d({_nd(a, 4, t.ndim)}, (2, 3))",
                           f"F.lp_pool1d({_nd(a, 3, t.ndim)}, 2, 2)",
                           f"F.max_pool1d({_nd(a, 3, t.ndim)}, 2, return_indices=True)[1]"])
        return f"{v} = {pool}"
    return f"{v} = {call}"


def folds(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    d = rng.randrange(t.ndim)
    s = f"{a}.shape[{d}]"
    x4 = _nd(a, 4, t.ndim)
    x3 = _nd(a, 3, t.ndim)
    return f"{v} = " + rng.choice([
        f"{a}.unfold({d}, min(2, {s}), 1)", f"{a}.unfold({d}, {s}, 1)",
        f"{a}.unfold({d}, 1, max({s} // 2, 1))", f"{a}.unfold({d}, min(3, {s}), 2).sum(-1)",
        f"F.unfold({x4}, 1)", f"F.unfold({x4}, (1, 2), padding=(0, 1))",
        f"F.unfold({x4}, 2, stride=2, padding=1)",
        f"F.fold(F.unfold({x4}, (1, 2), padding=(0, 1)), {x4}.shape[-2:], (1, 2), padding=(0, 1))",
        f"F.fold(F.unfold({x4}, 1), ({x4}.shape[-2], {x4}.shape[-1]), 1)",
        f"F.pixel_shuffle({x4}.repeat(1, 4, 1, 1), 2)",
        f"F.channel_shuffle({x3}.repeat(1, 2, 1), 2)",
        f"F.pixel_unshuffle({x4}.repeat(1, 1, 2, 2), 2)",
    ])


def contract(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    b = _t(env, rng, 1, True)
    m = _nd(a, 2, t.ndim) if t.ndim != 2 else a
    m3 = _nd(a, 3, t.ndim)
    f = f"{a}.flatten()"
    g = f"{b}.flatten()"
    forms = [
        f"torch.einsum('ij->ji', {m})", f"torch.einsum('...i,...i->...', {a}, {a})",
        f"torch.einsum('ij,ij->', {m}, {m})",
        f"torch.einsum('...->', {a})", f"torch.einsum('i...->...', {a})",
        f"torch.einsum('ii->i', {m}[:, :min({m}.shape)][:min({m}.shape)])",
        f"torch.einsum('ii', {m}[:min({m}.shape), :min({m}.shape)])",
        f"{f} @ {f}", f"torch.matmul({a}, torch.ones({a}.shape[-1], 2))",
        f"torch.matmul(torch.ones(2, {a}.shape[0]), {a})" if t.ndim <= 2
        else f"torch.matmul({a}.mT, {a})",
        f"torch.tensordot({m}, {m}, dims=2)", f"torch.outer({f}, {g}[:3])",
        f"torch.mv({m}, torch.ones({m}.shape[1]))", f"torch.dot({f}, {f}.flip(0))",
        f"torch.cartesian_prod({f}[:3], torch.arange(2.0))",
    ]
    if _small(t):   # (results quadratic in the operand: only of small ones)
        forms += [
            f"torch.einsum('i,j->ij', {f}, {g}[:8])", f"torch.einsum('ij,kj->ik', {m}, {m})",
            f"torch.einsum('bij,bkj->bik', {m3}, {m3})",
            f"torch.einsum({m}, [0, 1], {m}, [2, 1], [0, 2])",
            f"{a} @ {a}.mT" if t.ndim >= 2 else f"{a} @ {a}", f"torch.bmm({m3}, {m3}.mT)",
            f"torch.tensordot({a}, {a}, dims=([0], [0]))", f"torch.kron({m}, torch.ones(2, 1))",
            f"torch.block_diag({m}, {m} * 2)",
        ]
    return f"{v} = " + rng.choice(forms)


def promote0d(rng, env, v):
    a = _t(env, rng, 0, True)
    if a is None:
        return None
    n = f"{a}.shape[0]" if env[a].ndim else "3"
    return f"{v} = " + rng.choice([
        f"{a}.long() + ({a} > 0)", f"({a} > 0) + ({a} < 0.5)", f"({a} > 0) * ({a} < 1)",
        f"({a} > 0).int() - ({a} < 1).int()", f"{a}.int() / ({a} * 2).int().clamp(min=1)",
        f"{a}.long() // 2 * {a}.int()", f"torch.tensor(3) * {a}", f"torch.tensor(3) * {a}.int()",
        f"torch.tensor(2.5, dtype=torch.float64) * {a}.int()",
        f"torch.tensor(2.5, dtype=torch.float64) * {a}",
        f"torch.tensor([2.5], dtype=torch.float64) * {a}", f"{a}.sum() + {a}.long()",
        f"{a}.half() + {a}.sum()", f"{a}.half() * torch.tensor(1e4)",
        f"({a} * 100).to(torch.uint8) - 1", f"({a} * 100).to(torch.int8) * 3",
        f"(({a} * 10).to(torch.int16) >> 1) << 2", f"{a}.bool().sum()",
        f"{a}.long().float().mean()", f"{a}.long().prod()", f"torch.tensor({n}) * {a}",
        f"torch.tensor({n}) + {a}.long()", f"torch.tensor({n}) / torch.tensor(2)",
        f"torch.scalar_tensor({n}) + {a}", f"{a}.new_tensor({n}) * {a}",
        f"torch.as_tensor({n}) + ({a} > 0)", f"{a}.int().bitwise_xor(torch.tensor({n}))",
        f"{a}.long().div({n} + 1, rounding_mode='floor')",
        f"{a}.long().div(torch.tensor({n}) + 1, rounding_mode='trunc')",
        f"({a} * 4).long() % torch.tensor(-3)", f"{a}.long() ** 2",
        f"2 ** ({a} * 3).long().clamp(0, 8)", f"{a}.long().float_power(2)",
        f"({a} > 0).float() @ ({a} > 0).float()" if env[a].ndim == 1 else f"({a} > 0).float()",
        f"{a}.to(torch.bfloat16) + torch.tensor(1.0, dtype=torch.float64)",
        f"torch.maximum({a}.long(), torch.tensor(0))", f"torch.minimum({a}, {a}.sum().long())",
        f"{a}.sum().long() + {a}.half()", f"({a} > 0).sum() * 0.5",
        f"torch.tensor(True) & ({a} > 0)", f"torch.tensor(1, dtype=torch.uint8) + {a}.to("
        f"torch.int8)",
    ])


def sizeops(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    d = rng.randrange(t.ndim)
    s = f"{a}.shape[{d}]"
    m = _nd(a, 2, t.ndim) if t.ndim != 2 else a
    x3 = _nd(a, 3, t.ndim)
    last = f"{a}.shape[-1]"
    grows = [f"{a}.repeat_interleave({s}, {d})", f"{a}.diag_embed()",
             f"torch.diag({a}.flatten(), 1)"] if _small(t) else []
    return f"{v} = " + rng.choice(grows + [
        f"{m}.tril({s} // 2 - 1)", f"{m}.triu(1 - {s})", f"torch.tril_indices({s}, {s})",
        f"torch.triu_indices(3, {s}, 1)", f"torch.ones({s}, {s}).triu(1).bool()",
        f"torch.histc({a}, bins={s} + 1, min=-2, max=2)",
        f"torch.bincount(torch.arange({s}) % 3)",
        f"torch.bincount(({a} > 0).long().flatten(), minlength={s})",
        f"torch.searchsorted(torch.linspace(-1, 1, {s}), {a})",
        f"torch.bucketize({a}, torch.tensor([-0.5, 0.0, 0.5]), right=True)",
        f"{a}.repeat_interleave(2, {d})",
        f"torch.repeat_interleave(torch.arange({s}))",
        f"{a}.repeat_interleave(torch.arange({s}) % 2, {d})",
        f"{a}.roll({s} // 2, {d})", f"{a}.roll(({s}, 1), ({d}, 0))",
        f"{m}.diagonal(offset=1)",
        f"{m}.diagonal(offset=-{m}.shape[0] // 2)", f"{m}.trace()" if t.ndim == 2 else
        f"{a}.rot90(1, (0, -1))" if t.ndim >= 2 else f"{a}.flip(0)",
        f"torch.meshgrid(torch.arange({s}), torch.arange(2), indexing='ij')[0]",
        f"F.one_hot(torch.arange({s}) % 3, 3)", f"F.one_hot(torch.arange({s}), {s} + 1)",
        f"F.embedding(torch.arange({s}) % 3, torch.arange(6.0).reshape(3, 2))",
        f"F.layer_norm({a}, {a}.shape[-1:])", f"F.layer_norm({a}, {a}.shape[{d}:])",
        f"F.group_norm({x3}, 1)", f"F.normalize({a}, dim={d})", f"F.glu({a}.repeat("
        f"*[2 if i == {d} else 1 for i in range({a}.ndim)]), {d})",
        f"F.cross_entropy({m}, torch.arange({m}.shape[0]) % {m}.shape[1])",
        f"F.nll_loss({m}.log_softmax(1), torch.zeros({m}.shape[0], dtype=torch.long), "
        f"reduction='sum')",
        f"F.cosine_similarity({a}, {a}.flip(0), dim={d})", f"F.mse_loss({a}, {a}.flip(0))",
        f"F.linear({a}, torch.ones(3, {last}))", f"F.linear({a}, torch.eye({last}), "
        f"torch.arange({last}) * 1.0)",
        f"F.softplus({a}, beta=2)", f"F.hardtanh({a}, -0.5, 0.5)",
        f"F.gelu({a}, approximate='tanh')", f"F.dropout({a}, 0.5, training=False)",
        f"F.logsigmoid({a}) * {s}", f"torch.full(({s},), {s})", f"torch.arange({s} / 2)",
        f"torch.linspace(0, {s}, 4)", f"{a} ** ({s} % 3)", f"{a}.clamp(max={s} / 2)",
        f"torch.tensor([{s}, {s} + 1]) * {a}.sum()",
    ])


def layers(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    x3 = _nd(a, 3, t.ndim)
    x4 = _nd(a, 4, t.ndim)
    c3, c4 = f"{x3}.shape[1]", f"{x4}.shape[1]"
    m = _nd(a, 2, t.ndim) if t.ndim != 2 else a
    k = rng.choice([1, 2, 3])
    grows = [f"torch.linalg.inv(torch.eye({m}.shape[0]) * 2 + {m} @ {m}.mT * 0.01)",
             f"torch.linalg.solve(torch.eye({m}.shape[0]) * 3 + {m} @ {m}.mT * 0.01, {m})"] \
        if _small(t) else []
    return f"{v} = " + rng.choice(grows + [
        f"F.conv1d({x3}, torch.ones(2, {c3}, {k}), padding='same')",
        f"F.conv1d({x3}, torch.ones(2, {c3}, {k}), stride=2, padding={k // 2})",
        f"F.conv1d({x3}, torch.ones({c3}, 1, {k}), groups={c3}, dilation=2, padding=2)",
        f"F.conv2d({x4}, torch.ones(3, {c4}, 1, {k}), padding='valid')",
        f"F.conv2d({x4}, torch.ones(1, {c4}, {k}, {k}), stride=(1, 2), padding=1)",
        f"F.conv_transpose1d({x3}, torch.ones({c3}, 2, {k}), stride=2)",
        f"F.conv_transpose2d({x4}, torch.ones({c4}, 1, {k}, 1), stride=2, output_padding=1)",
        f"F.scaled_dot_product_attention({x4}, {x4}, {x4})",
        f"F.scaled_dot_product_attention({x4}, {x4}, {x4}, is_causal=True)",
        f"F.scaled_dot_product_attention({x3}, {x3}[:, :2], {x3}[:, :2])",
        f"F.scaled_dot_product_attention({x4}, {x4}, {x4}, attn_mask=torch.ones("
        f"{x4}.shape[-2], {x4}.shape[-2], dtype=torch.bool).tril())",
        f"F.embedding_bag(torch.arange({m}.shape[0] * 2) % 3, torch.arange(6.0).reshape(3, 2), "
        f"torch.arange(0, {m}.shape[0] * 2, 2), mode='{rng.choice(['sum', 'mean', 'max'])}')",
        f"torch.linalg.det(torch.eye({m}.shape[-1]) + {m}.mT @ {m} * 0.1)",
        f"torch.linalg.norm({m}, dim=-1)", f"torch.linalg.vector_norm({a}, 3, dim=-1)",
        f"torch.linalg.matrix_norm({m}, 'fro')", f"torch.cdist({m}, {m}[:2])",
        f"torch.linalg.qr({m}).R.abs()" if t.ndim else f"{a} * 1",
        f"torch.linalg.svdvals({m})", f"torch.linalg.eigvalsh({m}.mT @ {m})",
        f"torch.lstm_cell({m}, (torch.zeros({m}.shape[0], 2), torch.zeros({m}.shape[0], 2)), "
        f"torch.ones(8, {m}.shape[1]) * 0.1, torch.ones(8, 2) * 0.1)[0]",
        f"torch.gru_cell({m}, torch.zeros({m}.shape[0], 2), torch.ones(6, {m}.shape[1]) * 0.1, "
        f"torch.ones(6, 2) * 0.1)",
        f"F.batch_norm({x3}, torch.zeros({c3}), torch.ones({c3}))",
        f"F.instance_norm({x3})", f"F.local_response_norm({x3}, 2)",
        f"F.rms_norm({a}, {a}.shape[-1:])", f"F.pairwise_distance({m}, {m}.flip(0))",
        f"F.huber_loss({a}, {a} * 0.5, reduction='sum')",
        f"F.kl_div({a}.log_softmax(-1), {a}.softmax(-1), reduction='batchmean')",
    ])


OPS_KINDS = {f.__name__: f for f in (structured, scatter, cumulative, masked, padmodes,
                                     resample, folds, contract, promote0d, sizeops, layers)}
