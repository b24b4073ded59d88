"""Statement kinds of the long fuzz run (benchmarks/fuzz.py) for rule families the other
grammars reached little (measured by counting the rules a run asks, session 28):

  advindex    advanced indexing: several index tensors (broadcast together, adjacent or
              split by a slice), ``None`` / ``Ellipsis`` / int / bool-mask mixes, index
              tensors from sizes, writes through them (``x[i, j] = ...``, ``index_put_``
              with several indices); negative steps, refused as eager refuses them
  reducedims  reductions over dim lists, with and without keepdim, empty dim lists,
              ``dtype=``, ``correction=``, ``any`` / ``all`` / ``count_nonzero`` / ``norm`` /
              ``logsumexp`` / ``std_mean`` / ``nansum`` / ``sum_to_size``
  nnlayers    norms (layer / group / batch in training / instance with weights), pooling
              with ``ceil_mode`` / ``dilation`` / ``padding`` / indices in 1-3 d and
              ``max_unpool``, convolutions with groups, dilation, 3-d and transposed
              3-d, padding modes of ``nn.Conv`` (reflect / replicate / circular via
              ``F.pad``), losses of the ``losses`` family
  promotion   int / bool / float16 / float64 tensors with each other in ops that promote
              (``cat``, ``where``, ``addcmul``, ``lerp``, comparisons, ``true_divide``), in
              place ops whose result type must cast back into the destination
  viewwrite2  in-place ops on views the other grammars do not make: ``diagonal``, ``mT``,
              ``swapaxes``, ``movedim``, ``unflatten``, ``tensor_split``, ``split`` with sizes,
              ``squeeze_`` / ``unsqueeze_`` / ``swapdims_`` on clones, ``as_strided`` reads
  views2      view ops the other grammars do not reach: ``swapaxes``, ``movedim`` of lists,
              ``tile``, ``broadcast_to``, ``ravel``, ``reshape_as``, ``h/v/dsplit``,
              ``split`` with sizes, ``squeeze`` of dim tuples, ``adjoint``, ``view(dtype)``
  flow        control flow on sizes and on data: branches on ``x.sum() > 0`` (a data
              decision), ``torch.cond`` on data and on sizes with shape-changing sides,
              ``while_loop`` counted by data, Python loops over ``range`` of a size
"""

from __future__ import annotations

import torch

from tests.fuzz.grammar import _t
from tests.fuzz.grammar_ops import _nd

WL = "torch._higher_order_ops.while_loop"


def advindex(rng, env, v):
    a = _t(env, rng, 2)
    if a is None:
        return None
    t = env[a]
    n0, n1 = f"{a}.shape[0]", f"{a}.shape[1]"
    i0 = rng.choice([f"torch.arange({n0})", f"torch.arange({n0}).flip(0)",
                     f"torch.arange({n0}) % 2", f"torch.zeros({n0}, dtype=torch.long)"])
    i1 = rng.choice([f"torch.arange({n1}) % max({n0}, 1)", f"torch.arange({n1})",
                     f"torch.zeros(1, dtype=torch.long)", f"torch.tensor([0, -1])"])
    j = f"(torch.arange({n1}) % max({n0}, 1))"
    forms = [
        f"{v} = {a}[{i0}, :]", f"{v} = {a}[:, {i1}]", f"{v} = {a}[{i0}[:, None], {i1}]",
        f"{v} = {a}[{j}, torch.arange({n1})]",
        f"{v} = {a}[None, {i0}]", f"{v} = {a}[..., {i1}]", f"{v} = {a}[{i0}, None, ...]",
        f"{v} = {a}[{i0}, ..., None]", f"{v} = {a}[0, {i1}]", f"{v} = {a}[-1, ..., {i1}]",
        f"{v} = {a}[{a}.sum(tuple(range(1, {a}.ndim))) > 0, ...]",
        f"{v} = {a}[:, {a}[0] > 0]" if t.ndim == 2 else f"{v} = {a}[:, {a}[0, :, 0] > 0]",
        f"{v} = {a}[{i0}][:, {i1}]",
        f"{v} = {a}[torch.tensor([[0, 0], [-1, -1]]), torch.tensor([[0, -1], [0, -1]])]",
        f"{v} = {a}[{i0}.reshape(-1, 1), torch.arange(min({n1}, 2))]",
        # writes through several indices
        f"{v} = {a}.clone()\n{v}[{j}, torch.arange({n1})] = 0.0",
        f"{v} = {a}.clone()\n{v}[{i0}, 0] += 1",
        f"{v} = {a}.clone()\n{v}.index_put_(({i0}, torch.zeros({n0}, dtype=torch.long)), "
        f"torch.tensor(2.0), accumulate=True)",
        f"{v} = {a}.clone()\n{v}[..., {i1}] = {a}[..., {i1}] * 2",
        f"{v} = {a}.clone()\n{v}[{v} > 0] *= -1",
        # indices read from data, lists and tuples of ints, broadcast values
        f"{v} = {a}[{a}[:, 0].argsort()]", f"{v} = {a}[:, {a}[0].argmax() % {n1}]"
        if t.shape[0] else f"{v} = {a}[[0, -1]]" if t.shape[0] else f"{v} = {a} * 1",
        f"{v} = {a}[[0, -1]]" if t.shape[0] else f"{v} = {a}[[]]",
        f"{v} = {a}[(0, -1),]" if t.shape[0] else f"{v} = {a}[:, None]",
        f"{v} = {a}.clone()\n{v}[{i0}] = {a}[:1]",
        f"{v} = {a}.clone()\n{v}.index_put_((torch.zeros({n0}, dtype=torch.long),), {a}, "
        f"accumulate=True)",
        # negative steps: eager raises ValueError; the except side runs
        f"try:\n    {v} = {a}[::-1]\nexcept ValueError:\n    {v} = {a}.flip(0)",
        f"try:\n    {v} = {a}[:, ::-2]\nexcept ValueError:\n    {v} = {a}.flip(1)[:, ::2]",
    ]
    if t.ndim >= 3:
        n2 = f"{a}.shape[2]"
        forms += [f"{v} = {a}[{i0}, :, torch.arange({n2}) % 1]" if t.shape[0] == t.shape[2]
                  else f"{v} = {a}[:, :, torch.arange({n2}).flip(0)]",
                  f"{v} = {a}[:, {i1}, None, ..., 0]",
                  f"{v} = {a}[torch.zeros(1, dtype=torch.long), :, torch.zeros(1, "
                  f"dtype=torch.long)]"]
    return rng.choice(forms)


def reducedims(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    nd = env[a].ndim
    dims = sorted(rng.sample(range(nd), rng.randint(1, nd)))
    if rng.random() < 0.3:
        dims = [d - nd for d in dims]
    ds = f"({', '.join(map(str, dims))},)"
    k = rng.random() < 0.5
    return f"{v} = " + rng.choice([
        f"{a}.sum({ds}, keepdim={k})", f"{a}.mean({ds}, keepdim={k})",
        f"{a}.amax({ds}, keepdim={k})", f"{a}.amin(dim={ds})", f"{a}.sum(dim=[])",
        f"{a}.mean(dim=[])" if nd else f"{a}.mean()",
        f"{a}.sum({ds}, dtype=torch.float64)", f"({a} > 0).sum({ds}, keepdim={k})",
        f"({a} * 3).long().sum({ds})", f"({a} * 3).int().prod({dims[0]}, keepdim={k})",
        f"{a}.var({ds}, correction=0, keepdim={k})", f"{a}.std({ds}, unbiased=False)",
        f"{a}.var({dims[0]}, unbiased=False)", f"{a}.std()", f"{a}.var()",
        f"torch.std_mean({a}, {ds}, correction=0, keepdim={k})[0]",
        f"torch.var_mean({a}, {ds}, correction=0)[1]",
        f"({a} > 0).any({ds}, keepdim={k})", f"({a} > 0).all({dims[0]})",
        f"({a} > 0).any()", f"{a}.all()", f"torch.count_nonzero({a}, {ds})",
        f"{a}.norm(2, {ds}, keepdim={k})", f"{a}.norm(dim={ds})", f"{a}.norm()",
        f"torch.linalg.vector_norm({a}, 1, {ds}, keepdim={k})",
        f"{a}.logsumexp({ds}, keepdim={k})", f"{a}.nansum({ds})",
        f"{a}.nanmean({ds}, keepdim={k})", f"{a}.argmax({dims[0]}, keepdim={k})",
        f"{a}.argmin()", f"{a}.sum_to_size(*[1 if i in {dims} else s for i, s in "
        f"enumerate({a}.shape)])",
        f"{a}.contiguous().nanmedian()", f"{a}.argsort({dims[0]}, stable=True)",
    ])


def nnlayers(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    n = rng.randint(1, 3)
    x = _nd(a, n + 2, t.ndim)
    x3, x4 = _nd(a, 3, t.ndim), _nd(a, 4, t.ndim)
    c = f"{x}.shape[1]"
    k = rng.choice([1, 2, 3])
    ceil = rng.random() < 0.5
    dil = rng.choice([1, 1, 2])
    pad = rng.choice([0, k // 2])
    mp = f"F.max_pool{n}d({x}, {k}, {rng.choice([1, 2])}, {pad}, {dil}, ceil_mode={ceil}"
    m = _nd(a, 2, t.ndim) if t.ndim != 2 else a
    pooling = [
        mp + ")", mp + ", return_indices=True)[1]",
        f"F.avg_pool{n}d({x}, {k}, {rng.choice([1, 2])}, {pad}, ceil_mode={ceil}, "
        f"count_include_pad={rng.random() < 0.5})",
        f"F.avg_pool2d({x4}, {k}, 1, {pad}, divisor_override=2)",
        f"F.adaptive_max_pool{n}d({x}, {rng.choice([1, 2, 3])})",
        f"F.adaptive_avg_pool{n}d({x}, {rng.choice([1, 2])})",
        f"F.adaptive_max_pool1d({x3}, 2, return_indices=True)[1]",
        f"F.max_unpool1d(*F.max_pool1d({x3}, 2, return_indices=True), 2)",
        f"F.max_unpool2d(*F.max_pool2d({x4}, (1, 2), return_indices=True), (1, 2))",
        f"F.lp_pool2d({x4}, 2, {k}, ceil_mode={ceil})",
    ]
    conv = [
        f"F.conv{n}d({x}, torch.ones(2, {c}, *[{k}] * {n}), stride={rng.choice([1, 2])}, "
        f"padding={pad}, dilation={dil})",
        f"F.conv{n}d({x}.repeat(1, 2, *[1] * {n}), torch.ones(4, {c}, *[{k}] * {n}), "
        f"groups=2, padding='same')",
        f"F.conv{n}d({x}, torch.ones({c}, 1, *[{k}] * {n}), groups={c}, padding='valid')",
        f"F.conv_transpose{n}d({x}, torch.ones({c}, 2, *[{k}] * {n}), stride=2, "
        f"padding={pad}, dilation={dil})",
        f"F.conv_transpose{n}d({x}.repeat(1, 2, *[1] * {n}), torch.ones(2 * {c}, 1, "
        f"*[{k}] * {n}), groups=2, output_padding=1, stride=2)",
        f"F.conv{n}d(F.pad({x}, [{k // 2}] * {2 * n}, mode='"
        f"{rng.choice(['reflect', 'replicate', 'circular'])}'), torch.ones(1, {c}, "
        f"*[{k}] * {n}))",
    ]
    norms = [
        f"F.layer_norm({a}, {a}.shape[-1:], torch.ones({a}.shape[-1]), "
        f"torch.zeros({a}.shape[-1]))",
        f"F.group_norm({x3}.repeat(1, 2, 1), 2, torch.ones(2 * {x3}.shape[1]))",
        f"F.batch_norm({x}, None, None, training=True)",
        f"F.batch_norm({x}, torch.zeros({c}), torch.ones({c}), torch.ones({c}), "
        f"torch.zeros({c}), False)",
        f"F.instance_norm({x}, torch.zeros({c}), torch.ones({c}), use_input_stats=True)",
        f"F.instance_norm({x}, weight=torch.ones({c}), bias=torch.zeros({c}))",
        f"F.rms_norm({a}, ({a}.shape[-1],), torch.ones({a}.shape[-1]), eps=1e-3)",
        f"{a}.renorm(2, 0, 1.0)",
    ]
    losses = [
        f"F.l1_loss({a}, {a}.flip(0))", f"F.smooth_l1_loss({a}, {a} * 0.5, beta=0.5)",
        f"F.binary_cross_entropy({a}.sigmoid(), ({a} > 0).float())",
        f"F.binary_cross_entropy_with_logits({a}, ({a} > 0).float(), reduction='sum')",
        f"F.soft_margin_loss({a}, {a}.sign())", f"F.poisson_nll_loss({a}, {a}.exp())",
        f"F.margin_ranking_loss({a}, {a}.flip(0), {a}.sign())",
        f"F.hinge_embedding_loss({a}, {a}.sign(), reduction='none')",
        f"F.cosine_embedding_loss({m}, {m}.flip(0), torch.ones({m}.shape[0]))",
        f"F.triplet_margin_loss({m}, {m}.flip(0), {m} * 2)",
        # (reduced over an empty batch, both margin losses return unset memory in eager:
        # nothing to compare with; unreduced, an empty batch is an empty result)
        f"F.multi_margin_loss({m}, torch.zeros({m}.shape[0], dtype=torch.long), "
        f"reduction='none')",
        f"F.multilabel_margin_loss({m}, torch.zeros_like({m}, dtype=torch.long), "
        f"reduction='none')",
        f"F.nll_loss({x4}.log_softmax(1), torch.zeros({x4}.shape[0], *{x4}.shape[2:], "
        f"dtype=torch.long))",
    ]
    return f"{v} = " + rng.choice(pooling + conv + norms + losses)


def promotion(rng, env, v):
    a = _t(env, rng, 0, True)
    if a is None:
        return None
    i, b = f"({a} * 3).long()", f"({a} > 0)"
    h, d = f"{a}.half()", f"{a}.double()"
    i8 = f"({a} * 3).to(torch.int8)"
    x, y = rng.sample([a, i, b, h, d, i8], 2)
    w = v + "a"
    return rng.choice([
        f"{v} = torch.cat([{x}.flatten(), {y}.flatten()])",
        f"{v} = torch.stack([{x}, {y}])", f"{v} = torch.where({b}, {x}, {y})",
        f"{v} = torch.where({b}, {x}, 2.5)", f"{v} = torch.where({b}, 1, {y})",
        f"{v} = torch.addcmul({x}, {y}, {a}, value=2)",
        f"{v} = torch.lerp({h}, {a}.half(), 0.5)", f"{v} = {x} == {y}", f"{v} = {x} < {y}",
        f"{v} = torch.true_divide({x}, 2)", f"{v} = {x}.true_divide({y}.float() + 3)",
        f"{v} = torch.maximum({x}, {y})", f"{v} = torch.minimum({x}, {y}.to({x}.dtype))",
        f"{v} = {x} + {y}", f"{v} = {x} * {y} - 1", f"{v} = {x}.float() @ {y}.float()"
        if env[a].ndim == 1 else f"{v} = {x} * 2",
        f"{v} = torch.clamp({i}, min={a}.min())" if env[a].numel() else f"{v} = {i}",
        f"{v} = {x}.type_as({y})", f"{v} = {x}.to({y})", f"{v} = {x}.sum() + {y}",
        # in place: the result type must cast back into the destination
        f"{v} = {d}.clone()\n{v}.add_({x})", f"{v} = {i}.clone()\n{v}.mul_({b})",
        f"{v} = {h}.clone()\n{v}.sub_({x})", f"{v} = {i}.clone()\n{v}.add_({a})",
        f"{v} = {a}.clone()\n{w} = {v}[..., :1]\n{w}.add_({i}[..., :1])" if env[a].ndim
        else f"{v} = {a} + {i}",
        f"{v} = {b}.clone()\n{v}.logical_and_({x})", f"{v} = {i}.clone()\n{v} //= 2",
        f"{v} = {i}.clone()\n{v}.div_(2, rounding_mode='floor')",
    ])


def viewwrite2(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    nd = t.ndim
    w = v + "a"
    c = f"{v} = {a}.clone()\n"
    d = rng.randrange(nd)
    s = f"{a}.shape[{d}]"
    forms = [
        c + f"{w} = {v}.tensor_split(2, {d})[0]\n{w}.mul_(-1)",
        c + f"{w} = {v}.split([{s} // 2, {s} - {s} // 2], {d})[1]\n{w}.add_(1)",
        c + f"{w} = {v}.unflatten({d}, (1, {s}))\n{w}.sub_(2)",
        c + f"{w} = {v}.movedim({d}, 0)\n{w}[:1] = 0.0",
        c + f"{v}.unsqueeze_({d})\n{v}.squeeze_({d})",
        c + f"{v}.squeeze_()", c + f"{v}.unsqueeze_(-1).mul_(2)",
        c + f"{w} = {v}.view_as({v})\n{w}.clamp_(-0.5, 0.5)",
        c + f"{w} = {v}.ravel()\n{w}[::2] = 1.0",
        c + f"{w} = {v}.as_strided(({v}.numel(),), (1,))\n{w} = {w} * 2",
        # writes to overlapping views: eager raises (not at every size); except runs
        c + f"try:\n    {v}.expand(2, *{v}.shape).add_(1)\nexcept RuntimeError:\n"
            f"    {v} = {v} * 2",
        c + f"try:\n    {w} = {v}.unfold({d}, 1, 1)\n    {w}.mul_(3)\nexcept RuntimeError:\n"
            f"    {v} = {v} - 1",
        c + f"try:\n    {v}.add_({v}.flip({d}))\nexcept RuntimeError:\n    {v} = {v} + 5",
    ]
    if nd >= 2:
        forms += [
            c + f"{v}.diagonal().zero_()", c + f"{v}.diagonal(1, 0, 1).add_(3)",
            c + f"{w} = {v}.mT\n{w}.mul_(2)", c + f"{w} = {v}.swapaxes(0, 1)\n{w}[0] = -1.0",
            c + f"{v}.swapdims_(0, -1)", c + f"{v}.transpose_(0, 1)",
            c + f"{w} = {v}[:, 1::2]\n{w}.fill_(0.5)",
            c + f"{w} = {v}.select(1, -1)\n{w}.copy_({v}[:, 0])",
            c + f"{v}.fill_diagonal_(2.0)" if nd == 2 else c + f"{v}.tril_()",
            c + f"{v}.tril_(-1)" if nd == 2 else c + f"{v}.triu_(1)",
        ]
    return rng.choice(forms)


def views2(rng, env, v):
    a = _t(env, rng, 1)
    if a is None:
        return None
    t = env[a]
    nd = t.ndim
    d = rng.randrange(nd)
    s = f"{a}.shape[{d}]"
    perm = list(range(nd))
    rng.shuffle(perm)
    forms = [
        f"{a}.swapaxes(0, -1)", f"{a}.movedim({tuple(range(nd))}, {tuple(perm)})",
        f"{a}.tile((2,))", f"{a}.tile((2, 1, 1))", f"{a}.broadcast_to((2, *{a}.shape))",
        f"{a}.ravel()", f"{a}.reshape_as({a}.flatten()[None])" if nd != 2
        else f"{a}.reshape_as({a}.mT.contiguous())",
        f"{a}.split([1, {s} - 1], {d})[1]", f"torch.tensor_split({a}, 3, {d})[-1]",
        f"torch.tensor_split({a}, [1, {s} // 2], {d})[1]",
        f"{a}.squeeze(({d}, -1))", f"{a}.unflatten(-1, (1, -1))", f"{a}.adjoint()"
        if nd >= 2 else f"{a}.flip(0)",
        f"{a}.unsafe_split(max({s}, 1), {d})[0]",
        f"{a}.narrow_copy({d}, 0, {s} // 2)", f"{a}.view(torch.int32)" if
        t.dtype == torch.float32 else f"{a}.ravel()",
        f"{a}.contiguous().view(torch.uint8).sum(-1)" if t.dtype.is_floating_point
        else f"{a}.ravel()",
    ]
    if nd >= 2:
        forms += [f"torch.hsplit({a}, [1])[1]", f"torch.vsplit({a}, [{a}.shape[0] // 2])[0]",
                  f"{a}.T" if nd == 2 else f"{a}.mT", f"torch.fliplr({a})", f"torch.flipud({a})"]
    if nd >= 3:
        forms += [f"torch.dsplit({a}, [1])[0]", f"torch.dstack([{a}, {a}])"]
    return f"{v} = " + rng.choice(forms)


def flow(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    s = f"{a}.shape[0]"
    dpred = rng.choice([f"{a}.sum() > 0", f"{a}.amax() > 0.5" if env[a].numel()
                        else f"{a}.sum() < 1", f"({a} > 0).any()", f"{a}.mean() < 0"])
    spred = rng.choice([f"{s} > 2", f"{a}.numel() % 2 == 0", f"{s} == 1"])
    forms = [
        f"if {dpred}:\n    {v} = {a} * 2\nelse:\n    {v} = {a} - 1",
        f"{v} = torch.cond({dpred}, lambda t: t * 2, lambda t: t.flip(0), ({a},))",
        f"{v} = torch.cond({dpred}, lambda t: t.sum(0), lambda t: t.amax(0), ({a},))"
        if env[a].shape[0] else f"{v} = {a} + 1",
        f"{v} = torch.cond({spred}, lambda t: t[1:], lambda t: t[:1], ({a},))",
        f"{v} = torch.cond({spred}, lambda t: t.sum(), lambda t: t.mean(), ({a},))",
        f"if {spred}:\n    {v} = {a}.sum(0)\nelse:\n    {v} = {a}.flatten()",
        f"if {spred}:\n    {v} = {a}[:2]\nelse:\n    {v} = {a}.reshape(-1)",
        f"{v} = {WL}(lambda i, t: (i < 3) & (t.sum() < 100), lambda i, t: (i + 1, t * 2), "
        f"(torch.tensor(0), {a}))[1]",
        f"{v} = {a}.clone()\nfor _i in range(min({s}, 3)):\n    {v}[_i] = {v}[_i] * _i",
        f"{v} = sum({a}[i] for i in range(min({s}, 2))) + {a}.sum()" if env[a].ndim == 1
        else f"{v} = {a}.sum(0)",
        f"{v} = torch.stack([r.sum() for r in {a}]) if {s} else {a}.sum(0)",
        f"{v} = {a}.flatten()[0] if {a}.numel() else {a}.sum()",
        f"{v} = torch.ones(3) * ({a}.sum().item() > 0)",
    ]
    return rng.choice(forms)


REACH_KINDS = {f.__name__: f for f in (advindex, reducedims, nnlayers, promotion, viewwrite2,
                                       views2, flow)}
