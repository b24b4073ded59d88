"""Statement kinds of the long fuzz run (benchmarks/fuzz.py ``--kinds outside``) for
constructs that suites written outside the project use and the other grammars write in few
combinations (session 38):

  advidx      advanced indexing with several index tensors made from sizes (broadcast
              against each other, negative, mixed with slices, ``...`` and ``None``),
              boolean masks over leading dims, ``index_put_`` (accumulate or not, a
              broadcast value), ``scatter`` / ``scatter_add`` / ``scatter_reduce`` /
              ``gather`` / ``take_along_dim`` / ``take`` with index ranges from sizes
  oobidx      indices made from another input's sizes that leave the range at some sizes
              (eager raises IndexError: the program must too, never clamp), non-adjacent
              advanced indices, masks over inner dims, int32 and 0-d index tensors, writes
              through them, ``topk`` / ``kthvalue`` with k past the size
  emptyred    reductions with ``keepdim`` and negative dims over dims that can be 0:
              ``amax`` / ``argmax`` / ``max(d)`` / ``median(d)`` / ``kthvalue`` raise like
              eager there, ``sum`` / ``prod`` / ``logsumexp`` / ``any`` / ``all`` give their
              identities; the structured results by ``.values`` / ``.indices`` and unpacking
  sortk       ``sort`` / ``topk`` / ``kthvalue`` / ``argsort`` with k from sizes, on inputs
              and on tensors built from sizes and constants inside forward
  viewwrite   ``unfold`` / ``as_strided`` / ``expand`` / ``movedim`` / ``diagonal`` views of
              a clone, written in place through the view and read back through the base
  wheres      ``torch.where`` with Python and 0-d scalars broadcast (sizes as values),
              ``Tensor.where``, a 0-d condition, the one-argument form
  rinter      ``repeat_interleave`` by tensor repeats (sizes, ``arange``, 0-d), with
              ``output_size`` and a dim
  dtypes      dtype changes: ``to(other)``, ``type_as``, ``to(dtype=, copy=True)``, int8 /
              bool / float16 / bfloat16 arithmetic and reductions, ``view(dtype)`` of the
              same element size
  pyflow      Python control flow on sizes: ``if`` / ``elif`` chains, ``for i in
              range(x.shape[0] % 4)`` reading row ``i``, ``while`` counted down by a size,
              comprehensions stacked, ``try`` around an op that raises at some sizes
  hopsize     ``torch.cond`` whose predicate mixes a size with data and whose branches read
              sizes, ``while_loop`` bounded by a size

Each is deterministic per seed (the rng the engine hands it).
"""

from __future__ import annotations

from tests.fuzz.grammar import _t
from tests.fuzz.grammar_cross import _bsize, _two
from tests.fuzz.grammar_gaps import HOP


def _shape(rng, env, a):
    """(a dim of `a`, negative half the time, its size source, its example size)."""
    t = env[a]
    d = rng.randrange(t.ndim)
    dd = d - t.ndim if rng.random() < 0.5 else d
    return dd, f"{a}.shape[{dd}]", t.shape[d]


def advidx(rng, env, v):
    a, b = _two(rng, env, floating=True)
    if a is None:
        return None
    t = env[a]
    n = f"{a}.shape[0]"
    m, _ = _bsize(rng, env, b)
    i = "(" + rng.choice([f"torch.arange({n})", f"torch.arange({n}).flip(0)",
                    f"-1 - torch.arange({n})", f"torch.arange({n}) % max({m}, 1)",
                    f"torch.arange(min({n}, {m}))", f"torch.arange({n} // 2) * 2",
                    f"{a}.reshape({n}, -1).sum(-1).argsort()"]) + ")"
    w = v + "a"
    forms = [f"{v} = {a}[{i}]", f"{v} = {a}[{i}, ...]", f"{v} = {a}[{i}][:, None]",
             f"{v} = {a}[{i}].sum(0, keepdim=True)",
             f"{v} = {a}[{a}.reshape({n}, -1).sum(-1) > 0]",
             f"{v} = {a}.clone()\n{v}[{i}] = 0.5",
             f"{v} = {a}.clone()\n{v}.index_put_(({i},), torch.tensor(2.0), accumulate=True)",
             f"{v} = {a}.clone()\n{v}[{i}] += 1",
             f"{v} = {a}.clone()\n{v}[{a} > 0] = -{m} * 1.0",
             f"{v} = {a}.flatten().take(torch.arange({a}.numel()) % max({m}, 1))"
             if t.numel() else f"{v} = {a} * 1",
             f"{v} = torch.zeros({n} + 1).index_add(0, {i} % ({n} + 1), "
             f"torch.ones({i}.shape[0]))"]
    if t.ndim >= 2:
        k = f"{a}.shape[1]"
        j = "(" + rng.choice([f"torch.arange({k})", f"torch.arange({k}).flip(0)",
                              f"torch.arange({k}) % max({m}, 1)", f"-1 - torch.arange({k})"]) + ")"
        forms += [f"{v} = {a}[torch.arange({n})[:, None], {j}[None, :]]",
                  f"{v} = {a}[:, {j}]", f"{v} = {a}[..., {j}, :]" if t.ndim >= 3
                  else f"{v} = {a}[..., {j}]",
                  f"{v} = {a}[torch.arange(min({n}, {k})), torch.arange(min({n}, {k}))]",
                  f"{v} = {a}[{i}][:, {j}]",
                  f"{v} = {a}.clone()\n{v}[:, {j}] = {a}[:, :1] * 2",
                  f"{v} = {a}.clone()\n{v}[{i}[:, None], {j}] = 3.0",
                  f"{v} = {a}.clone()\n{v}.index_put_((torch.arange(min({n}, {k})), "
                  f"torch.arange(min({n}, {k}))), torch.tensor(1.0), accumulate=True)",
                  f"{v} = {a}.gather(1, torch.arange({k}).expand({n}, {k}).flip(1)"
                  f"{'[..., None].expand_as(' + a + ')' if t.ndim >= 3 else ''})"
                  if t.ndim <= 3 else f"{v} = {a} * 1",
                  f"{v} = torch.take_along_dim({a}, {a}.argmax(1, keepdim=True), 1)"
                  if t.shape[1] else f"{v} = {a}[:, :0]",
                  f"{v} = {a}.scatter(1, {a}.argsort(1), {a})",
                  f"{v} = {a}.scatter_add(1, ({a}.argsort(1) + 1) % {k}, {a})",
                  f"{v} = {a}.scatter_reduce(1, {a}.argsort(1) % max(({k} + 1) // 2, 1), {a}, "
                  f"'{rng.choice(['amax', 'amin', 'mean', 'prod', 'sum'])}', "
                  f"include_self={rng.random() < 0.5})",
                  f"{v} = {a}[{a}.flatten(1).sum(1) > 0, :1]"]
    return rng.choice(forms)


def oobidx(rng, env, v):
    """Indices made from another input's sizes, out of range at some sizes (eager raises
    IndexError / RuntimeError there: the program must too, never clamp or wrap), non-
    adjacent advanced indices (their dims go first), masks over inner dims, int32 and 0-d
    index tensors, writes through such indices."""
    a, b = _two(rng, env, floating=True)
    if a is None:
        return None
    t = env[a]
    m, _ = _bsize(rng, env, b)
    n = f"{a}.shape[0]"
    d = rng.randrange(t.ndim)
    sd = f"{a}.shape[{d}]"
    idx = rng.choice([f"torch.arange({m})", f"torch.tensor([{m} - 1])", f"torch.tensor({m})",
                      f"torch.arange({m}, dtype=torch.int32)", f"-torch.arange({m}) - 1",
                      f"torch.tensor([0, {m} - 1, {sd} - 1])"])
    idx = f"({idx})"
    pre = ":, " * d
    forms = [f"{v} = {a}[{pre}{idx}]", f"{v} = {a}.index_select({d}, {idx}.long().flatten())",
             f"{v} = {a}.flatten().take({idx}.long())",
             f"{v} = {a}.clone()\n{v}[{pre}{idx}] = -2.0",
             f"{v} = {a}.clone()\n{v}.index_put_(({idx}.long(),), torch.tensor(1.5), "
             f"accumulate=True)",
             f"{v} = {a}.clone()\n{v}.index_fill_({d}, {idx}.long().flatten(), 0.25)",
             f"{v} = {a}.clone()\n{v}.index_add_({d}, {idx}.long().flatten() % max({sd}, 1), "
             f"{a}.narrow({d}, 0, 1).expand(*[{idx}.numel() if i == {d} else s for i, s in "
             f"enumerate({a}.shape)]))" if t.shape[d] else f"{v} = {a} * 1",
             f"{v} = {a}.topk(min({m}, {sd} + 1), {d}).values",
             f"{v} = {a}.kthvalue(max({m}, 1), {d}).values"]
    if t.ndim >= 2:
        forms += [f"{v} = {a}[torch.arange({n}), ..., torch.arange({n}) % max({a}.shape[-1], 1)]",
                  f"{v} = {a}[:, {a}.sum(0).flatten(1).sum(-1) > 0]"
                  if t.ndim == 2 else f"{v} = {a}[:, {a}[0] > 0]",
                  f"{v} = {a}.clone()\n{v}[:, {a}[0] > 0] = {m} * 1.0",
                  f"{v} = {a}[{idx}.long() % max({n}, 1), :, None]" if t.shape[0] else
                  f"{v} = {a}[:, None]",
                  f"{v} = {a}.gather(1, torch.zeros_like({a}, dtype=torch.long) + ({m} - 1))",
                  f"{v} = {a}.clone()\n{v}.scatter_(1, torch.zeros_like({a}, dtype=torch.long)"
                  f" + ({m} - 1), 7.0)"]
    return rng.choice(forms)


def emptyred(rng, env, v):
    a = _t(env, rng, 1)
    if a is None:
        return None
    t = env[a]
    d, s, _ = _shape(rng, env, a)
    kd = rng.random() < 0.5
    fa = f"{a}.float()" if not t.is_floating_point() else a
    w = v + "a"
    return rng.choice([
        f"{v} = {fa}.amax({d}, keepdim={kd})", f"{v} = {fa}.amin(({d},), keepdim={kd})",
        f"{v} = {a}.argmax({d}, keepdim={kd})", f"{v} = {a}.argmin({d})",
        f"{v}, {w} = {fa}.max({d}, keepdim={kd})", f"{v} = {fa}.min({d}, {kd}).values",
        f"{v} = {fa}.max({d}).indices", f"{v} = {fa}.median({d}, keepdim={kd}).values",
        f"{v} = {fa}.kthvalue(1, {d}, keepdim={kd})[0]",
        f"{v} = {fa}.sum({d}, keepdim={kd})", f"{v} = {fa}.prod({d}, keepdim={kd})",
        f"{v} = {fa}.logsumexp({d}, keepdim={kd})", f"{v} = {a}.any({d}, keepdim={kd})",
        f"{v} = {a}.all({d})", f"{v} = {fa}.mean(({d},), keepdim={kd})",
        f"{v} = {fa}.nansum({d})", f"{v} = {fa}.std({d}, keepdim={kd})",
        f"{v} = {fa}.cummax({d}).values", f"{v} = {fa}.cummin({d})[1]",
        f"{v} = {fa}.amax()", f"{v} = {fa}.max()", f"{v} = {a}.argmax()",
        f"{v} = torch.aminmax({fa}, dim={d}, keepdim={kd}).max",
        f"{v} = {fa}.norm(dim={d}, keepdim={kd})",
        f"{v} = {fa}.amax({d}) if {s} > 0 else {fa}.sum({d})",
        f"{v} = {fa}.max({d}, keepdim=True).values - {fa}.mean({d}, keepdim=True)",
        f"{v} = {fa}.softmax({d}).amax({d}, keepdim={kd})",
        f"{v} = {fa}.count_nonzero({d})",
    ])


def sortk(rng, env, v):
    a, b = _two(rng, env, floating=None)
    if a is None:
        return None
    d, s, _ = _shape(rng, env, a)
    m, _ = _bsize(rng, env, b)
    built = rng.choice([a, f"torch.arange({s}).flip(0).float()",
                        f"torch.tensor([{s}, {m}, 3, {s} - {m}]).float()",
                        f"(torch.arange({m}) * 7 % 5).float()",
                        f"torch.tensor([2.0, -1.0, 0.5])[:{m}]"])
    dd = d if built == a else 0
    ss = s if built == a else f"{built}.shape[0]"
    k = rng.choice([f"min({m}, {ss})", f"{ss} // 2", f"min(2, {ss})", f"{ss}",
                    f"max({ss} - 1, 0)"])
    w = v + "a"
    return rng.choice([
        f"{v}, {w} = torch.sort({built}, {dd}, descending={rng.random() < 0.5})",
        f"{v} = {built}.sort(dim={dd}, stable=True).indices",
        f"{v} = {built}.topk({k}, {dd}).values",
        f"{v}, {w} = torch.topk({built}, {k}, dim={dd}, largest={rng.random() < 0.5})",
        f"{v} = {built}.topk({k}, {dd}, sorted=True).indices.float()",
        f"{v} = {built}.argsort({dd}, descending=True)",
        f"{v} = {built}.kthvalue(max({k}, 1), {dd}).values",
        f"{v} = {built}.msort()" if built != a else f"{v} = {built}.sort({dd})[0]",
        f"{v} = {built}.topk({k}, {dd}).values.sum() + {ss}",
        f"_t{v} = {built}.sort({dd}, descending=True)\n{v} = _t{v}.values * 2\n"
        f"{w} = _t{v}[1]",
        f"{v} = torch.gather({built}, {dd}, {built}.argsort({dd}))",
    ])


def viewwrite(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    d, s, _ = _shape(rng, env, a)
    y = f"{v}a"
    head = f"{v} = {a}.clone()\n"
    n = f"{v}.numel()"
    forms = [
        f"{y} = {v}.unfold({d}, min(2, {s}), 1)\n{y}.mul_(2)",
        f"{y} = {v}.unfold({d}, 1, 2)\n{y}[..., 0] = -1.0",
        f"{y} = {v}.unfold({d}, min(2, {s}), 2).sum(-1)",
        f"{y} = {v}.flatten().as_strided(({n} // 2, 2), (2, 1))\n{y}[:, 0] = 1.5",
        f"{y} = {v}.flatten().as_strided((max({n} - 1, 0), 2), (1, 1)).sum(-1)",
        f"{y} = {v}.flatten().as_strided(({n},), (1,), 0)\n{y}.add_(1)",
        f"{y} = {v}.expand(2, *{v}.shape)\n{y}.add_(1)",          # eager: overlap, raises
        f"{y} = {v}.expand(2, *{v}.shape)[1]\n{y}.mul_(3)",
        f"{y} = {v}.movedim({d}, 0)\n{y}[:1] = 0.0",
        f"{y} = {v}.swapaxes(0, -1)[..., :1]\n{y}.sub_(2)",
        f"{y} = {v}.unsqueeze({d}).squeeze({d})\n{y}.clamp_(max=0.0)",
        f"{y} = {v}.view_as({v})[..., ::2]\n{y}.neg_()",
        f"{y} = {v}.select({d}, -1)\n{y}.fill_({s})" if t.shape[d % t.ndim]
        else f"{y} = {v}.narrow({d}, 0, 0)\n{y}.fill_(9.0)",
        f"{y} = {v}.split(max({s} // 2, 1), {d})[0]\n{y}.copy_({y} * 4)",
    ]
    if t.ndim >= 2:
        forms += [f"{y} = {v}.diagonal(0, 0, 1)\n{y}.add_({s})",
                  f"{y} = {v}.diagonal(1, -2, -1)\n{y}.zero_()",
                  f"{y} = {v}.mT.unfold(-1, 1, 1)\n{y}.mul_(-1)",
                  f"{y} = {v}.transpose(0, 1).reshape(-1)\n{y}.add_(1)"]   # a copy or a view
    return head + rng.choice(forms)


def wheres(rng, env, v):
    a, b = _two(rng, env, floating=None)
    if a is None:
        return None
    d, s, _ = _shape(rng, env, a)
    m, _ = _bsize(rng, env, b)
    c = rng.choice([f"{a} > 0", f"{a}.float().sum({d}, keepdim=True) > 0",
                    f"torch.tensor({s} > {m})", f"{a}.bool()", f"torch.arange({s}) % 2 == 0"
                    if env[a].ndim == 1 else f"{a}.float() < {m} / 4"])
    x = rng.choice([a, f"{s}", f"{m} / 2", "0.5", "-1", f"torch.tensor({m})",
                    f"torch.tensor({s} * 1.5)", "True"])
    y = rng.choice([a, f"{a}.float()", f"-{m}", "2", f"torch.tensor(-{s})", "float('inf')"])
    return rng.choice([f"{v} = torch.where({c}, {x}, {y})",
                       f"{v} = torch.where({c}, {x}, {y}) * 1",
                       f"{v} = {a}.float().where({c}, {y})",
                       f"{v} = torch.where({c})[0]",
                       f"{v} = torch.where({c}, {a}, {a}.flip({d}))",
                       f"{v} = {a}.masked_fill({c}, {m})",
                       f"{v} = torch.where({c}, {x}, {y}).sum({d}) if {a}.ndim else {a}"])


def rinter(rng, env, v):
    a, b = _two(rng, env, floating=None)
    if a is None:
        return None
    d, s, _ = _shape(rng, env, a)
    m, _ = _bsize(rng, env, b)
    r = rng.choice([f"torch.arange({s}) % 3", f"torch.full(({s},), 2)",
                    f"torch.ones({s}, dtype=torch.long) * ({m} % 3)",
                    f"torch.arange({s}).flip(0)"])
    return rng.choice([
        f"{v} = {a}.repeat_interleave({r}, dim={d})",
        f"{v} = torch.repeat_interleave({a}, torch.tensor({m} % 3 + 1), dim={d})",
        f"{v} = {a}.repeat_interleave({m} % 4, {d}, output_size={s} * ({m} % 4))",
        f"{v} = torch.repeat_interleave(torch.tensor([{s}, {m}, 1]))",
        f"{v} = torch.repeat_interleave({r})",
        f"{v} = {a}.repeat_interleave(torch.full(({s},), 2), dim={d}, "
        f"output_size=2 * {s})",
        f"{v} = {a}.flatten().repeat_interleave(torch.arange({a}.numel()) % 2)",
    ])


def dtypes(rng, env, v):
    a, b = _two(rng, env, floating=None)
    if a is None:
        return None
    m, _ = _bsize(rng, env, b)
    nt = rng.choice(["torch.int8", "torch.bool", "torch.float16", "torch.bfloat16",
                     "torch.int32", "torch.uint8", "torch.float64"])
    return rng.choice([
        f"{v} = {a}.to({b}) + {m}", f"{v} = {a}.type_as({b}) * 2",
        f"{v} = {a}.to(dtype={nt}, copy=True)", f"{v} = ({a} * 40).to(torch.int8) * 5",
        f"{v} = {a}.to(torch.int8) + torch.tensor(127, dtype=torch.int8)",
        f"{v} = {a}.to(torch.float16).sum() * {m}",
        f"{v} = {a}.to(torch.bfloat16).cumsum(0) / 3",
        f"{v} = {a}.to(torch.float16) @ {a}.to(torch.float16).mT" if env[a].ndim >= 2
        else f"{v} = {a}.half() * {a}.half()",
        f"{v} = {a}.bool() & {b}.bool().any()", f"{v} = {a}.bool() ^ True",
        f"{v} = ({a}.to({nt}) > 0).to(torch.int8).sum({a}.ndim - 1)",
        f"{v} = {a}.to(torch.float32).view(torch.int32) & 255",
        f"{v} = {a}.to(torch.int16).view(torch.float16).isfinite()",
        f"{v} = {a}.to({nt}).mean(dtype=torch.float32)",
        f"{v} = {a}.to({nt}).sum(dtype=torch.float64)",
        f"{v} = {a}.to({nt}).to({a}.dtype) - {a}",
        f"{v} = {a}.new_tensor({m}).to({nt}) + {a}.to({nt})",
        f"{v} = torch.tensor({m}, dtype={nt}) * {a}",
    ])


def pyflow(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    d, s, n = _shape(rng, env, a)
    m, _ = _bsize(rng, env, b)
    k = rng.choice([0, 1, 2, 3, n])
    forms = [
        f"if {s} > {k}:\n    {v} = {a}[:{k}] * 2\nelif {s} == {k}:\n    {v} = {a} + 1\n"
        f"else:\n    {v} = {a}.sum({d}, keepdim=True)",
        f"{v} = {a}.clone()\nfor i in range({a}.shape[0] % 4):\n    {v}[i] = {v}[i] * (i + 1)",
        f"{v} = {a}.sum(0) * 0\nfor i in range(min({a}.shape[0], 3)):\n    {v} = {v} + {a}[i]",
        f"{v} = {a}.clone()\n_n{v} = {s}\nwhile _n{v} > 1:\n    _n{v} //= 2\n    "
        f"{v} = {v} * 0.5",
        f"{v} = torch.stack([{a}[i % {a}.shape[0]] for i in range({m} % 3 + 1)])"
        if env[a].shape[0] else f"{v} = {a} * 1",
        f"{v} = torch.cat([{a}[i:i + 1] for i in range(min({s}, 3))] + [{a}[:0]], 0)",
        f"if {a}.numel() == 0:\n    {v} = torch.zeros(1)\nelse:\n    {v} = {a}.float().mean()"
        f".reshape(1)",
        f"{v} = {a} * ({s} if {s} % 2 else -{m})",
        f"if {s} > {m} and {m} > 0:\n    {v} = {a}.narrow({d}, 0, {m})\nelse:\n    {v} = {a}",
        f"try:\n    {v} = {a}.float().amax({d})\nexcept RuntimeError:\n    {v} = {a}.float()"
        f".sum({d})",
        f"try:\n    {v} = torch.ones(2) * (10 // {s})\nexcept ZeroDivisionError:\n"
        f"    {v} = torch.zeros(2)",
        f"try:\n    {v} = {a}.view({m}, -1)\nexcept RuntimeError:\n    {v} = {a}.reshape(-1)",
        f"{v} = sum({a}[i].sum() for i in range({a}.shape[0] % 3)) + torch.zeros(1)",
        f"_l{v} = [s for s in {a}.shape if s > 1]\n{v} = torch.ones(len(_l{v}) + 1)",
    ]
    return rng.choice(forms)


def hopsize(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    d, s, n = _shape(rng, env, a)
    pred = rng.choice([f"{s} > 2", f"({a}.sum() > 0) & ({a}.shape[0] > 1)",
                       f"{a}.numel() % 2 == 0", f"{a}.sum() * {s} > 1"])
    same = rng.choice(["t * t.shape[0]", "t.flip(0) + t.shape[-1]", "t - t.mean()",
                       "t.cumsum(0) / max(t.shape[0], 1)"])
    return rng.choice([
        f"{v} = torch.cond({pred}, lambda t: t * 2, lambda t: {same}, ({a},))",
        # (not ``t.sum(0, keepdim=True).expand_as(t)``: eager's torch.cond, compiled by
        # dynamo, fails on it at t.shape[0] == 0, "expected b_val == 0 when a_val == 0")
        f"{v} = torch.cond({pred}, lambda t: t.cumsum(0) + t.shape[0], "
        f"lambda t: {same}, ({a},))",
        f"{v} = {HOP}.while_loop(lambda i, t: i < min(t.shape[0], 4), "
        f"lambda i, t: (i + 1, t + t.shape[-1]), (torch.tensor(0), {a}))[1]",
        f"{v} = {HOP}.while_loop(lambda i, t: i < {s} % 3, "
        f"lambda i, t: (i + 1, t * 0.5), (torch.tensor(0), {a}.clone()))[1]",
    ])


OUTSIDE_KINDS = {f.__name__: f for f in (advidx, oobidx, emptyred, sortk, viewwrite, wheres, rinter,
                                         dtypes, pyflow, hopsize)}
